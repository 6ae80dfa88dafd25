package io.kstream.spark.read;

import io.kstream.spark.format.TransactionState;
import org.apache.spark.sql.connector.read.InputPartition;

/**
 * One Spark input split: offsets [start, end) of one topic-partition, read from the leader
 * replica dir planned on the driver, with the aborted transactions that read_committed skips
 * (null under read_uncommitted). Serializable; carries no open file.
 */
public final class OffsetRange implements InputPartition {
    public final TopicPartition tp;
    public final String replicaDir;
    public final long start;
    public final long end;
    public final TransactionState transactions;

    public OffsetRange(TopicPartition tp, String replicaDir, long start, long end, TransactionState transactions) {
        this.tp = tp;
        this.replicaDir = replicaDir;
        this.start = start;
        this.end = end;
        this.transactions = transactions;
    }

    @Override
    public String toString() {
        return tp + "[" + start + ", " + end + ")";
    }
}

package io.kstream.spark.stream;

import io.kstream.spark.read.TopicPartition;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.read.InputPartition;

/**
 * One Real-time Mode split: a partition read from {@code start} with no end (the reader
 * follows the high watermark, or the LSO under read_committed). Carries what the reader needs
 * to compute the HW without the metadata snapshot: the lock file and the ISR's replica dirs.
 */
public final class TailRange implements InputPartition {
    public final TopicPartition tp;
    public final long start;
    public final String lockPath;
    public final Map<Integer, String> replicaDirs;
    public final List<Integer> isr;
    public final int leader;

    public TailRange(TopicPartition tp, long start, String lockPath, Map<Integer, String> replicaDirs,
                     List<Integer> isr, int leader) {
        this.tp = tp;
        this.start = start;
        this.lockPath = lockPath;
        this.replicaDirs = replicaDirs;
        this.isr = isr;
        this.leader = leader;
    }

    public String leaderDir() {
        return replicaDirs.get(leader);
    }

    @Override
    public String toString() {
        return tp + "[" + start + ", ...)";
    }
}

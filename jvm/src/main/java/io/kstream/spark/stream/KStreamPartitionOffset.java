package io.kstream.spark.stream;

import io.kstream.spark.read.TopicPartition;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;

/** Where a Real-time Mode reader of one partition is: the offset of its next record. */
public final class KStreamPartitionOffset implements PartitionOffset {
    public final TopicPartition tp;
    public final long nextOffset;

    public KStreamPartitionOffset(TopicPartition tp, long nextOffset) {
        this.tp = tp;
        this.nextOffset = nextOffset;
    }
}

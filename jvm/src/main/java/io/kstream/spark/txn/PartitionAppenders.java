package io.kstream.spark.txn;

import io.kstream.spark.format.MetadataSnapshot;
import io.kstream.spark.log.PartitionAppender;
import io.kstream.spark.read.TopicPartition;
import java.util.HashMap;
import java.util.Map;

/**
 * One {@link PartitionAppender} per partition a sink task or driver writes, made from the
 * cluster's metadata-snapshot.json (leader dir, lock file, leader epoch, the topic's config) with
 * acks=all: a task's rows are fsynced before the driver's decision names them, and markers are
 * fsynced before the decision ends. Not thread-safe.
 */
final class PartitionAppenders implements AutoCloseable {
    private final String clusterDir;
    private MetadataSnapshot snapshot;
    private final Map<TopicPartition, PartitionAppender> open = new HashMap<>();

    PartitionAppenders(String clusterDir) {
        this.clusterDir = clusterDir;
    }

    PartitionAppender get(String topic, int partition) {
        TopicPartition key = new TopicPartition(topic, partition);
        PartitionAppender appender = open.get(key);
        if (appender == null) {
            if (snapshot == null) snapshot = MetadataSnapshot.read(clusterDir);
            MetadataSnapshot.TopicInfo info = snapshot.topic(topic);
            if (partition < 0 || partition >= info.partitions.size()) {
                throw new io.kstream.spark.error.KStreamException(
                    io.kstream.spark.error.KStreamException.Kind.PartitionNotFoundError, "topic '" + topic + "' has "
                    + info.partitions.size() + " partitions; there is no partition " + partition);
            }
            MetadataSnapshot.PartitionInfo p = info.partitions.get(partition);
            appender = new PartitionAppender(snapshot.leaderDir(topic, partition), snapshot.lockPath(topic, partition),
                p.replicas.size(), p.leaderEpoch, PartitionAppender.Config.of(info.config, "all"));
            open.put(key, appender);
        }
        return appender;
    }

    @Override
    public void close() {
        for (PartitionAppender a : open.values()) a.close();
        open.clear();
    }
}

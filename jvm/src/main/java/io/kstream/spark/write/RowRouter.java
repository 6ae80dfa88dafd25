package io.kstream.spark.write;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.MetadataSnapshot;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;

/**
 * The sink's column rules for one row (the Python sink's, src/kstream/sink/writer.py): the topic
 * (option {@code topic}, else the row's {@code topic}), the partition (the {@code partition}
 * column; null or -1: Kafka's murmur2 of the key, else the {@link Partitioner}'s sticky
 * partition), key, value, timestamp (ms) and headers as stored, with the Python sink's errors
 * (a keyless row on a compacted topic, a partition outside the topic, a topic the JVM writer does
 * not write). Shared by the JVM batch/stream writer and the Real-time Mode sink. Not thread-safe.
 */
public final class RowRouter {
    /** One row, routed: its topic and partition, and the columns it stores. */
    public record Record(TopicTarget topic, int partition, byte[] key, byte[] value, Long timestamp,
                         List<byte[][]> headers) {}

    private final SinkInput input;
    private final MetadataSnapshot snapshot;
    private final Partitioner partitioner;
    private final Map<String, TopicTarget> topics = new HashMap<>();

    public RowRouter(SinkInput input, MetadataSnapshot snapshot, Partitioner partitioner) {
        this.input = input;
        this.snapshot = snapshot;
        this.partitioner = partitioner;
    }

    /** The topic as this writer writes it (checked once: the JVM writer writes it). */
    public TopicTarget target(String topicName) {
        TopicTarget topic = topics.get(topicName);
        if (topic == null) {
            topic = new TopicTarget(snapshot.topic(topicName));
            topics.put(topicName, topic);
        }
        return topic;
    }

    /** A topic as this task writes it. */
    public static final class TopicTarget {
        public record Key(String topic, int partition) {}

        public final String name;
        public final int partitions;
        final String compacted; // cleanup.policy when it compacts, else null

        TopicTarget(MetadataSnapshot.TopicInfo info) {
            String why = WriterChoice.notWritable(info);
            if (why != null) {
                throw KStreamException.config("the JVM writer does not write " + why + "; use writer=python (or"
                    + " writer=auto with option 'topic') for it (docs/JVM_WRITER.md)");
            }
            this.name = info.name;
            this.partitions = info.partitions.size();
            String policy = info.config.getOrDefault("cleanup.policy", "delete");
            this.compacted = List.of(policy.split(",")).contains("compact") ? policy : null;
        }
    }

    /** Where a row goes and what it stores (the Python sink's column rules). */
    public Record route(InternalRow row) {
        String topicName;
        if (input.topicOption != null) {
            topicName = input.topicOption;
        } else {
            if (row.isNullAt(input.topic)) {
                throw SinkInput.invalid("some rows have a null 'topic'; fill it, or set .option('topic', ...) for"
                    + " all rows");
            }
            topicName = row.getUTF8String(input.topic).toString();
        }
        TopicTarget topic = target(topicName);
        byte[] key = input.key < 0 || row.isNullAt(input.key) ? null : bytes(row, input.key, input.keyKind);
        if (key == null && topic.compacted != null) {
            throw SinkInput.invalid("Compacted topic cannot accept message without key: topic '" + topic.name
                + "' has cleanup.policy=" + topic.compacted + ", so every record needs a key (the cleaner keeps"
                + " the latest record per key), and a row of the task has none; give each record a key, or alter"
                + " the topic's cleanup.policy to delete");
        }
        int partition = -1;
        if (input.partition >= 0 && !row.isNullAt(input.partition)) {
            long given = partitionValue(row);
            if (given < -1 || given >= topic.partitions) {
                throw new KStreamException(KStreamException.Kind.PartitionNotFoundError, "partition " + given
                    + " (column 'partition') is not a partition of topic '" + topic.name + "', which has partitions 0.."
                    + (topic.partitions - 1) + "; give one of those, or -1 (or None) to let the partitioner choose");
            }
            partition = (int) given;
        }
        if (partition < 0) partition = partitioner.partition(topic.name, key, topic.partitions);
        byte[] value = row.isNullAt(input.value) ? null : bytes(row, input.value, input.valueKind);
        Long timestamp = input.timestamp < 0 || row.isNullAt(input.timestamp) ? null : timestampMs(row);
        List<byte[][]> headers = input.headers < 0 || row.isNullAt(input.headers) ? null : headers(row);
        return new Record(topic, partition, key, value, timestamp, headers);
    }

    private long partitionValue(InternalRow row) {
        return integer(row, input.partition, input.partitionType);
    }

    private long timestampMs(InternalRow row) {
        if (input.timestampKind == SinkInput.Kind.TIMESTAMP) return Math.floorDiv(row.getLong(input.timestamp), 1000L);
        return integer(row, input.timestamp, input.timestampType);
    }

    /** An integer column of any width (checked by {@link SinkInput}), by its own getter. */
    public static long integer(InternalRow row, int ordinal, DataType type) {
        if (type instanceof LongType) return row.getLong(ordinal);
        if (type instanceof ShortType) return row.getShort(ordinal);
        if (type instanceof ByteType) return row.getByte(ordinal);
        return row.getInt(ordinal);
    }

    private static byte[] bytes(InternalRow row, int ordinal, SinkInput.Kind kind) {
        return kind == SinkInput.Kind.BINARY ? row.getBinary(ordinal) : row.getUTF8String(ordinal).getBytes();
    }

    private List<byte[][]> headers(InternalRow row) {
        List<byte[][]> out = new ArrayList<>();
        if (input.headersKind == SinkInput.Kind.HEADERS_ARRAY) {
            ArrayData array = row.getArray(input.headers);
            for (int i = 0; i < array.numElements(); i++) {
                if (array.isNullAt(i)) continue;
                InternalRow h = array.getStruct(i, 2);
                out.add(header(h.isNullAt(0) ? null : h.getUTF8String(0).getBytes(),
                    h.isNullAt(1) ? null : input.headerValueString ? h.getUTF8String(1).getBytes() : h.getBinary(1)));
            }
        } else {
            MapData map = row.getMap(input.headers);
            ArrayData keys = map.keyArray();
            ArrayData values = map.valueArray();
            for (int i = 0; i < map.numElements(); i++) {
                out.add(header(keys.getUTF8String(i).getBytes(), values.isNullAt(i) ? null
                    : input.headerValueString ? values.getUTF8String(i).getBytes() : values.getBinary(i)));
            }
        }
        return out;
    }

    private static byte[][] header(byte[] name, byte[] value) {
        if (name == null) throw SinkInput.invalid("a header has a null key; every header needs a name");
        return new byte[][] {name, value};
    }
}

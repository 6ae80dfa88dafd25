package io.kstream.spark.write;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.Format;
import io.kstream.spark.format.FrameEncoder;
import io.kstream.spark.format.MetadataSnapshot;
import io.kstream.spark.log.PartitionAppender;
import io.kstream.spark.txn.SinkStore;
import io.kstream.spark.txn.SinkTaskWriter;
import io.kstream.spark.txn.TransactionTables;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;

/**
 * One Spark task attempt of a JVM batch write: Python's {@code write_task}
 * (src/kstream/sink/writer.py) on {@link SinkTaskWriter}. The attempt registers its own producer
 * id (refused when the batch is decided already: a zombie), buffers rows per partition (the
 * {@code partition} column, else Kafka's murmur2 of the key, else the sticky partition of the
 * {@link Partitioner}) and writes each buffer as one transactional frame of a bytes topic's
 * stored columns (key, value, timestamp, headers: those the input has, as the Python sink stores
 * them) under the partition lock, fsynced (acks=all) before {@link #commit} hands the driver its
 * {@code TaskWrites}. Nothing is visible to read_committed readers until the driver commits; a
 * failed or aborted attempt's frames are aborted by the driver (its producer is the sink's until
 * then). Rows of a typed topic, of a topic with RF &gt; 1 or of a missing one are refused with the
 * error saying what to do (docs/JVM_WRITER.md).
 */
final class JvmDataWriter implements DataWriter<InternalRow> {
    /** Rows buffered per partition before a frame is written. */
    static final int MAX_FRAME_ROWS = 16_384;
    /** Bytes (keys, values, headers) buffered per partition before a frame is written, at most. */
    static final long MAX_FRAME_BYTES = 4L << 20;

    private final SinkInput input;
    private final MetadataSnapshot snapshot;
    private final SinkStore store;
    private final SinkTaskWriter writer;
    private final Partitioner partitioner = new Partitioner(Partitioner.MURMUR2_RANDOM, new Random());
    private final BufferAllocator allocator = new RootAllocator();
    private final Schema schema;
    private final Map<String, TopicTarget> topics = new HashMap<>();
    private final Map<TopicTarget.Key, Buffer> buffers = new LinkedHashMap<>();

    JvmDataWriter(SinkInput input, String sinkId, Long batchId) {
        this(input, sinkId, batchId, JvmBatchWrite.store(input.cluster));
    }

    /** With the task's store open already (it is this writer's from here: closed by {@link #close}). */
    JvmDataWriter(SinkInput input, String sinkId, Long batchId, SinkStore store) {
        this.input = input;
        this.store = store;
        try {
            this.snapshot = MetadataSnapshot.read(input.cluster);
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
        SinkTaskWriter made;
        try {
            made = new SinkTaskWriter(input.cluster, store, sinkId, batchId);
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
        this.writer = made;
        this.schema = storedSchema(input);
    }

    /** The stored columns of a bytes topic the input has (docs/FORMAT.md), in the Python sink's order. */
    static Schema storedSchema(SinkInput input) {
        List<Field> fields = new ArrayList<>();
        if (input.key >= 0) fields.add(new Field("key", FieldType.nullable(ArrowType.Binary.INSTANCE), null));
        fields.add(new Field("value", FieldType.nullable(ArrowType.Binary.INSTANCE), null));
        if (input.timestamp >= 0) fields.add(new Field("timestamp", FieldType.nullable(new ArrowType.Int(64, true)), null));
        if (input.headers >= 0) {
            Field headerKey = new Field("key", FieldType.notNullable(ArrowType.Utf8.INSTANCE), null);
            Field headerValue = new Field("value", FieldType.nullable(ArrowType.Binary.INSTANCE), null);
            Field item = new Field("item", FieldType.nullable(ArrowType.Struct.INSTANCE), List.of(headerKey, headerValue));
            fields.add(new Field("headers", FieldType.nullable(ArrowType.List.INSTANCE), List.of(item)));
        }
        return new Schema(fields);
    }

    /** A topic as this task writes it. */
    static final class TopicTarget {
        record Key(String topic, int partition) {}

        final String name;
        final int partitions;
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

    /** The rows of one partition not written yet. */
    private static final class Buffer {
        final List<byte[]> keys = new ArrayList<>();
        final List<byte[]> values = new ArrayList<>();
        final List<Long> timestamps = new ArrayList<>();
        final List<List<byte[][]>> headers = new ArrayList<>();
        long bytes;
    }

    @Override
    public void write(InternalRow row) throws IOException {
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
        TopicTarget topic = topics.get(topicName);
        if (topic == null) {
            topic = new TopicTarget(snapshot.topic(topicName));
            topics.put(topicName, topic);
        }
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
        TopicTarget.Key where = new TopicTarget.Key(topic.name, partition);
        Buffer buffer = buffers.computeIfAbsent(where, k -> new Buffer());
        buffer.keys.add(key);
        buffer.values.add(value);
        buffer.timestamps.add(timestamp);
        buffer.headers.add(headers);
        buffer.bytes += 16 + (key == null ? 0 : key.length) + (value == null ? 0 : value.length);
        if (headers != null) {
            for (byte[][] h : headers) buffer.bytes += 8 + h[0].length + (h[1] == null ? 0 : h[1].length);
        }
        if (buffer.values.size() >= MAX_FRAME_ROWS || buffer.bytes >= MAX_FRAME_BYTES) {
            flush(where, buffer, topic);
            buffers.remove(where);
        }
    }

    private long partitionValue(InternalRow row) {
        return integer(row, input.partition, input.partitionType);
    }

    private long timestampMs(InternalRow row) {
        if (input.timestampKind == SinkInput.Kind.TIMESTAMP) return Math.floorDiv(row.getLong(input.timestamp), 1000L);
        return integer(row, input.timestamp, input.timestampType);
    }

    /** An integer column of any width (checked by {@link SinkInput}), by its own getter. */
    static long integer(InternalRow row, int ordinal, DataType type) {
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

    /** One partition's buffered rows as one transactional frame (cut in two while larger than message.max.bytes). */
    private void flush(TopicTarget.Key where, Buffer buffer, TopicTarget topic) throws IOException {
        List<byte[]> frames = new ArrayList<>();
        long now = System.currentTimeMillis();
        encode(buffer, 0, buffer.values.size(), now, frames, maxFrameBytes(topic.name));
        writer.append(where.topic(), where.partition(), frames);
        partitioner.batchSent(where.topic(), topic.partitions, where.partition());
    }

    private long maxFrameBytes(String topic) {
        String raw = snapshot.topic(topic).config.get("message.max.bytes");
        return raw == null ? new PartitionAppender.Config().messageMaxBytes : Long.parseLong(raw.trim());
    }

    private void encode(Buffer b, int from, int to, long now, List<byte[]> frames, long maxBytes) throws IOException {
        int rows = to - from;
        byte[] frame;
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
            long[] bounds = fill(root, b, from, to, now);
            FrameEncoder.Payload payload = FrameEncoder.payload(root, "none");
            if (Format.HEADER_SIZE + (long) payload.bytes.length > maxBytes && rows > 1) {
                frame = null;
            } else {
                // Encoded as the attempt's transactional frame at once: SinkTaskWriter takes it without
                // stamping a copy (a 4 MB copy a frame in issue 22's profile of the batch write).
                frame = FrameEncoder.frame(payload, "none", Format.TRANSACTIONAL, 0, rows, 0, writer.producerId(),
                    TransactionTables.SINK_EPOCH, -1, bounds[0], bounds[1]);
            }
        }
        if (frame == null) {  // too large for one frame: halves (one record too large is the appender's error)
            int middle = from + rows / 2;
            encode(b, from, middle, now, frames, maxBytes);
            encode(b, middle, to, now, frames, maxBytes);
        } else {
            frames.add(frame);
        }
    }

    /** Fill the stored columns with rows [from, to); the (min, max) timestamp ({@code now} without any). */
    private long[] fill(VectorSchemaRoot root, Buffer b, int from, int to, long now) {
        root.allocateNew();
        VarBinaryVector keys = input.key >= 0 ? (VarBinaryVector) root.getVector("key") : null;
        VarBinaryVector values = (VarBinaryVector) root.getVector("value");
        BigIntVector timestamps = input.timestamp >= 0 ? (BigIntVector) root.getVector("timestamp") : null;
        ListVector headers = input.headers >= 0 ? (ListVector) root.getVector("headers") : null;
        StructVector items = headers == null ? null : (StructVector) headers.getDataVector();
        VarCharVector headerKeys = items == null ? null : (VarCharVector) items.getChild("key");
        VarBinaryVector headerValues = items == null ? null : (VarBinaryVector) items.getChild("value");
        long low = Long.MAX_VALUE;
        long high = Long.MIN_VALUE;
        int item = 0;
        for (int i = from; i < to; i++) {
            int row = i - from;
            if (keys != null) {
                byte[] key = b.keys.get(i);
                if (key == null) keys.setNull(row); else keys.setSafe(row, key);
            }
            byte[] value = b.values.get(i);
            if (value == null) values.setNull(row); else values.setSafe(row, value);
            if (timestamps != null) {
                Long ts = b.timestamps.get(i);
                if (ts == null) {
                    timestamps.setNull(row);
                } else {
                    timestamps.setSafe(row, ts);
                    low = Math.min(low, ts);
                    high = Math.max(high, ts);
                }
            }
            if (headers != null) {
                List<byte[][]> hs = b.headers.get(i);
                if (hs == null) {
                    headers.setNull(row);
                } else {
                    headers.startNewValue(row);
                    for (byte[][] h : hs) {
                        items.setIndexDefined(item);
                        headerKeys.setSafe(item, h[0]);
                        if (h[1] == null) headerValues.setNull(item); else headerValues.setSafe(item, h[1]);
                        item++;
                    }
                    headers.endValue(row, hs.size());
                }
            }
        }
        if (items != null) {
            items.setValueCount(item);
            headerKeys.setValueCount(item);
            headerValues.setValueCount(item);
        }
        root.setRowCount(to - from);
        if (low == Long.MAX_VALUE) return new long[] {now, now};
        return new long[] {low, high};
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
        for (Map.Entry<TopicTarget.Key, Buffer> e : buffers.entrySet()) {
            flush(e.getKey(), e.getValue(), topics.get(e.getKey().topic()));
        }
        buffers.clear();
        return new JvmTaskCommit(writer.writes());
    }

    @Override
    public void abort() {
        // Nothing written becomes visible: the driver's abort (or the next commit of this sink)
        // fences this attempt's producer and writes its ABORT markers.
        buffers.clear();
    }

    @Override
    public void close() {
        try {
            writer.close();
        } finally {
            store.close();
            allocator.close();
        }
    }
}

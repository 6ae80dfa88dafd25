package io.kstream.spark.write;

import io.kstream.spark.format.FrameEncoder;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
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

/**
 * Rows of a bytes topic (key, value, timestamp, headers: the stored columns the sink's input has,
 * docs/FORMAT.md) buffered for one partition and encoded as frames: one frame, cut in halves
 * while it is larger than the topic's {@code message.max.bytes}. Shared by the JVM batch/stream
 * writer ({@link JvmDataWriter}) and the Real-time Mode sink ({@code realtime.KStreamForeachWriter}).
 * Not thread-safe.
 */
public final class RowFrames {
    /** The schema metadata of a frame holding buffered rows [from, to) (null: none). */
    public interface Metadata {
        Map<String, String> of(int from, int to);
    }

    /** The rows of one partition not written yet. */
    public static final class Rows {
        final List<byte[]> keys = new ArrayList<>();
        final List<byte[]> values = new ArrayList<>();
        final List<Long> timestamps = new ArrayList<>();
        final List<List<byte[][]>> headers = new ArrayList<>();
        long bytes;

        public void add(byte[] key, byte[] value, Long timestamp, List<byte[][]> recordHeaders) {
            keys.add(key);
            values.add(value);
            timestamps.add(timestamp);
            headers.add(recordHeaders);
            bytes += 16 + (key == null ? 0 : key.length) + (value == null ? 0 : value.length);
            if (recordHeaders != null) {
                for (byte[][] h : recordHeaders) bytes += 8 + h[0].length + (h[1] == null ? 0 : h[1].length);
            }
        }

        public int size() {
            return values.size();
        }

        public long bytes() {
            return bytes;
        }
    }

    private final SinkInput input;
    private final Schema schema;
    private final BufferAllocator allocator;

    public RowFrames(SinkInput input, BufferAllocator allocator) {
        this.input = input;
        this.schema = storedSchema(input);
        this.allocator = allocator;
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

    /**
     * Rows [from, to) as frames appended to {@code frames}: one, or halves while larger than
     * {@code maxBytes} (one record too large is the appender's error). {@code attributes},
     * {@code producerId} and {@code producerEpoch} go into each frame's header, {@code metadata}
     * (null: none) into its schema message.
     */
    public void encode(Rows b, int from, int to, long now, List<byte[]> frames, long maxBytes, int attributes,
                       long producerId, short producerEpoch, Metadata metadata) throws IOException {
        int rows = to - from;
        byte[] frame;
        Schema frameSchema = metadata == null ? schema : new Schema(schema.getFields(), metadata.of(from, to));
        try (VectorSchemaRoot root = VectorSchemaRoot.create(frameSchema, allocator)) {
            long[] bounds = fill(root, b, from, to, now);
            frame = FrameEncoder.frame(root, "none", attributes, 0, rows, 0, producerId, producerEpoch, -1,
                bounds[0], bounds[1]);
            if (frame.length > maxBytes && rows > 1) frame = null;
        }
        if (frame == null) {
            int middle = from + rows / 2;
            encode(b, from, middle, now, frames, maxBytes, attributes, producerId, producerEpoch, metadata);
            encode(b, middle, to, now, frames, maxBytes, attributes, producerId, producerEpoch, metadata);
        } else {
            frames.add(frame);
        }
    }

    /** Fill the stored columns with rows [from, to); the (min, max) timestamp ({@code now} without any). */
    private long[] fill(VectorSchemaRoot root, Rows b, int from, int to, long now) {
        root.allocateNew();
        VarBinaryVector keys = input.key >= 0 ? (VarBinaryVector) root.getVector("key") : null;
        VarBinaryVector values = (VarBinaryVector) root.getVector("value");
        // Sized for these rows up front: grown by doubling from Arrow's default (3,970 values),
        // a 4 MB frame's value buffer was reallocated and copied ~10 times (issue 22's ETL profile).
        long keyBytes = 0;
        long valueBytes = 0;
        for (int i = from; i < to; i++) {
            byte[] key = b.keys.get(i);
            byte[] value = b.values.get(i);
            if (key != null) keyBytes += key.length;
            if (value != null) valueBytes += value.length;
        }
        if (keys != null) keys.allocateNew(Math.max(1, keyBytes), to - from);
        values.allocateNew(Math.max(1, valueBytes), to - from);
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
}

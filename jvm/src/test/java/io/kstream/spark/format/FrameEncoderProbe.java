package io.kstream.spark.format;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
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

/**
 * A child JVM for tests/jvm/test_frame_encoder_conformance.py (source-file mode; the kstream jar
 * and pyspark's jars on the class path): writes OUT/CODEC.frames for each codec, the frames of
 * the rows the test's recipe makes (batches of 1, 17 and 300 rows, a bytes topic's columns), so
 * Python's frame reader can decode them and compare. The recipe is the test's {@code _row}:
 * change both together.
 */
public final class FrameEncoderProbe {
    static final int[] BATCH_ROWS = {1, 17, 300};
    static final long BASE_TIMESTAMP_MS = 1_700_000_000_000L;
    static final int LEADER_EPOCH = 3;

    private FrameEncoderProbe() {}

    static byte[] key(int i) {
        if (i % 7 == 0) return null;
        return i == 1 ? new byte[0] : ("k" + i).getBytes(StandardCharsets.UTF_8);
    }

    static byte[] value(int i) {
        return i % 13 == 0 ? new byte[0] : ("v" + i + "-" + "é".repeat(i % 5)).getBytes(StandardCharsets.UTF_8);
    }

    static List<String[]> headers(int i) {
        List<String[]> out = new ArrayList<>();
        if (i % 3 == 0) out.add(new String[] {"h", Integer.toString(i)});
        if (i % 11 == 0) out.add(new String[] {"n", null});
        return out;
    }

    static Schema schema() {
        Field headerKey = new Field("key", FieldType.notNullable(ArrowType.Utf8.INSTANCE), null);
        Field headerValue = new Field("value", FieldType.nullable(ArrowType.Binary.INSTANCE), null);
        Field item = new Field("item", FieldType.nullable(ArrowType.Struct.INSTANCE), List.of(headerKey, headerValue));
        return new Schema(List.of(
            new Field("key", FieldType.nullable(ArrowType.Binary.INSTANCE), null),
            new Field("value", FieldType.nullable(ArrowType.Binary.INSTANCE), null),
            new Field("timestamp", FieldType.nullable(new ArrowType.Int(64, true)), null),
            new Field("headers", FieldType.nullable(ArrowType.List.INSTANCE), List.of(item))));
    }

    static void fill(VectorSchemaRoot root, int first, int rows) {
        VarBinaryVector keys = (VarBinaryVector) root.getVector("key");
        VarBinaryVector values = (VarBinaryVector) root.getVector("value");
        BigIntVector timestamps = (BigIntVector) root.getVector("timestamp");
        ListVector headers = (ListVector) root.getVector("headers");
        StructVector items = (StructVector) headers.getDataVector();
        VarCharVector headerKeys = (VarCharVector) items.getChild("key");
        VarBinaryVector headerValues = (VarBinaryVector) items.getChild("value");
        root.allocateNew();
        int item = 0;
        for (int row = 0; row < rows; row++) {
            int i = first + row;
            byte[] key = key(i);
            if (key == null) keys.setNull(row); else keys.setSafe(row, key);
            values.setSafe(row, value(i));
            timestamps.setSafe(row, BASE_TIMESTAMP_MS + i * 10L);
            headers.startNewValue(row);
            for (String[] header : headers(i)) {
                items.setIndexDefined(item);
                headerKeys.setSafe(item, header[0].getBytes(StandardCharsets.UTF_8));
                if (header[1] == null) headerValues.setNull(item);
                else headerValues.setSafe(item, header[1].getBytes(StandardCharsets.UTF_8));
                item++;
            }
            headers.endValue(row, headers(i).size());
        }
        items.setValueCount(item);
        headerKeys.setValueCount(item);
        headerValues.setValueCount(item);
        root.setRowCount(rows);
    }

    public static void main(String[] args) throws IOException {
        Path out = Path.of(args[0]);
        try (BufferAllocator allocator = new RootAllocator();
             VectorSchemaRoot root = VectorSchemaRoot.create(schema(), allocator)) {
            for (String codec : new String[] {"none", "lz4", "zstd"}) {
                List<byte[]> frames = new ArrayList<>();
                int first = 0;
                for (int k = 0; k < BATCH_ROWS.length; k++) {
                    int rows = BATCH_ROWS[k];
                    fill(root, first, rows);
                    FrameEncoder.Payload payload = FrameEncoder.payload(root, codec);
                    boolean transactional = k == 2;
                    frames.add(FrameEncoder.frame(payload, codec, transactional ? Format.TRANSACTIONAL : 0, first, rows,
                        LEADER_EPOCH, transactional ? 77 : Format.NO_PRODUCER_ID, (short) (transactional ? 2 : -1),
                        transactional ? 18 : -1, BASE_TIMESTAMP_MS + first * 10L,
                        BASE_TIMESTAMP_MS + (first + rows - 1) * 10L));
                    first += rows;
                }
                int size = frames.stream().mapToInt(f -> f.length).sum();
                byte[] all = new byte[size];
                int at = 0;
                for (byte[] frame : frames) {
                    System.arraycopy(frame, 0, all, at, frame.length);
                    at += frame.length;
                }
                Files.write(out.resolve(codec + ".frames"), all);
            }
        }
    }
}

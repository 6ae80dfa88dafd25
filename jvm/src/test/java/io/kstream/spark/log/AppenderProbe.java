package io.kstream.spark.log;

import io.kstream.spark.format.Format;
import io.kstream.spark.format.Frame;
import io.kstream.spark.format.LogReader;
import io.kstream.spark.format.PayloadDecoder;
import io.kstream.spark.format.FrameEncoder;
import io.kstream.spark.format.FrameHeader;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * A child JVM for tests/jvm/test_appender_conformance.py (source-file mode; the kstream jar and
 * pyspark's jars on the class path).
 *
 * <pre>
 * encode OUT N ROWS TAG          N frames of ROWS rows each (values "TAG-i", keys "k{i % 5}",
 *                                timestamps now + i), concatenated into OUT, offsets unassigned
 * append DIR LOCK FRAMES PER_CALL ACKS EPOCH [key=value ...]
 *                                append FRAMES' frames through PartitionAppender, PER_CALL frames per
 *                                call; after each call prints "BASE END" (flushed: what acks acknowledged);
 *                                at the end "appended N frames in MS ms" on stderr
 * read DIR                       every record of DIR through the JVM reader's LogReader (checksums
 *                                on) and PayloadDecoder: "OFFSET VALUE" per record
 * </pre>
 */
public final class AppenderProbe {
    private AppenderProbe() {}

    public static void main(String[] args) throws IOException {
        if (args[0].equals("encode")) encode(Path.of(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]), args[4]);
        else if (args[0].equals("read")) read(args[1]);
        else append(args);
    }

    static Schema schema() {
        Field item = new Field("item", FieldType.nullable(ArrowType.Struct.INSTANCE), List.of(
            new Field("key", FieldType.notNullable(ArrowType.Utf8.INSTANCE), null),
            new Field("value", FieldType.nullable(ArrowType.Binary.INSTANCE), null)));
        return new Schema(List.of(
            new Field("key", FieldType.nullable(ArrowType.Binary.INSTANCE), null),
            new Field("value", FieldType.nullable(ArrowType.Binary.INSTANCE), null),
            new Field("timestamp", FieldType.nullable(new ArrowType.Int(64, true)), null),
            new Field("headers", FieldType.nullable(ArrowType.List.INSTANCE), List.of(item))));
    }

    static void encode(Path out, int frames, int rows, String tag) throws IOException {
        // Recent timestamps: a segment whose first batch is older than segment.ms rolls at once.
        long base = System.currentTimeMillis();
        try (BufferAllocator allocator = new RootAllocator();
             VectorSchemaRoot root = VectorSchemaRoot.create(schema(), allocator);
             var file = Files.newOutputStream(out)) {
            for (int f = 0; f < frames; f++) {
                root.allocateNew();
                VarBinaryVector keys = (VarBinaryVector) root.getVector("key");
                VarBinaryVector values = (VarBinaryVector) root.getVector("value");
                BigIntVector timestamps = (BigIntVector) root.getVector("timestamp");
                ListVector headers = (ListVector) root.getVector("headers");
                for (int r = 0; r < rows; r++) {
                    int i = f * rows + r;
                    keys.setSafe(r, ("k" + (i % 5)).getBytes(StandardCharsets.UTF_8));
                    values.setSafe(r, (tag + "-" + i).getBytes(StandardCharsets.UTF_8));
                    timestamps.setSafe(r, base + i);
                    headers.startNewValue(r);
                    headers.endValue(r, 0);
                }
                root.setRowCount(rows);
                FrameEncoder.Payload payload = FrameEncoder.payload(root, "none");
                file.write(FrameEncoder.frame(payload, "none", 0, 0, rows, 0, Format.NO_PRODUCER_ID, (short) -1, -1,
                    base + (long) f * rows, base + (long) f * rows + rows - 1));
            }
        }
    }

    static void read(String dir) throws IOException {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        try (BufferAllocator allocator = new RootAllocator();
             LogReader reader = new LogReader(dir, true)) {
            PayloadDecoder decoder = new PayloadDecoder(allocator);
            reader.seek(reader.logStartOffset());
            Frame frame;
            while ((frame = reader.next(Long.MAX_VALUE)) != null) {
                try (VectorSchemaRoot root = decoder.decode(frame, Set.of("value"))) {
                    VarBinaryVector values = (VarBinaryVector) root.getVector("value");
                    for (int r = 0; r < root.getRowCount(); r++) {
                        out.println((frame.header.baseOffset + r) + " " + new String(values.get(r), StandardCharsets.UTF_8));
                    }
                }
            }
        }
        out.flush();
    }

    static void append(String[] args) throws IOException {
        String dir = args[1];
        String lock = args[2];
        byte[] all = Files.readAllBytes(Path.of(args[3]));
        int perCall = Integer.parseInt(args[4]);
        String acks = args[5];
        int epoch = Integer.parseInt(args[6]);
        Map<String, String> topicConfig = new HashMap<>();
        for (int i = 7; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            topicConfig.put(kv[0], kv[1]);
        }
        PartitionAppender.Config config = PartitionAppender.Config.of(topicConfig, acks);
        List<byte[]> frames = new ArrayList<>();
        ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
        for (int at = 0; at < all.length; ) {
            int size = (int) FrameHeader.read(b, at).frameSize();
            byte[] frame = new byte[size];
            System.arraycopy(all, at, frame, 0, size);
            frames.add(frame);
            at += size;
        }
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        long started = System.nanoTime();
        try (PartitionAppender appender = new PartitionAppender(dir, lock, 1, epoch, config)) {
            for (int i = 0; i < frames.size(); i += perCall) {
                PartitionAppender.Result result = appender.append(frames.subList(i, Math.min(frames.size(), i + perCall)));
                out.println(result.baseOffsets[0] + " " + result.endOffset);
                out.flush();
            }
        }
        System.err.println("appended " + frames.size() + " frames in " + (System.nanoTime() - started) / 1_000_000 + " ms");
    }
}

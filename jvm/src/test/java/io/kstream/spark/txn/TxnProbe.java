package io.kstream.spark.txn;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.Frame;
import io.kstream.spark.format.FrameHeader;
import io.kstream.spark.format.LogReader;
import io.kstream.spark.format.MetadataSnapshot;
import io.kstream.spark.format.PayloadDecoder;
import io.kstream.spark.format.TransactionState;
import io.kstream.spark.read.TopicPartition;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;

/**
 * A child JVM for tests/jvm/test_sink_txn_conformance.py (source-file mode; the kstream jar and
 * pyspark's jars on the class path). TIMEOUT is the cluster's sink timeout in ms ("-": none).
 *
 * <pre>
 * schema                          TransactionTables.SCHEMA, as is
 * timeout CLUSTER                 SinkStore.clusterTimeoutMs: the cluster's sink task timeout
 * task CLUSTER SINK BATCH TIMEOUT FRAMES PER_CALL TOPIC:P[,TOPIC:P...] [hold]
 *                                 one task attempt (BATCH "-": unknown) appending FRAMES' frames (as
 *                                 AppenderProbe encode makes them), PER_CALL per call, call i to the
 *                                 i-th partition round robin; prints its commit message as JSON
 *                                 [producer_id, [[topic, p], ...], records]. With hold it then prints
 *                                 "ready" and waits for a line on stdin: "append" appends the first
 *                                 call's frames again and prints "appended" or "FencedError: ...";
 *                                 "exit" ends it
 * commit CLUSTER SINK BATCH TIMEOUT WRITES   WRITES: JSON list of commit messages; prints
 *                                 "committed" or "replay"
 * abort CLUSTER SINK TIMEOUT WRITES [BATCH]
 * committed CLUSTER TOPIC P       read_committed through the JVM reader (TransactionState + LogReader):
 *                                 "OFFSET VALUE" per visible record below the LSO, then "LSO n"
 * </pre>
 * A KStreamException ends the probe with exit code 2 and "KIND: message" on stdout.
 */
public final class TxnProbe {
    private TxnProbe() {}

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        try {
            switch (args[0]) {
                case "schema": out.print(TransactionTables.SCHEMA); break;
                case "timeout": out.println(SinkStore.clusterTimeoutMs(args[1])); break;
                case "task": task(args, out); break;
                case "commit": {
                    try (SinkStore store = store(args[1], args[4]);
                         SinkCommitter committer = new SinkCommitter(args[1], store)) {
                        out.println(committer.commit(args[2], Long.parseLong(args[3]), writes(args[5])) ? "committed" : "replay");
                    }
                    break;
                }
                case "abort": {
                    try (SinkStore store = store(args[1], args[3]);
                         SinkCommitter committer = new SinkCommitter(args[1], store)) {
                        committer.abort(args[2], writes(args[4]), args.length > 5 ? Long.parseLong(args[5]) : null);
                        out.println("aborted");
                    }
                    break;
                }
                case "committed": committed(args[1], args[2], Integer.parseInt(args[3]), out); break;
                default: throw new IllegalArgumentException("unknown command " + args[0]);
            }
        } catch (KStreamException e) {
            out.println(e.kind + ": " + e.getMessage());
            System.exit(2);
        }
    }

    static SinkStore store(String cluster, String timeout) {
        return new SinkStore(MetadataDb.open(cluster), timeout.equals("-") ? null : Long.parseLong(timeout));
    }

    static List<TaskWrites> writes(String json) throws Exception {
        return TaskWrites.fromJson(json);
    }

    static List<byte[]> frames(String file) throws Exception {
        byte[] all = Files.readAllBytes(Path.of(file));
        List<byte[]> frames = new ArrayList<>();
        ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
        for (int at = 0; at < all.length; ) {
            int size = (int) FrameHeader.read(b, at).frameSize();
            byte[] frame = new byte[size];
            System.arraycopy(all, at, frame, 0, size);
            frames.add(frame);
            at += size;
        }
        return frames;
    }

    static void task(String[] args, PrintStream out) throws Exception {
        String cluster = args[1];
        Long batch = args[3].equals("-") ? null : Long.parseLong(args[3]);
        List<byte[]> frames = frames(args[5]);
        int perCall = Integer.parseInt(args[6]);
        List<TopicPartition> targets = new ArrayList<>();
        for (String tp : args[7].split(",")) {
            int colon = tp.lastIndexOf(':');
            targets.add(new TopicPartition(tp.substring(0, colon), Integer.parseInt(tp.substring(colon + 1))));
        }
        boolean hold = args.length > 8 && args[8].equals("hold");
        try (SinkStore store = store(cluster, args[4]);
             SinkTaskWriter writer = new SinkTaskWriter(cluster, store, args[2], batch)) {
            int call = 0;
            for (int i = 0; i < frames.size(); i += perCall, call++) {
                TopicPartition p = targets.get(call % targets.size());
                writer.append(p.topic, p.partition, frames.subList(i, Math.min(frames.size(), i + perCall)));
            }
            TaskWrites w = writer.writes();
            out.println(TaskWrites.toJson(List.of(w)));
            if (!hold) return;
            out.println("ready");
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null && !line.equals("exit")) {
                if (line.equals("append")) {
                    TopicPartition p = targets.get(0);
                    try {
                        writer.append(p.topic, p.partition, frames.subList(0, Math.min(frames.size(), perCall)));
                        out.println("appended");
                    } catch (KStreamException e) {
                        out.println(e.kind + ": " + e.getMessage());
                    }
                }
            }
        }
    }

    static void committed(String cluster, String topic, int partition, PrintStream out) throws Exception {
        MetadataSnapshot snapshot = MetadataSnapshot.read(cluster);
        String dir = snapshot.leaderDir(topic, partition);
        long hw = snapshot.highWatermark(topic, partition);
        TransactionState state = TransactionState.derive(dir, hw, true);
        try (BufferAllocator allocator = new RootAllocator(); LogReader reader = new LogReader(dir, true)) {
            PayloadDecoder decoder = new PayloadDecoder(allocator);
            reader.seek(reader.logStartOffset());
            Frame frame;
            while ((frame = reader.next(state.lastStableOffset)) != null) {
                if (!state.visibleCommitted(frame.header)) continue;
                try (VectorSchemaRoot root = decoder.decode(frame, Set.of("value"))) {
                    VarBinaryVector values = (VarBinaryVector) root.getVector("value");
                    for (int r = 0; r < root.getRowCount(); r++) {
                        out.println((frame.header.baseOffset + r) + " " + new String(values.get(r), StandardCharsets.UTF_8));
                    }
                }
            }
        }
        out.println("LSO " + state.lastStableOffset);
    }
}

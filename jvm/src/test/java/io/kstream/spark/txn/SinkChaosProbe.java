package io.kstream.spark.txn;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.Format;
import io.kstream.spark.format.FrameEncoder;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * A Java sink (tasks and driver of the exactly-once protocol, io.kstream.spark.txn, without
 * Spark) for the chaos class {@code jvm_sink_power_cut} (tests/chaos/jvm_rounds.py), compiled once
 * by tests/java_probes.py. The harness SIGKILLs it at a seeded moment.
 *
 * <pre>
 * loop CLUSTER TOPIC PARTITIONS SINK SEED BATCHES
 *     BATCHES micro-batches 0, 1, ... of sink SINK: each 2-12 records "j&lt;batch&gt;-&lt;i&gt;" on seeded
 *     partitions, written by 1-2 task attempts on threads of their own (one SinkTaskWriter each,
 *     one frame per partition), then committed by a SinkCommitter. Prints, flushed:
 *       "B batch v1,v2,..."   before the tasks write (the batch's records)
 *       "C batch"             once its commit returned
 *       "E batch error"       when a task or the commit failed (then it stops)
 *       "DONE"                after the last batch
 * attempt CLUSTER TOPIC SINK BATCH ROWS_JSON STALL
 *     one task attempt of batch BATCH (ROWS_JSON: [[value, partition], ...]), one append per row.
 *     Prints "R" once registered, "A i" after row i, then "T WRITES_JSON" (its commit message), or
 *     "F error" when it was refused (a fenced zombie: FencedError) and stops there. With STALL =
 *     k &gt;= 0 it stalls before row k (k = the row count: after the last), outside the partition
 *     lock: prints "W" and waits for a line on stdin (the harness SIGSTOPs it there, for
 *     {@code jvm_stalled_attempt}); -1: no stall
 * commit CLUSTER SINK BATCH WRITES_JSON
 *     the driver's commit of the batch with these tasks' messages: prints "C" (or "replay")
 * </pre>
 */
public final class SinkChaosProbe {
    private static final int MIN_ROWS = 2;
    private static final int MAX_ROWS = 12;
    private static final Schema VALUE_ONLY = new Schema(List.of(
        new Field("value", FieldType.nullable(ArrowType.Binary.INSTANCE), null)));

    private SinkChaosProbe() {}

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        switch (args[0]) {
            case "loop": loop(args, out); break;
            case "attempt": attempt(args, out); break;
            case "commit": {
                try (SinkStore store = new SinkStore(MetadataDb.open(args[1]), SinkStore.clusterTimeoutMs(args[1]));
                     SinkCommitter committer = new SinkCommitter(args[1], store)) {
                    out.println(committer.commit(args[2], Long.parseLong(args[3]), TaskWrites.fromJson(args[4]))
                        ? "C" : "replay");
                }
                break;
            }
            default: throw new IllegalArgumentException("unknown command " + args[0]);
        }
    }

    private static void attempt(String[] args, PrintStream out) throws Exception {
        String cluster = args[1];
        String topic = args[2];
        List<String> values = new ArrayList<>();
        List<Integer> targets = new ArrayList<>();
        for (com.fasterxml.jackson.databind.JsonNode row : new com.fasterxml.jackson.databind.ObjectMapper().readTree(args[5])) {
            values.add(row.get(0).asText());
            targets.add(row.get(1).asInt());
        }
        int stall = Integer.parseInt(args[6]);
        java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (BufferAllocator allocator = new RootAllocator();
             SinkStore store = new SinkStore(MetadataDb.open(cluster), SinkStore.clusterTimeoutMs(cluster));
             SinkTaskWriter writer = new SinkTaskWriter(cluster, store, args[3], Long.parseLong(args[4]))) {
            out.println("R");
            for (int i = 0; i <= values.size(); i++) {
                if (i == stall) {
                    out.println("W");
                    in.readLine();
                }
                if (i == values.size()) break;
                try {
                    writer.append(topic, targets.get(i), List.of(frame(allocator, List.of(values.get(i)))));
                } catch (KStreamException e) {
                    out.println("F " + e.getMessage().replace('\n', ' '));
                    return;
                }
                out.println("A " + i);
            }
            out.println("T " + TaskWrites.toJson(List.of(writer.writes())));
        } catch (KStreamException e) {
            out.println("F " + e.getMessage().replace('\n', ' '));
        }
    }

    private static void loop(String[] args, PrintStream out) throws Exception {
        String cluster = args[1];
        String topic = args[2];
        int partitions = Integer.parseInt(args[3]);
        String sink = args[4];
        Random rng = new Random(Long.parseLong(args[5]));
        int batches = Integer.parseInt(args[6]);
        long timeoutMs = SinkStore.clusterTimeoutMs(cluster);
        try (BufferAllocator allocator = new RootAllocator()) {
            for (int batch = 0; batch < batches; batch++) {
                int n = MIN_ROWS + rng.nextInt(MAX_ROWS - MIN_ROWS + 1);
                List<String> values = new ArrayList<>();
                List<Integer> targets = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    values.add("j" + batch + "-" + i);
                    targets.add(rng.nextInt(partitions));
                }
                out.println("B " + batch + " " + String.join(",", values));
                int split = rng.nextInt(n + 1);
                List<List<Integer>> tasks = new ArrayList<>();
                if (split > 0) tasks.add(range(0, split));
                if (split < n) tasks.add(range(split, n));
                try {
                    List<TaskWrites> writes = runTasks(allocator, cluster, topic, sink, batch, timeoutMs, tasks,
                        values, targets);
                    try (SinkStore store = new SinkStore(MetadataDb.open(cluster), timeoutMs);
                         SinkCommitter committer = new SinkCommitter(cluster, store)) {
                        committer.commit(sink, batch, writes);
                    }
                    out.println("C " + batch);
                } catch (KStreamException | java.io.IOException e) {
                    out.println("E " + batch + " " + e.getMessage().replace('\n', ' '));
                    return;
                }
            }
        }
        out.println("DONE");
    }

    private static List<Integer> range(int from, int to) {
        List<Integer> out = new ArrayList<>();
        for (int i = from; i < to; i++) out.add(i);
        return out;
    }

    /** Each task on a thread of its own, as Spark's executor runs a batch's tasks at once. */
    private static List<TaskWrites> runTasks(BufferAllocator allocator, String cluster, String topic, String sink,
            long batch, long timeoutMs, List<List<Integer>> tasks, List<String> values, List<Integer> targets)
            throws Exception {
        TaskWrites[] writes = new TaskWrites[tasks.size()];
        Exception[] failed = new Exception[1];
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < tasks.size(); t++) {
            int index = t;
            Thread thread = new Thread(() -> {
                try (SinkStore store = new SinkStore(MetadataDb.open(cluster), timeoutMs);
                     SinkTaskWriter writer = new SinkTaskWriter(cluster, store, sink, batch)) {
                    Map<Integer, List<String>> byPartition = new TreeMap<>();
                    for (int row : tasks.get(index)) {
                        byPartition.computeIfAbsent(targets.get(row), k -> new ArrayList<>()).add(values.get(row));
                    }
                    for (Map.Entry<Integer, List<String>> e : byPartition.entrySet()) {
                        writer.append(topic, e.getKey(), List.of(frame(allocator, e.getValue())));
                    }
                    writes[index] = writer.writes();
                } catch (Exception e) {
                    synchronized (failed) {
                        failed[0] = e;
                    }
                }
            });
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) thread.join();
        if (failed[0] != null) throw failed[0];
        return List.of(writes);
    }

    private static byte[] frame(BufferAllocator allocator, List<String> values) throws java.io.IOException {
        long now = System.currentTimeMillis();
        try (VectorSchemaRoot root = VectorSchemaRoot.create(VALUE_ONLY, allocator)) {
            root.allocateNew();
            VarBinaryVector vector = (VarBinaryVector) root.getVector("value");
            for (int i = 0; i < values.size(); i++) vector.setSafe(i, values.get(i).getBytes(StandardCharsets.UTF_8));
            root.setRowCount(values.size());
            FrameEncoder.Payload payload = FrameEncoder.payload(root, "none");
            return FrameEncoder.frame(payload, "none", 0, 0, values.size(), 0, Format.NO_PRODUCER_ID, (short) -1, -1,
                now, now);
        }
    }
}

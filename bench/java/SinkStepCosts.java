package io.kstream.spark.txn;

import io.kstream.spark.format.Format;
import io.kstream.spark.format.FrameEncoder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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
 * bench/sink_step_costs.py's child JVM: the JVM stream writer's steps per micro-batch, timed one
 * by one outside Spark, as JvmStreamingWrite calls them (a store per task attempt, the batch's
 * state read, the producer registered, one frame appended; then a store and a SinkCommitter for
 * the commit). Arguments: CLUSTER TOPIC PARTITIONS TASKS ROWS BATCHES; -Dpooled=true takes the
 * stores from MetadataDbPool (as the writer does), else opens and closes SQLite each time.
 * Prints each step's p50 and mean in ms, the first quarter of the batches (at most 5) left out.
 */
public final class SinkStepCosts {
    static final Map<String, List<Long>> T = new TreeMap<>();
    static long mark;
    static boolean POOLED = Boolean.getBoolean("pooled");
    static void lap(String step) { long now = System.nanoTime(); T.computeIfAbsent(step, k -> new ArrayList<>()).add(now - mark); mark = now; }

    public static void main(String[] a) throws Exception {
        String cluster = a[0], topic = a[1];
        int partitions = Integer.parseInt(a[2]), tasks = Integer.parseInt(a[3]), rows = Integer.parseInt(a[4]);
        int batches = Integer.parseInt(a[5]);
        Schema schema = new Schema(List.of(new Field("value", FieldType.nullable(ArrowType.Binary.INSTANCE), null)));
        byte[] frame;
        try (BufferAllocator al = new RootAllocator(); VectorSchemaRoot root = VectorSchemaRoot.create(schema, al)) {
            root.allocateNew();
            VarBinaryVector v = (VarBinaryVector) root.getVector("value");
            for (int r = 0; r < rows; r++) v.setSafe(r, new byte[100]);
            root.setRowCount(rows);
            long now = System.currentTimeMillis();
            frame = FrameEncoder.frame(FrameEncoder.payload(root, "none"), "none", 0, 0, rows, 0, Format.NO_PRODUCER_ID,
                (short) -1, -1, now, now);
        }
        long timeout = SinkStore.clusterTimeoutMs(cluster);
        String sink = "query:probe" + System.nanoTime();
        for (int b = 0; b < batches; b++) {
            List<TaskWrites> writes = new ArrayList<>();
            long batchStart = System.nanoTime();
            for (int t = 0; t < tasks; t++) {
                mark = System.nanoTime();
                SinkStore store = POOLED ? SinkStore.pooled(cluster, timeout) : new SinkStore(MetadataDb.open(cluster), timeout);
                lap("task 1 open sqlite");
                store.batchState(sink, b);
                lap("task 2 batchState read");
                SinkTaskWriter w = new SinkTaskWriter(cluster, store, sink, (long) b);
                lap("task 3 register producer (sqlite commit)");
                w.append(topic, (b * tasks + t) % partitions, List.of(frame));
                lap("task 4 append (lock, add_partition, frame, fsyncs)");
                writes.add(w.writes());
                w.close();
                store.close();
                lap("task 5 close");
            }
            mark = System.nanoTime();
            try (SinkStore store = POOLED ? SinkStore.pooled(cluster, timeout) : new SinkStore(MetadataDb.open(cluster), timeout);
                 SinkCommitter c = new SinkCommitter(cluster, store)) {
                lap("commit 1 open");
                c.commit(sink, b, writes);
                lap("commit 2 commit");
            }
            lap("commit 3 close");
            T.computeIfAbsent("batch total", k -> new ArrayList<>()).add(System.nanoTime() - batchStart);
        }
        for (Map.Entry<String, List<Long>> e : T.entrySet()) {
            List<Long> xs = new ArrayList<>(e.getValue().subList(Math.min(5, e.getValue().size() / 4), e.getValue().size()));
            xs.sort(null);
            double sum = 0; for (long x : xs) sum += x;
            System.out.printf("%-55s n=%4d  p50 %7.2f ms  mean %7.2f ms%n", e.getKey(), xs.size(), xs.get(xs.size() / 2) / 1e6, sum / xs.size() / 1e6);
        }
    }
}

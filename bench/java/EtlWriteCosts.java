package io.kstream.spark.write;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * bench/etl_write_costs.py's child JVM: the JVM stream writer's micro-batch of the streaming ETL
 * (issue 22, docs/BENCHMARKS.md), outside Spark: per batch, TASKS task attempts created as
 * JvmStreamingWrite's factory creates them (its pooled store, the batch state read, a JvmDataWriter)
 * each writing ROWS rows (no key, a 100-byte value) and committing, THREADS at a time (Spark's
 * local[2] runs 2), then the driver's JvmStreamingWrite.commit. Arguments: CLUSTER TOPIC TASKS ROWS
 * BATCHES THREADS CHECKPOINT. Prints p50 and mean (ms) of: a task's rows written (route, buffer,
 * the frames of full buffers encoded and appended), its commit (the last frames), close; the
 * driver's commit; the whole micro-batch. The first quarter of the batches (at most 5) left out.
 */
public final class EtlWriteCosts {
    static final Map<String, List<Long>> T = new TreeMap<>();

    static synchronized void record(String step, long nanos) {
        T.computeIfAbsent(step, k -> new ArrayList<>()).add(nanos);
    }

    public static void main(String[] a) throws Exception {
        String cluster = a[0];
        String topic = a[1];
        int tasks = Integer.parseInt(a[2]);
        int rows = Integer.parseInt(a[3]);
        int batches = Integer.parseInt(a[4]);
        int threads = Integer.parseInt(a[5]);
        String checkpoint = a[6];
        StructType schema = new StructType().add("key", DataTypes.BinaryType).add("value", DataTypes.BinaryType);
        Map<String, String> options = Map.of("cluster", cluster, "topic", topic, "checkpointLocation", checkpoint);
        SinkInput input = SinkInput.of(options, schema);
        JvmStreamingWrite write = new JvmStreamingWrite(input, options);
        JvmStreamingWrite.Factory factory = (JvmStreamingWrite.Factory) write.createStreamingWriterFactory(null);
        byte[][] values = new byte[rows][];
        Random random = new Random(1);
        for (int i = 0; i < rows; i++) {
            values[i] = new byte[100];
            random.nextBytes(values[i]);
        }
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        for (int b = 0; b < batches; b++) {
            long epoch = b;
            long batchStart = System.nanoTime();
            List<Future<JvmTaskCommit>> futures = new ArrayList<>();
            for (int t = 0; t < tasks; t++) {
                int task = t;
                futures.add(pool.submit(() -> {
                    long start = System.nanoTime();
                    DataWriter<InternalRow> writer = factory.createWriter(task, task, epoch);
                    long made = System.nanoTime();
                    record("task 1 created (store, batch state, producer)", made - start);
                    for (int i = 0; i < rows; i++) writer.write(new GenericInternalRow(new Object[] {null, values[i]}));
                    long written = System.nanoTime();
                    record("task 2 rows written (route, buffer, full frames)", written - made);
                    JvmTaskCommit commit = (JvmTaskCommit) writer.commit();
                    long committed = System.nanoTime();
                    record("task 3 commit (last frames)", committed - written);
                    writer.close();
                    record("task 4 close", System.nanoTime() - committed);
                    record("task total", System.nanoTime() - start);
                    return commit;
                }));
            }
            List<JvmTaskCommit> messages = new ArrayList<>();
            for (Future<JvmTaskCommit> f : futures) messages.add(f.get());
            long tasksDone = System.nanoTime();
            record("batch 1 tasks", tasksDone - batchStart);
            write.commit(epoch, messages.toArray(new JvmTaskCommit[0]));
            long end = System.nanoTime();
            record("batch 2 driver commit", end - tasksDone);
            record("batch total", end - batchStart);
        }
        pool.shutdown();
        for (Map.Entry<String, List<Long>> e : T.entrySet()) {
            List<Long> all = e.getValue();
            int skip = Math.min(5 * (all.size() / batches), all.size() / 4);
            List<Long> xs = new ArrayList<>(all.subList(skip, all.size()));
            xs.sort(null);
            double sum = 0;
            for (long x : xs) sum += x;
            System.out.printf("%-50s n=%4d  p50 %8.2f ms  mean %8.2f ms%n", e.getKey(), xs.size(),
                xs.get(xs.size() / 2) / 1e6, sum / xs.size() / 1e6);
        }
    }
}

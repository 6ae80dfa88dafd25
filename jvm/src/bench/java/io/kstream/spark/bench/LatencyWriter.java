package io.kstream.spark.bench;

import java.io.BufferedWriter;
import java.io.File;
import java.io.FileWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import org.apache.spark.sql.ForeachWriter;
import org.apache.spark.sql.Row;

/**
 * A JVM ForeachWriter for the Real-time Mode latency benchmark (jvm/bench/rtm_latency.py): for
 * each row it writes "sequence seen_ns" to a file per task and epoch in {@code directory},
 * where the sequence is the record's value (ASCII digits) and seen_ns the wall clock (ns since
 * the epoch, microsecond resolution) when the sink got the row. Each line is flushed at once so
 * the benchmark can read it while the query runs. Benchmark code, not part of the reader.
 */
public final class LatencyWriter extends ForeachWriter<Row> {
    private final String directory;
    private transient BufferedWriter out;

    public LatencyWriter(String directory) {
        this.directory = directory;
    }

    @Override
    public boolean open(long partitionId, long epochId) {
        try {
            File file = new File(directory, "p" + partitionId + "-e" + epochId + "-" + System.nanoTime() + ".txt");
            out = new BufferedWriter(new FileWriter(file, StandardCharsets.US_ASCII, true));
            return true;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void process(Row row) {
        Instant now = Instant.now();
        long seenNs = now.getEpochSecond() * 1_000_000_000L + now.getNano();
        byte[] value = row.getAs("value");
        try {
            out.write(new String(value, StandardCharsets.US_ASCII));
            out.write(' ');
            out.write(Long.toString(seenNs));
            out.write('\n');
            out.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void close(Throwable error) {
        try {
            if (out != null) out.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

package io.kstream.spark.stream;

import io.kstream.spark.format.HighWatermark;
import io.kstream.spark.format.TransactionState;
import io.kstream.spark.options.ReaderOptions;
import io.kstream.spark.read.ColumnarPartitionReader;
import io.kstream.spark.read.OffsetRange;
import java.io.IOException;
import java.util.Iterator;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;
import org.apache.spark.sql.connector.read.streaming.SupportsRealTimeRead;
import org.apache.spark.sql.types.StructType;

/**
 * A Real-time Mode reader of one partition: hands out rows as soon as they are below the
 * partition's high watermark (the LSO under read_committed), waiting for new ones until the
 * engine's deadline ({@code startTimeMs + timeoutMs}). It polls the lock file's published HW
 * every {@link #POLL_INTERVAL_MS} (a 16-byte pread; the writer publishes it after each append
 * is acknowledged) and, under read_committed, re-derives the transactions when the HW moved.
 * Rows come from a {@link ColumnarPartitionReader} over the range up to that end, copied (the
 * engine may hold a row past the next call). {@link #getOffset} is the next offset to read.
 * Not thread-safe; one per task.
 */
public final class RealTimeReader implements SupportsRealTimeRead<InternalRow> {
    /** How often to look for new records while none are readable. */
    static final long POLL_INTERVAL_MS = 1;

    private final TailRange range;
    private final StructType schema;
    private final ReaderOptions options;
    private ColumnarPartitionReader batches;
    private Iterator<InternalRow> rows;
    private int rowIndex;
    private InternalRow row;
    private long readableEnd;
    private long nextOffset;
    private long lastSeenHighWatermark = -1;

    public RealTimeReader(TailRange range, StructType schema, ReaderOptions options) {
        this.range = range;
        this.schema = schema;
        this.options = options;
        this.nextOffset = range.start;
        this.readableEnd = range.start;
    }

    @Override
    public PartitionOffset getOffset() {
        return new KStreamPartitionOffset(range.tp, nextOffset);
    }

    @Override
    public boolean next() throws IOException {
        return nextWithTimeout(System.currentTimeMillis(), 0L).hasRecord();
    }

    @Override
    public RecordStatus nextWithTimeout(Long timeoutMs) throws IOException {
        return nextWithTimeout(System.currentTimeMillis(), timeoutMs);
    }

    @Override
    public RecordStatus nextWithTimeout(Long startTimeMs, Long timeoutMs) throws IOException {
        long deadline = startTimeMs + timeoutMs;
        while (true) {
            if (rows != null && rows.hasNext()) {
                row = rows.next().copy();
                nextOffset = batches.rowOffset(rowIndex++) + 1; // a cleaned frame's rows have gaps between them
                return RecordStatus.newStatusWithoutArrivalTime(true);
            }
            if (batches != null && batches.next()) {
                rows = batches.get().rowIterator();
                rowIndex = 0;
                continue;
            }
            if (batches != null) nextOffset = batches.position(); // skipped control or aborted frames
            if (refreshEnd()) continue;
            if (System.currentTimeMillis() >= deadline) return RecordStatus.newStatusWithoutArrivalTime(false);
            try {
                Thread.sleep(POLL_INTERVAL_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt(); // the query is stopping: no record, Spark ends the task
                return RecordStatus.newStatusWithoutArrivalTime(false);
            }
        }
    }

    /** Open a reader over [nextOffset, new end) when the HW (or LSO) moved; true if it did. */
    private boolean refreshEnd() throws IOException {
        Long stored = HighWatermark.stored(range.lockPath);
        long hw;
        if (lastSeenHighWatermark < 0) {
            hw = HighWatermark.of(range.lockPath, range.replicaDirs, range.isr, range.leader);
        } else if (stored == null || stored <= lastSeenHighWatermark) {
            return false;
        } else {
            hw = stored;
        }
        lastSeenHighWatermark = hw;
        TransactionState txns = options.readCommitted
            ? TransactionState.derive(range.leaderDir(), hw, options.verifyChecksums) : null;
        long end = txns == null ? hw : txns.lastStableOffset;
        if (end <= readableEnd) return false;
        readableEnd = end;
        if (batches != null) batches.close();
        batches = new ColumnarPartitionReader(new OffsetRange(range.tp, range.leaderDir(), nextOffset, end, txns),
            schema, options.failOnDataLoss, options.verifyChecksums);
        nextOffset = batches.position();
        rows = null;
        return true;
    }

    @Override
    public InternalRow get() {
        return row;
    }

    @Override
    public void close() {
        if (batches != null) batches.close();
        batches = null;
    }
}

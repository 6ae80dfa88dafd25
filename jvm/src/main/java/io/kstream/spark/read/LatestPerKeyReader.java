package io.kstream.spark.read;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.CleanerCheckpoint;
import io.kstream.spark.format.SharedAllocator;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * A latestPerKey read of one split (Python's kstream.source.latest_per_key.read_latest): one row
 * per key, its latest visible record in [start, end), in offset order; a key whose latest record
 * is a tombstone is left out unless includeTombstones. All of a key's records are in its
 * partition, so the reduction runs in the partition's own task, with no shuffle.
 *
 * <p>Two passes, each through {@link VisibleFrames}. Below the log cleaner's end (its
 * cleaner-offset-checkpoint, {@link LatestOffsets#dirtyFrom}) the cleaner left at most one record
 * per key, so the first pass, {@link LatestOffsets}, decodes the keys alone of the dirty part
 * [dirtyFrom, end) only and keeps each key's latest offset there. The second decodes the read's
 * columns, the key and the value columns (the tombstone rule reads them) of the whole split: a
 * row below dirtyFrom is kept when its key has no record in the dirty part, a row at or above it
 * when it is at its key's latest offset (a merge walk, the offsets ascending in both). A tombstone is the log cleaner's (Python's
 * frame_rewrite.tombstones): a null value, or on a typed topic every value column null. Each run
 * of consecutive kept rows of a frame is one ColumnarBatch (a frame the cleaner already reduced to
 * its latest records is one batch, zero copy; another is sliced). Should a kept offset have no
 * row in the second pass (the cleaner rewrote the partition between the passes, under a newer
 * record of that key), the read fails rather than leave the key out; so does a clean that ended
 * past the split's end during the read (it may have removed a cleaned row whose newer record lies
 * past the end), seen by reading the checkpoint again at the end.
 *
 * <p>A tiered partition's split whose range starts below the lake end ({@link UnionRange}) reads
 * the lake's part first: the first pass takes every key of it (the lake is all dirty, and so is
 * the log after it: a cleaned log row is one of its key in the log only), then the log's dirty
 * part; the second pass keeps a lake row when its offset is one of the kept ones (a binary search:
 * a lake file's rows need not be in offset order) and it is not a dropped tombstone (a value
 * column the file lacks is null), through {@link LakePartitionReader}, then reads the log as
 * above. A batch is valid until the next call to next(). Not thread-safe.
 */
public final class LatestPerKeyReader implements PartitionReader<ColumnarBatch> {
    private final BufferAllocator allocator = SharedAllocator.child("kstream-latest-per-key");
    private final OffsetRange split; // the log's part (null: the range ends in the lake)
    private final StructType schema;
    private final List<LakeRange> lake;
    private final List<String> valueList;
    private int lakeIndex;
    private LakePartitionReader lakeReader;
    private final boolean includeTombstones;
    private final Set<String> valueColumns;
    private final long[] winners;
    private final LatestOffsets latest;
    private final long dirtyFrom;
    private final long cleanedAtStart;
    private final VisibleFrames frames;
    private final BatchAssembler assembler;
    private final List<VectorSchemaRoot> slices = new ArrayList<>();
    private int winner; // the next kept offset to find
    private boolean[] keep = new boolean[0];
    private boolean inFrame;
    private int rows;
    private int position; // the next row of the current frame to look at
    private ColumnarBatch batch;

    /** {@code valueColumns}: the topic's value columns ("value", or a typed topic's own). */
    public LatestPerKeyReader(OffsetRange split, StructType schema, Set<String> valueColumns, boolean failOnDataLoss,
                              boolean verifyChecksums, boolean includeTombstones) {
        this(split.tp, List.of(), split, schema, valueColumns, failOnDataLoss, verifyChecksums, includeTombstones);
    }

    /** A tiered partition's range of lake and log. */
    public LatestPerKeyReader(UnionRange split, StructType schema, Set<String> valueColumns, boolean failOnDataLoss,
                              boolean verifyChecksums, boolean includeTombstones) {
        this(split.tp, split.lake, split.log, schema, valueColumns, failOnDataLoss, verifyChecksums, includeTombstones);
    }

    private LatestPerKeyReader(TopicPartition tp, List<LakeRange> lake, OffsetRange log, StructType schema,
                               Set<String> valueColumns, boolean failOnDataLoss, boolean verifyChecksums,
                               boolean includeTombstones) {
        this.split = log;
        this.schema = schema;
        this.lake = lake;
        this.includeTombstones = includeTombstones;
        this.valueColumns = valueColumns;
        this.valueList = new ArrayList<>(valueColumns);
        this.assembler = new BatchAssembler(tp, schema);
        Set<String> decoded = new HashSet<>(assembler.storedColumns());
        decoded.addAll(valueColumns);
        decoded.add("key");
        try {
            this.cleanedAtStart = log == null ? -1 : checkpoint(log);
            // below a lake the whole log part is dirty: its cleaned rows are one per key in the log only
            this.dirtyFrom = log == null ? Long.MAX_VALUE
                : lake.isEmpty() ? LatestOffsets.dirtyFrom(log, verifyChecksums) : log.start;
            this.latest = LatestOffsets.of(tp, lake, log, dirtyFrom, failOnDataLoss, verifyChecksums, allocator);
            this.winners = latest.winners();
            if (log != null) {
                while (winner < winners.length && winners[winner] < log.start) winner++; // the lake's: found by search
            }
            this.frames = log == null ? null : new VisibleFrames(log, decoded, failOnDataLoss, verifyChecksums, allocator);
        } catch (RuntimeException e) {
            assembler.close();
            allocator.close();
            throw e;
        }
    }

    /** The next batch of the lake's part (null when it is done). */
    private ColumnarBatch nextFromLake() {
        while (lakeIndex < lake.size()) {
            if (lakeReader == null) {
                lakeReader = new LakePartitionReader(lake.get(lakeIndex), schema, valueList, this::keepLakeRow);
            }
            try {
                if (lakeReader.next()) return lakeReader.get();
                lakeReader.close();
            } catch (java.io.IOException e) {
                throw new KStreamException(KStreamException.Kind.KStreamError, "reading " + lake.get(lakeIndex)
                    + ": " + e, e);
            }
            lakeReader = null;
            lakeIndex++;
        }
        return null;
    }

    /** A lake row is kept when it is its key's latest record (its offset a kept one) and not a dropped tombstone. */
    private boolean keepLakeRow(long offset, ColumnVector[] values, int row) {
        if (java.util.Arrays.binarySearch(winners, offset) < 0) return false;
        if (includeTombstones || values.length == 0) return true;
        for (ColumnVector v : values) if (v != null && !v.isNullAt(row)) return true;
        return false; // every value column null: a tombstone
    }

    @Override
    public boolean next() {
        releaseSlices();
        batch = null;
        if (lakeIndex < lake.size()) {
            batch = nextFromLake();
            if (batch != null) return true;
        }
        if (frames == null) return false;
        while (true) {
            if (inFrame) {
                while (position < rows && !keep[position]) position++;
                if (position < rows) {
                    int first = position;
                    while (position < rows && keep[position]) position++;
                    batch = build(first, position - first);
                    return true;
                }
                inFrame = false;
            }
            if (!frames.next()) {
                if (winner < winners.length) throw rewritten(winners[winner]);
                long cleanedNow = checkpoint(split);
                if (cleanedNow != cleanedAtStart && (cleanedNow > split.end || cleanedNow < cleanedAtStart)) {
                    throw new KStreamException(KStreamException.Kind.KStreamError, split + ": the log cleaner "
                        + "cleaned the partition to offset " + cleanedNow + " (past the read's end) during the read, "
                        + "and may have removed a key's latest record below the end; run the read again");
                }
                return false;
            }
            mark();
            inFrame = true;
            position = 0;
        }
    }

    /** keep[r]: row r of the current frame is its key's latest record (and not a dropped tombstone). */
    private void mark() {
        rows = frames.count();
        if (keep.length < rows) keep = new boolean[Math.max(rows, 2 * keep.length)];
        List<FieldVector> values = new ArrayList<>();
        for (FieldVector v : frames.root().getFieldVectors()) if (valueColumns.contains(v.getName())) values.add(v);
        if (frames.rowOffset(0) < dirtyFrom) latest.load(split.tp, frames.root().getVector("key"), rows, frames);
        for (int r = 0; r < rows; r++) {
            long offset = frames.rowOffset(r);
            if (offset < dirtyFrom) { // cleaned: its key's only record below dirtyFrom
                keep[r] = !latest.containsRow(r) && (includeTombstones || !tombstone(values, r));
                continue;
            }
            keep[r] = false;
            if (winner >= winners.length || winners[winner] > offset) continue; // a superseded record
            if (winners[winner] < offset) throw rewritten(winners[winner]);
            winner++;
            keep[r] = includeTombstones || !tombstone(values, r);
        }
    }

    private ColumnarBatch build(int first, int n) {
        VectorSchemaRoot root = frames.root();
        if ((first != 0 || n != rows) && !root.getFieldVectors().isEmpty()) {
            root = root.slice(first, n);
            slices.add(root);
        }
        return assembler.build(frames.frame(), frames.rows(), frames.firstRow() + first, n, root);
    }

    /**
     * The cleaner's rule: every value column the frame holds null at {@code row} (a bytes topic's
     * one column, value; a frame holding none of them, a bytes frame stored without values, has no
     * tombstone, as Python's frame_rewrite.tombstones says).
     */
    private static boolean tombstone(List<FieldVector> values, int row) {
        if (values.isEmpty()) return false;
        for (FieldVector v : values) if (!v.isNull(row)) return false;
        return true;
    }

    /** The replica's cleaner-offset-checkpoint now (-1: none; a damaged one fails the read). */
    private static long checkpoint(OffsetRange split) {
        return CleanerCheckpoint.read(split.replicaDir);
    }

    private KStreamException rewritten(long offset) {
        return new KStreamException(KStreamException.Kind.KStreamError, split + ": the latest record of a key (offset "
            + offset + ") was gone when read a second time: the log cleaner rewrote the partition during the read "
            + "(a newer record of that key arrived after the read was planned); run the read again");
    }

    private void releaseSlices() {
        for (VectorSchemaRoot slice : slices) slice.close();
        slices.clear();
    }

    @Override
    public ColumnarBatch get() {
        return batch;
    }

    @Override
    public void close() {
        batch = null;
        releaseSlices();
        LakePartitionReader open = lakeReader;
        lakeReader = null;
        try {
            if (open != null) open.close();
        } catch (java.io.IOException e) {
            throw new KStreamException(KStreamException.Kind.KStreamError, "closing a lake file's reader: " + e, e);
        } finally {
            if (frames != null) frames.close();
            assembler.close();
            allocator.close();
        }
    }
}

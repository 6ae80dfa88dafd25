package io.kstream.spark.format;

import io.kstream.spark.error.KStreamException;
import java.util.Set;
import java.util.TreeSet;
import org.apache.arrow.vector.UInt4Vector;
import org.apache.arrow.vector.VectorSchemaRoot;

/**
 * The offset of each row of a decoded frame, the one place the JVM reader turns a row index into
 * an offset (as Python's output.StoredBatch.row_offsets). A version 1 frame is dense: row
 * {@code i} has offset {@code baseOffset + i}. A version 2 (sparse) frame the log cleaner
 * rewrote carries {@link Format#OFFSET_DELTA_COLUMN}: row {@code i} has offset
 * {@code baseOffset + delta[i]}, strictly increasing and below the frame's span end
 * ({@code nextOffset}); the offsets between are gaps, not data loss (docs/FORMAT.md, "Cleaned
 * frames"). Immutable; decode the frame whole (unsliced) for it: a slice's row 0 is not the
 * frame's.
 */
public final class FrameRows {
    private final long baseOffset;
    private final int count;
    private final long[] offsets; // sparse frames only: each row's offset

    private FrameRows(long baseOffset, int count, long[] offsets) {
        this.baseOffset = baseOffset;
        this.count = count;
        this.offsets = offsets;
    }

    /** The stored columns to decode from {@code header}'s frame: a sparse frame's deltas too. */
    public static Set<String> columns(FrameHeader header, Set<String> wanted) {
        if (!header.isSparse() || wanted == null || wanted.contains(Format.OFFSET_DELTA_COLUMN)) return wanted;
        Set<String> out = new TreeSet<>(wanted);
        out.add(Format.OFFSET_DELTA_COLUMN);
        return out;
    }

    /**
     * The rows of {@code frame} decoded into {@code root} (with {@link #columns}). A sparse frame
     * whose delta column is missing, null, not increasing or past its span is a CorruptBatchError.
     */
    public static FrameRows of(Frame frame, VectorSchemaRoot root) {
        FrameHeader h = frame.header;
        if (!h.isSparse()) return new FrameRows(h.baseOffset, root.getRowCount(), null);
        if (!(root.getVector(Format.OFFSET_DELTA_COLUMN) instanceof UInt4Vector)) {
            throw KStreamException.corrupt("sparse frame without a uint32 " + Format.OFFSET_DELTA_COLUMN + " column",
                frame.path, frame.position, h.baseOffset);
        }
        UInt4Vector deltas = (UInt4Vector) root.getVector(Format.OFFSET_DELTA_COLUMN);
        long[] offsets = new long[root.getRowCount()];
        long previous = -1;
        for (int i = 0; i < offsets.length; i++) {
            long delta = deltas.isNull(i) ? -1 : deltas.getValueAsLong(i);
            if (delta <= previous || delta >= h.recordCount) {
                throw KStreamException.corrupt("sparse frame row " + i + " has offset delta " + delta + " (deltas must "
                    + "increase, below the span of " + h.recordCount + ")", frame.path, frame.position, h.baseOffset);
            }
            previous = delta;
            offsets[i] = h.baseOffset + delta;
        }
        return new FrameRows(h.baseOffset, offsets.length, offsets);
    }

    public int count() {
        return count;
    }

    /** The offset of row {@code row} (0 <= row < count). */
    public long offset(int row) {
        return offsets == null ? baseOffset + row : offsets[row];
    }

    /** The first row whose offset is at or after {@code offset} ({@link #count} when none is). */
    public int firstAtOrAfter(long offset) {
        if (offsets == null) return (int) Math.max(0, Math.min(count, offset - baseOffset));
        int low = 0;
        int high = count;
        while (low < high) {
            int mid = (low + high) >>> 1;
            if (offset(mid) < offset) low = mid + 1;
            else high = mid;
        }
        return low;
    }
}

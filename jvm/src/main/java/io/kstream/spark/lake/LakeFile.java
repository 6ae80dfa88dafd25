package io.kstream.spark.lake;

import java.io.Serializable;

/**
 * One data file of a tier table at a pinned version: its absolute local path, the kstream
 * partition it belongs to (its Delta partition value), and the offsets it holds as the commit's
 * statistics say ({@link #UNKNOWN} when the add action carries none: the file is read and
 * filtered, never pruned), and the largest {@code timestamp} (microseconds, as Delta stores it;
 * {@link #NO_TIMESTAMP} when unknown) for offset-for-time lookups. Serializable: a split carries
 * it to an executor.
 */
public final class LakeFile implements Serializable {
    private static final long serialVersionUID = 1L;
    public static final long UNKNOWN = -1;
    /** maxTimestampUs when the statistics give none: the file is read, never skipped. */
    public static final long NO_TIMESTAMP = Long.MIN_VALUE;

    public final String path;
    public final int partition;
    public final long minOffset;
    public final long maxOffset;
    public final long maxTimestampUs;

    public LakeFile(String path, int partition, long minOffset, long maxOffset) {
        this(path, partition, minOffset, maxOffset, NO_TIMESTAMP);
    }

    public LakeFile(String path, int partition, long minOffset, long maxOffset, long maxTimestampUs) {
        this.path = path;
        this.partition = partition;
        this.minOffset = minOffset;
        this.maxOffset = maxOffset;
        this.maxTimestampUs = maxTimestampUs;
    }

    /** Whether a record at or after {@code timestampUs} may be in the file: false only when its statistics say not. */
    public boolean mayReach(long timestampUs) {
        return maxTimestampUs == NO_TIMESTAMP || maxTimestampUs >= timestampUs;
    }

    /** Whether the file may hold offsets in [start, end): false only when its statistics say it cannot. */
    public boolean mayHold(long start, long end) {
        if (minOffset == UNKNOWN || maxOffset == UNKNOWN) return true;
        return minOffset < end && maxOffset >= start;
    }

    @Override
    public String toString() {
        return path + " (partition " + partition + ", offsets "
            + (minOffset == UNKNOWN ? "unknown" : minOffset + ".." + maxOffset) + ")";
    }
}

package io.kstream.spark.lake;

import java.io.Serializable;

/**
 * One data file of a tier table at a pinned version: its absolute local path, the kstream
 * partition it belongs to (its Delta partition value), and the offsets it holds as the commit's
 * statistics say ({@link #UNKNOWN} when the add action carries none: the file is read and
 * filtered, never pruned). Serializable: a split carries it to an executor.
 */
public final class LakeFile implements Serializable {
    private static final long serialVersionUID = 1L;
    public static final long UNKNOWN = -1;

    public final String path;
    public final int partition;
    public final long minOffset;
    public final long maxOffset;

    public LakeFile(String path, int partition, long minOffset, long maxOffset) {
        this.path = path;
        this.partition = partition;
        this.minOffset = minOffset;
        this.maxOffset = maxOffset;
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

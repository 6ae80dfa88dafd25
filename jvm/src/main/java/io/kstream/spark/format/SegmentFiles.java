package io.kstream.spark.format;

import java.io.File;
import java.util.Arrays;

/**
 * The segment files of one replica dir: their base offsets, sorted, and each file's path.
 * Lists the directory; creates nothing. A missing directory has no segments.
 */
public final class SegmentFiles {
    private SegmentFiles() {}

    public static long[] bases(String replicaDir) {
        String[] names = new File(replicaDir).list();
        if (names == null) return new long[0];
        return Arrays.stream(names).mapToLong(Format::parseSegmentFileName).filter(b -> b >= 0).sorted().toArray();
    }

    public static String path(String replicaDir, long base, String suffix) {
        return replicaDir + File.separator + Format.segmentFileName(base, suffix);
    }

    /** Index into {@code bases} of the segment that would hold {@code offset} (-1: before the first). */
    public static int segmentFor(long[] bases, long offset) {
        int i = Arrays.binarySearch(bases, offset);
        return i >= 0 ? i : -i - 2;
    }
}

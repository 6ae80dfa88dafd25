package io.kstream.spark.format;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * A segment's sparse .index or .timeindex, read whole (they are small). Both are hints: the
 * caller checks that the frame an offset entry points at starts at that offset, and falls back
 * to the segment's start otherwise. A missing file, or a tail of zeros (a preallocated or torn
 * end), holds no entries from there on.
 */
public final class SparseIndex {
    private final long baseOffset;
    private final ByteBuffer entries;
    private final int count;
    private final boolean timeIndex;

    private SparseIndex(long baseOffset, ByteBuffer entries, int count, boolean timeIndex) {
        this.baseOffset = baseOffset;
        this.entries = entries;
        this.count = count;
        this.timeIndex = timeIndex;
    }

    public static SparseIndex offsets(String replicaDir, long base) throws IOException {
        return load(SegmentFiles.path(replicaDir, base, Format.OFFSET_INDEX_SUFFIX), base, false);
    }

    public static SparseIndex times(String replicaDir, long base) throws IOException {
        return load(SegmentFiles.path(replicaDir, base, Format.TIME_INDEX_SUFFIX), base, true);
    }

    private static SparseIndex load(String path, long base, boolean timeIndex) throws IOException {
        byte[] raw;
        try {
            raw = Files.readAllBytes(Path.of(path));
        } catch (NoSuchFileException e) {
            raw = new byte[0];
        }
        ByteBuffer b = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN);
        int size = timeIndex ? Format.TIME_INDEX_ENTRY_SIZE : Format.OFFSET_INDEX_ENTRY_SIZE;
        int count = 0;
        long last = -1;
        for (int i = 0; i + size <= raw.length; i += size) {
            long relative = Integer.toUnsignedLong(b.getInt(timeIndex ? i + 8 : i));
            long position = timeIndex ? 0 : Integer.toUnsignedLong(b.getInt(i + 4));
            if ((relative <= last && !timeIndex) || (relative < last && timeIndex)
                    || (count > 0 && relative == 0 && position == 0)) {
                break; // not increasing: zeros of a preallocated or torn tail
            }
            last = relative;
            count++;
        }
        return new SparseIndex(base, b, count, timeIndex);
    }

    /** Offset index: (offset, position) of the last entry at or before {@code offset}, else (base, 0). */
    public long[] lookup(long offset) {
        assert !timeIndex;
        int lo = 0;
        int hi = count - 1;
        long[] found = {baseOffset, 0};
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            long entryOffset = baseOffset + Integer.toUnsignedLong(entries.getInt(mid * Format.OFFSET_INDEX_ENTRY_SIZE));
            if (entryOffset <= offset) {
                found = new long[] {entryOffset,
                    Integer.toUnsignedLong(entries.getInt(mid * Format.OFFSET_INDEX_ENTRY_SIZE + 4))};
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return found;
    }

    /** Offset index: its last entry, or (base, 0). */
    public long[] lastEntry() {
        return lookup(Long.MAX_VALUE);
    }

    /**
     * Time index: the offset to start scanning at for records at or after {@code timestampMs}:
     * the last entry whose timestamp (the largest before that frame) is below it, else the base.
     */
    public long startFor(long timestampMs) {
        assert timeIndex;
        long start = baseOffset;
        for (int i = 0; i < count; i++) {
            int at = i * Format.TIME_INDEX_ENTRY_SIZE;
            if (entries.getLong(at) >= timestampMs) break;
            start = baseOffset + Integer.toUnsignedLong(entries.getInt(at + 8));
        }
        return start;
    }
}

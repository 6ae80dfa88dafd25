package io.kstream.spark.read;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.CleanerCheckpoint;
import io.kstream.spark.format.Frame;
import io.kstream.spark.format.LogReader;
import io.kstream.spark.lake.TierTable;
import java.util.Arrays;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * The first pass of a latestPerKey read: the offset of each key's latest visible record in the
 * dirty part of a split, found by walking {@link VisibleFrames} with the key column alone decoded
 * (so aborted transactions, markers and fillers never count). The dirty part starts at
 * {@link #dirtyFrom}: below it the log cleaner has already left at most one record per key (see
 * there), so the pass reads only [dirtyFrom, end). {@link #winners} are those offsets, sorted;
 * {@link #containsRow} tells the second pass whether a cleaned row's key has a newer record in
 * the dirty part. A record without a key is an InvalidRecordError naming its offset, in the words
 * of Python's kstream.source.latest_per_key.keyless_message.
 *
 * <p>The keys live in an open-addressing hash table of primitive arrays (each distinct key's
 * bytes once, in one growing byte arena; no object per key), so a partition of millions of keys
 * costs about its key bytes plus 24 bytes a key. Not thread-safe.
 */
final class LatestOffsets {
    private static final int MAX_KEY_BYTES = Integer.MAX_VALUE - 64;

    // slot: (key hash << 32) | (entry index + 1); 0: empty. The hash in the slot spares a probe a
    // second memory access for a slot holding another key.
    private long[] slots;
    private long[] offsets = new long[1024];
    private int[] keyStarts = new int[1024];
    private int[] keyLengths = new int[1024];
    private byte[] arena = new byte[1 << 16];
    private int arenaUsed;
    private int size;
    private byte[] frameKeys = new byte[1 << 16]; // the current frame's key bytes, copied at once
    private ArrowBuf frameKeyOffsets; // the current frame's key offsets (into its data buffer)
    private int frameKeyBase;
    private long[] winners;

    private LatestOffsets(long expected) {
        int capacity = 1 << 10;
        while (capacity < Math.min(expected * 2, 1L << 28)) capacity <<= 1;
        slots = new long[capacity];
    }

    static String keylessMessage(TopicPartition tp, long offset) {
        return tp + ": the record at offset " + offset + " has no key, so latestPerKey=true cannot tell whose "
            + "latest value it is; read the topic without latestPerKey (and filter keyless records out), or write "
            + "keyed records (a compacted topic refuses keyless ones)";
    }

    /**
     * Where the dirty part of {@code split} starts: the cleaner's end offset (the replica's
     * cleaner-offset-checkpoint, written only once the cleaned segments are swapped in and
     * fsynced), moved back to the start of the frame holding it (the cleaner rewrites only frames
     * wholly below its end), within [start, end]. Every visible record below it is the latest of
     * its key below the cleaner's end: the clean kept one record per key there, removed aborted
     * records, and never cleaned past the LSO, so no transaction open at the clean has records
     * there. The split's start when the partition was never cleaned (no checkpoint; a damaged one is
     * a KStreamError naming it: {@link CleanerCheckpoint#read}).
     */
    static long dirtyFrom(OffsetRange split, boolean verifyChecksums) {
        long cleaned = CleanerCheckpoint.read(split.replicaDir); // a damaged one fails the read, naming it
        if (cleaned <= split.start) return split.start;
        long from = cleaned;
        try (LogReader reader = new LogReader(split.replicaDir, verifyChecksums)) {
            reader.seek(cleaned);
            Frame frame = reader.next(Long.MAX_VALUE);
            if (frame != null && frame.header.baseOffset < cleaned) from = frame.header.baseOffset;
        } catch (KStreamException e) {
            return split.start; // the log moved under us (retention): read it all
        }
        return Math.max(split.start, Math.min(from, split.end));
    }

    /** The latest record of each key of {@code split} in [dirtyFrom, end). */
    static LatestOffsets of(OffsetRange split, long dirtyFrom, boolean failOnDataLoss, boolean verifyChecksums,
                            BufferAllocator allocator) {
        return of(split.tp, List.of(), split, dirtyFrom, failOnDataLoss, verifyChecksums, allocator);
    }

    /**
     * The latest record of each key of a tiered partition's lake part (every row of {@code lake}
     * in its range: the lake is all dirty) and of {@code log} (null: none) in [dirtyFrom, end).
     */
    static LatestOffsets of(TopicPartition tp, List<LakeRange> lake, OffsetRange log, long dirtyFrom,
                            boolean failOnDataLoss, boolean verifyChecksums, BufferAllocator allocator) {
        long expected = (log == null ? 0 : log.end - dirtyFrom) + (lake.isEmpty() ? 0 : lake.get(0).end - lake.get(0).start);
        // at most one key per offset: size the table for the dirty part (up to a bound) so it rarely grows
        LatestOffsets table = new LatestOffsets(Math.min(expected, 1L << 22));
        for (LakeRange file : lake) table.loadLake(tp, file);
        if (log != null && dirtyFrom < log.end) {
            OffsetRange split = log;
            OffsetRange dirty = new OffsetRange(split.tp, split.replicaDir, dirtyFrom, split.end, split.transactions);
            try (VisibleFrames frames = new VisibleFrames(dirty, java.util.Set.of("key"), failOnDataLoss,
                    verifyChecksums, allocator)) {
                while (frames.next()) {
                    FieldVector vector = frames.root().getVector("key");
                    int n = frames.count();
                    table.load(split.tp, vector, n, frames);
                    int start = 0;
                    for (int r = 0; r < n; r++) {
                        int next = table.keyEnd(r);
                        table.put(start, next - start, frames.rowOffset(r));
                        start = next;
                    }
                }
            }
        }
        table.winners = Arrays.copyOf(table.offsets, table.size);
        Arrays.sort(table.winners);
        return table;
    }

    /**
     * Every key of one lake file's rows in its range, with its offset (the rows need not be in
     * offset order: a key keeps its largest offset). A keyless row is an InvalidRecordError; a
     * file with a row whose offset is null is a KStreamError in {@link LakeRowError}'s words
     * (the nulls counted to the end of the file), never a row read as offset 0.
     */
    private void loadLake(TopicPartition tp, LakeRange range) {
        String where = range.tableDir + " (Delta version " + range.tableVersion + ")";
        long nullOffsets = 0;
        try (LakeColumns columns = new LakeColumns(where, range.file, List.of(TierTable.OFFSET_COLUMN, "key"))) {
            while (columns.next()) {
                ColumnarBatch batch = columns.batch();
                ColumnVector offsets = batch.column(0);
                ColumnVector keys = batch.column(1);
                nullOffsets += offsets.numNulls();
                if (nullOffsets > 0) continue; // counted to the end of the file, then refused
                for (int r = 0; r < batch.numRows(); r++) {
                    long offset = offsets.getLong(r);
                    if (offset < range.start || offset >= range.end) continue;
                    if (keys.isNullAt(r)) {
                        throw new KStreamException(KStreamException.Kind.InvalidRecordError, keylessMessage(tp, offset));
                    }
                    byte[] key = keys.getBinary(r);
                    if (frameKeys.length < key.length) frameKeys = new byte[Math.max(key.length, 2 * frameKeys.length)];
                    System.arraycopy(key, 0, frameKeys, 0, key.length);
                    put(0, key.length, offset);
                }
            }
        }
        if (nullOffsets > 0) {
            throw LakeRowError.of(tp, range.tableDir, range.tableVersion, range.file.path, nullOffsets,
                TierTable.OFFSET_COLUMN);
        }
    }

    /** The sorted offsets of the latest record of each key in the dirty part. */
    long[] winners() {
        return winners;
    }

    /**
     * Load a frame's key column (the second pass calls it for a frame below dirtyFrom before
     * {@link #containsRow}). A null key is an InvalidRecordError naming its offset.
     */
    void load(TopicPartition tp, FieldVector vector, int n, VisibleFrames frames) {
        if (!(vector instanceof VarBinaryVector keys) || keys.getNullCount() > 0) {
            int r = 0;
            while (vector instanceof VarBinaryVector keys && r < n && !keys.isNull(r)) r++;
            throw new KStreamException(KStreamException.Kind.InvalidRecordError, keylessMessage(tp, frames.rowOffset(r)));
        }
        frameKeyOffsets = keys.getOffsetBuffer();
        if (n == 0) return;
        frameKeyBase = frameKeyOffsets.getInt(0);
        int total = frameKeyOffsets.getInt((long) n * VarBinaryVector.OFFSET_WIDTH) - frameKeyBase;
        if (frameKeys.length < total) frameKeys = new byte[Math.max(total, 2 * frameKeys.length)];
        keys.getDataBuffer().getBytes(frameKeyBase, frameKeys, 0, total);
    }

    /** Where row r's key ends in frameKeys (it starts where row r - 1's ends). */
    private int keyEnd(int r) {
        return frameKeyOffsets.getInt((long) (r + 1) * VarBinaryVector.OFFSET_WIDTH) - frameKeyBase;
    }

    /** Whether row r of the loaded frame has a key with a record in the dirty part. */
    boolean containsRow(int r) {
        if (size == 0) return false;
        int start = frameKeyOffsets.getInt((long) r * VarBinaryVector.OFFSET_WIDTH) - frameKeyBase;
        int length = keyEnd(r) - start;
        int hash = hash(frameKeys, start, length);
        int mask = slots.length - 1;
        for (int slot = hash & mask; ; slot = (slot + 1) & mask) {
            long taken = slots[slot];
            if (taken == 0) return false;
            int entry = (int) taken - 1;
            if ((int) (taken >>> 32) == hash && keyLengths[entry] == length
                    && Arrays.equals(arena, keyStarts[entry], keyStarts[entry] + length, frameKeys, start, start + length)) {
                return true;
            }
        }
    }

    /** The key at frameKeys[start, start + length) has its latest record at {@code offset}. */
    private void put(int start, int length, long offset) {
        int hash = hash(frameKeys, start, length);
        int mask = slots.length - 1;
        for (int slot = hash & mask; ; slot = (slot + 1) & mask) {
            long taken = slots[slot];
            if (taken == 0) {
                slots[slot] = ((long) hash << 32) | (add(start, length, offset) + 1L);
                if (size * 2 > slots.length) grow();
                return;
            }
            int entry = (int) taken - 1;
            if ((int) (taken >>> 32) == hash && keyLengths[entry] == length
                    && Arrays.equals(arena, keyStarts[entry], keyStarts[entry] + length, frameKeys, start, start + length)) {
                offsets[entry] = Math.max(offsets[entry], offset); // the log ascends; a lake file need not
                return;
            }
        }
    }

    private int add(int start, int length, long offset) {
        if (size == offsets.length) {
            int capacity = 2 * size;
            offsets = Arrays.copyOf(offsets, capacity);
            keyStarts = Arrays.copyOf(keyStarts, capacity);
            keyLengths = Arrays.copyOf(keyLengths, capacity);
        }
        if ((long) arenaUsed + length > arena.length) {
            long wanted = Math.max((long) arenaUsed + length, 2L * arena.length);
            if (wanted > MAX_KEY_BYTES) {
                throw new KStreamException(KStreamException.Kind.KStreamError, "latestPerKey: the distinct keys of one "
                    + "partition take more than 2 GB; read fewer offsets (endingOffsets) or use more partitions");
            }
            arena = Arrays.copyOf(arena, (int) Math.min(wanted, MAX_KEY_BYTES));
        }
        System.arraycopy(frameKeys, start, arena, arenaUsed, length);
        offsets[size] = offset;
        keyStarts[size] = arenaUsed;
        keyLengths[size] = length;
        arenaUsed += length;
        return size++;
    }

    private void grow() {
        long[] bigger = new long[slots.length * 2];
        int mask = bigger.length - 1;
        for (long taken : slots) {
            if (taken == 0) continue;
            int slot = (int) (taken >>> 32) & mask;
            while (bigger[slot] != 0) slot = (slot + 1) & mask;
            bigger[slot] = taken;
        }
        slots = bigger;
    }

    private static int hash(byte[] bytes, int start, int length) {
        int h = 0x9747b28c;
        for (int i = start; i < start + length; i++) h = 31 * h + bytes[i];
        h ^= h >>> 16; // spread the bits: the table takes the low ones
        h *= 0x85ebca6b;
        h ^= h >>> 13;
        return h;
    }
}

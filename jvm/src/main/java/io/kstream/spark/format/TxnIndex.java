package io.kstream.spark.format;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * One segment's {@code <base offset>.txnindex}: an entry for every transactional frame (data or
 * control) of the segment, 24 bytes each (layout in {@link Format}). The trusted part of the
 * file ends at the first entry that does not check (CRC-32C mismatch, reserved bytes not zero,
 * unknown kind, an offset that does not increase: a torn append) or at a partial entry, as
 * format.py's unpack_txn_entries and docs/FORMAT.md "Transaction index" say; an entry outside
 * its segment ends it too. {@link #whole} is false when that happened or the file is missing
 * (a missing file trusts nothing of its segment: it was lost, it never means "no transactions").
 */
public final class TxnIndex {
    /** One entry: kind (TXN_DATA, TXN_COMMIT, TXN_ABORT), producer id, the frame's base offset. */
    public static final class Entry {
        public final int kind;
        public final long producerId;
        public final long offset;

        public Entry(int kind, long producerId, long offset) {
            this.kind = kind;
            this.producerId = producerId;
            this.offset = offset;
        }
    }

    public final List<Entry> entries;
    /** False when the file is missing (lost, or written by an older version) or torn. */
    public final boolean whole;

    private TxnIndex(List<Entry> entries, boolean whole) {
        this.entries = entries;
        this.whole = whole;
    }

    /**
     * The trusted entries of segment {@code base}'s file; {@code nextBase} is the next segment's
     * base (Long.MAX_VALUE for the last): an entry outside [base, nextBase) ends the trusted part.
     */
    public static TxnIndex read(String replicaDir, long base, long nextBase) throws IOException {
        byte[] raw;
        try {
            raw = Files.readAllBytes(Path.of(SegmentFiles.path(replicaDir, base, Format.TXN_INDEX_SUFFIX)));
        } catch (NoSuchFileException e) {
            return new TxnIndex(List.of(), false);
        }
        ByteBuffer b = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN);
        List<Entry> entries = new ArrayList<>();
        int at = 0;
        for (; at + Format.TXN_INDEX_ENTRY_SIZE <= raw.length; at += Format.TXN_INDEX_ENTRY_SIZE) {
            int kind = Byte.toUnsignedInt(b.get(at + Format.TXN_POS_KIND));
            long offset = b.getLong(at + Format.TXN_POS_OFFSET);
            boolean reservedZero = b.get(at + 1) == 0 && b.get(at + 2) == 0 && b.get(at + 3) == 0;
            boolean increasing = entries.isEmpty() || offset > entries.get(entries.size() - 1).offset;
            if (Format.crc32c(b, at, at + Format.TXN_POS_CRC) != b.getInt(at + Format.TXN_POS_CRC) || !reservedZero
                    || kind < Format.TXN_DATA || kind > Format.TXN_ABORT || offset < base || offset >= nextBase
                    || !increasing) {
                return new TxnIndex(entries, false);
            }
            entries.add(new Entry(kind, b.getLong(at + Format.TXN_POS_PRODUCER_ID), offset));
        }
        return new TxnIndex(entries, at == raw.length);
    }
}

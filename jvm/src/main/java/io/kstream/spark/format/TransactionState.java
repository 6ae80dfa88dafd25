package io.kstream.spark.format;

import io.kstream.spark.error.KStreamException;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;

/**
 * A partition's transactions below its high watermark, derived with the rule both readers share
 * (brief of issue 14, docs/FORMAT.md "Transaction index"): entries in offset order; a DATA entry
 * of producer P opens P's transaction if none is open; COMMIT or ABORT closes it, an ABORT
 * giving the aborted range (P, first offset, marker offset). LSO = min(first offset of the open
 * transactions, HW). Entries at offsets at or past the recovery point's next offset are not
 * trusted (a power cut may have lost them while frames survived): those are derived from the
 * frame headers in [recovery point, HW) instead (a control frame's kind from its one-row
 * payload). A missing or unreadable recovery point trusts no entry; a missing or torn .txnindex
 * trusts none of its segment's entries: that segment and the later ones are derived from frames
 * (docs/FORMAT.md allows trusting the entries before a torn one and later whole files; deriving
 * them instead gives the same answer). Immutable, serializable.
 */
public final class TransactionState implements Serializable {
    /** Transactional data frames of {@code producerId} in [first, marker) were aborted. */
    public static final class AbortedRange implements Serializable {
        public final long producerId;
        public final long first;
        public final long marker;

        AbortedRange(long producerId, long first, long marker) {
            this.producerId = producerId;
            this.first = first;
            this.marker = marker;
        }
    }

    public final long lastStableOffset;
    public final List<AbortedRange> aborted;

    private TransactionState(long lastStableOffset, List<AbortedRange> aborted) {
        this.lastStableOffset = lastStableOffset;
        this.aborted = aborted;
    }

    /** Whether a transactional data frame is in an aborted range. */
    public boolean aborted(FrameHeader header) {
        for (AbortedRange r : aborted) {
            if (r.producerId == header.producerId && r.first <= header.baseOffset && header.baseOffset < r.marker) {
                return true;
            }
        }
        return false;
    }

    /** Whether read_committed shows the records of this frame (never a control frame). */
    public boolean visibleCommitted(FrameHeader header) {
        return !header.isControl() && !(header.isTransactional() && aborted(header));
    }

    public static TransactionState derive(String replicaDir, long highWatermark, boolean verifyChecksums)
            throws IOException {
        long[] bases = SegmentFiles.bases(replicaDir);
        RecoveryPoint point = RecoveryPoint.read(replicaDir);
        long deriveFrom = point.state == RecoveryPoint.State.PRESENT ? point.nextOffset : 0;
        List<TxnIndex.Entry> trusted = new ArrayList<>();
        for (int i = 0; i < bases.length && bases[i] < deriveFrom; i++) {
            long next = i + 1 < bases.length ? bases[i + 1] : Long.MAX_VALUE;
            TxnIndex index = TxnIndex.read(replicaDir, bases[i], next);
            if (!index.whole) {
                // Missing or torn: derive from this segment's start (the frames are the truth;
                // later segments too, which costs a header walk and never changes the answer).
                deriveFrom = bases[i];
                break;
            }
            trusted.addAll(index.entries);
        }
        List<TxnIndex.Entry> entries = new ArrayList<>();
        for (TxnIndex.Entry e : trusted) if (e.offset < deriveFrom && e.offset < highWatermark) entries.add(e);
        entries.sort((a, b) -> Long.compare(a.offset, b.offset));
        if (bases.length > 0 && deriveFrom < highWatermark) entries.addAll(fromFrames(replicaDir,
            Math.max(deriveFrom, bases[0]), highWatermark, verifyChecksums));
        Map<Long, Long> open = new HashMap<>();
        List<AbortedRange> aborted = new ArrayList<>();
        for (TxnIndex.Entry e : entries) {
            if (e.kind == Format.TXN_DATA) {
                open.putIfAbsent(e.producerId, e.offset);
            } else {
                Long first = open.remove(e.producerId);
                if (first != null && e.kind == Format.TXN_ABORT) aborted.add(new AbortedRange(e.producerId, first, e.offset));
            }
        }
        long lso = highWatermark;
        for (long first : open.values()) lso = Math.min(lso, first);
        return new TransactionState(lso, List.copyOf(aborted));
    }

    /** Entries for the transactional frames in [from, to), read from the frames themselves. */
    private static List<TxnIndex.Entry> fromFrames(String replicaDir, long from, long to, boolean verifyChecksums) {
        List<TxnIndex.Entry> out = new ArrayList<>();
        // Headers are always checked; a payload is read (and its checksum checked) only for
        // control frames, so deriving from a long unflushed stretch costs a header walk.
        try (LogReader reader = new LogReader(replicaDir, false);
             BufferAllocator allocator = SharedAllocator.child("kstream-transaction-scan")) {
            PayloadDecoder decoder = new PayloadDecoder(allocator);
            reader.seek(from);
            Frame frame;
            while ((frame = reader.next(to)) != null) {
                FrameHeader h = frame.header;
                if (!h.isTransactional()) continue;
                if (h.isControl() && verifyChecksums
                        && Format.crc32c(frame.payload, 0, frame.payload.capacity()) != h.payloadCrc) {
                    throw KStreamException.corrupt("payload checksum mismatch", frame.path, frame.position, h.baseOffset);
                }
                int kind = h.isControl() ? controlKind(decoder, frame) : Format.TXN_DATA;
                out.add(new TxnIndex.Entry(kind, h.producerId, h.baseOffset));
            }
        }
        return out;
    }

    private static int controlKind(PayloadDecoder decoder, Frame frame) {
        try (VectorSchemaRoot root = decoder.decode(frame, java.util.Set.of("value"))) {
            VarBinaryVector value = (VarBinaryVector) root.getVector("value");
            String kind = value == null || root.getRowCount() < 1 || value.isNull(0) ? ""
                : new String(value.get(0), java.nio.charset.StandardCharsets.US_ASCII);
            if (kind.equals(Format.CONTROL_COMMIT)) return Format.TXN_COMMIT;
            if (kind.equals(Format.CONTROL_ABORT)) return Format.TXN_ABORT;
            throw KStreamException.corrupt("control frame holds '" + kind + "', not COMMIT or ABORT", frame.path,
                frame.position, frame.header.baseOffset);
        }
    }
}

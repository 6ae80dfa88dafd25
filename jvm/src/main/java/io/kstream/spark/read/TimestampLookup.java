package io.kstream.spark.read;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.Format;
import io.kstream.spark.format.Frame;
import io.kstream.spark.format.FrameHeader;
import io.kstream.spark.format.FrameRows;
import io.kstream.spark.format.LogReader;
import io.kstream.spark.format.PayloadDecoder;
import io.kstream.spark.format.SharedAllocator;
import io.kstream.spark.format.SparseIndex;
import io.kstream.spark.format.TransactionState;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Set;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;

/**
 * Offset for a timestamp, with the rule of Python's {@code kstream.log.offset_for_timestamp}
 * (src/kstream/log/timestamps.py): the earliest offset in [log start, end) whose record a reader
 * at the isolation level is handed and whose timestamp is at or after the target. End is the HW
 * (read_uncommitted) or the LSO (read_committed); control frames (markers) and the log cleaner's
 * fillers never answer, and a cleaned frame's record answers with its own offset; under
 * read_committed the records of aborted transactions do not either; a LogAppendTime frame's
 * records take the frame's time. Both readers pass the one table of cases
 * (tests/log/timestamp_cases.py, TimestampVectorTest). Reads only; one call, one reader.
 */
public final class TimestampLookup {
    /** What a lookup found: the record's offset and its timestamp (ms). */
    public static final class Found {
        public final long offset;
        public final long timestampMs;

        Found(long offset, long timestampMs) {
            this.offset = offset;
            this.timestampMs = timestampMs;
        }

        @Override
        public String toString() {
            return "Found(offset=" + offset + ", timestampMs=" + timestampMs + ")";
        }
    }

    private TimestampLookup() {}

    /** The lookup over a partition's bounds as the planner read them; null when no record answers. */
    public static Found find(PartitionPlanner.Bounds bounds, long timestampMs, boolean verifyChecksums) {
        return find(bounds.leaderDir, bounds.end, bounds.transactions, timestampMs, verifyChecksums);
    }

    /**
     * The lookup in {@code replicaDir} below {@code end}; {@code transactions} null under
     * read_uncommitted. Frame headers are walked unchecked-payload; the frame decoded has its
     * payload checksum checked when {@code verifyChecksums}.
     */
    public static Found find(String replicaDir, long end, TransactionState transactions, long timestampMs,
                             boolean verifyChecksums) {
        try (LogReader reader = new LogReader(replicaDir, false);
             BufferAllocator allocator = SharedAllocator.child("kstream-timestamp-lookup")) {
            long first = firstFrameReaching(reader, end, timestampMs);
            if (first < 0) return null;
            PayloadDecoder decoder = new PayloadDecoder(allocator);
            reader.seek(first);
            Frame frame;
            while ((frame = reader.next(end)) != null) {
                FrameHeader h = frame.header;
                if (h.maxTimestamp < timestampMs || !visible(h, transactions) || h.isFiller()) continue;
                if (verifyChecksums && Format.crc32c(frame.payload, 0, frame.payload.capacity()) != h.payloadCrc) {
                    throw KStreamException.corrupt("payload checksum mismatch", frame.path, frame.position, h.baseOffset);
                }
                Found found = firstAtOrAfter(decoder, frame, timestampMs);
                if (found != null) return found; // always, unless the header overstates its records
            }
            return null;
        } catch (IOException e) {
            throw new UncheckedIOException("looking up timestamp " + timestampMs + " in " + replicaDir, e);
        }
    }

    /** Which frames a reader is handed: never a control frame; under read_committed no aborted one. */
    static boolean visible(FrameHeader h, TransactionState transactions) {
        return transactions == null ? !h.isControl() : transactions.visibleCommitted(h);
    }

    /**
     * Base offset of the first frame below {@code end} (of any kind) whose largest timestamp
     * reaches the time, or -1: each segment's time index (a running maximum) says where in it to
     * start; its headers are walked up to the next segment.
     */
    private static long firstFrameReaching(LogReader reader, long end, long timestampMs) throws IOException {
        long[] bases = reader.refresh();
        for (int i = 0; i < bases.length; i++) {
            long from = SparseIndex.times(reader.directory, bases[i]).startFor(timestampMs);
            if (from >= end) return -1;
            long segmentEnd = i + 1 < bases.length ? Math.min(bases[i + 1], end) : end;
            reader.seek(from);
            Frame frame;
            while ((frame = reader.next(segmentEnd)) != null) {
                if (frame.header.maxTimestamp >= timestampMs) return frame.header.baseOffset;
            }
        }
        return -1;
    }

    private static Found firstAtOrAfter(PayloadDecoder decoder, Frame frame, long timestampMs) {
        FrameHeader h = frame.header;
        if (h.maxTimestamp < timestampMs) return null;
        boolean appendTime = h.logAppendTime();
        if (appendTime && !h.isSparse()) return new Found(h.baseOffset, h.maxTimestamp);
        // A cleaned (sparse) frame's first record need not be at its base offset: decode its deltas.
        Set<String> columns = FrameRows.columns(h, appendTime ? Set.of() : Set.of("timestamp"));
        try (VectorSchemaRoot root = decoder.decode(frame, columns)) {
            FrameRows rows = FrameRows.of(frame, root);
            FieldVector stored = root.getVector("timestamp");
            if (appendTime || !(stored instanceof BigIntVector)) {
                // every record has the frame's time
                return rows.count() == 0 ? null : new Found(rows.offset(0), h.maxTimestamp);
            }
            BigIntVector ts = (BigIntVector) stored;
            for (int i = 0; i < rows.count(); i++) {
                if (!ts.isNull(i) && ts.get(i) >= timestampMs) return new Found(rows.offset(i), ts.get(i));
            }
            return null;
        }
    }
}

package io.kstream.spark.realtime;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.Frame;
import io.kstream.spark.format.LogReader;
import io.kstream.spark.format.PayloadDecoder;
import io.kstream.spark.format.SharedAllocator;
import io.kstream.spark.format.SourcePosition;
import io.kstream.spark.log.PartitionAppender;
import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;

/**
 * What one output partition's log holds of each source identity this writer serves: the last
 * source offset per identity, true at output offset {@link #knownEnd()} (docs/TRANSACTIONS.md,
 * "Source-position idempotence").
 *
 * <p>An identity is learnt cold from its {@link PositionedSources} row plus the positioned frames
 * from the row's {@code checked_offset} to the log end (at most {@link #MAX_SCAN_BYTES} of
 * frames: more is refused, never guessed); after that, every append runs {@link #guard} under
 * the partition lock, which first reads the frames other writers appended since
 * {@code knownEnd} (another writer of the same identity among them: a zombie task, a second
 * query on the same checkpoint) and then refuses the append when a frame would repeat a
 * position the log has. Not thread-safe: one per output partition, used by one flusher thread.
 */
final class SourcePositions {
    /** The most frame bytes a cold load reads past an identity's snapshot before refusing. */
    static final long MAX_SCAN_BYTES = 1L << 30;

    private final String replicaDir;
    private final String topicId;
    private final int partition;
    private final PartitionAppender appender;
    private final PositionedSources sources;
    private final Map<SourcePosition.Identity, Long> last = new HashMap<>();
    private long knownEnd = -1;  // -1: nothing known (last is empty)

    SourcePositions(String replicaDir, String topicId, int partition, PartitionAppender appender,
                    PositionedSources sources) {
        this.replicaDir = replicaDir;
        this.topicId = topicId;
        this.partition = partition;
        this.appender = appender;
        this.sources = sources;
    }

    long knownEnd() {
        return knownEnd;
    }

    Map<SourcePosition.Identity, Long> lastOffsets() {
        return last;
    }

    /** The identity's last source offset in this partition's log (-1: none), as of {@link #knownEnd()}. */
    long lastOffset(SourcePosition.Identity id) throws IOException {
        Long known = last.get(id);
        if (known != null) return known;
        if (knownEnd < 0) knownEnd = appender.logEndOffset();
        PositionedSources.Snapshot row = sources.loadOrRegister(id, topicId, partition, knownEnd);
        if (row.checkedOffset() > knownEnd) {
            throw new KStreamException(KStreamException.Kind.KStreamError, "the source position of " + id + " in "
                + replicaDir + " was checked up to offset " + row.checkedOffset() + ", past the log end " + knownEnd
                + ": the log lost records the positioned_sources row counted on (truncated?); the sink cannot tell"
                + " which source records it holds. Restart the query from a new checkpoint after checking the output");
        }
        long found = scan(row.checkedOffset(), knownEnd, id);
        long value = Math.max(row.lastSourceOffset(), found);
        last.put(id, value);
        return value;
    }

    /**
     * The last source offset of {@code id} among the positioned frames [from, to) (-1: none);
     * refuses when retention removed frames the snapshot did not cover and none of id's remain.
     */
    private long scan(long from, long to, SourcePosition.Identity id) {
        if (from >= to) return -1;
        long found = -1;
        long bytes = 0;
        BufferAllocator allocator = SharedAllocator.child("positions " + replicaDir);
        try (LogReader reader = new LogReader(replicaDir, false)) {
            PayloadDecoder decoder = new PayloadDecoder(allocator);
            long start = Math.max(from, reader.logStartOffset());
            reader.seek(start);
            while (true) {
                Frame frame = reader.next(to);
                if (frame == null) break;
                bytes += frame.header.frameSize();
                if (bytes > MAX_SCAN_BYTES) {
                    throw new KStreamException(KStreamException.Kind.KStreamError, "learning the source position"
                        + " of " + id + " in " + replicaDir + " would read more than " + MAX_SCAN_BYTES + " bytes of"
                        + " frames from offset " + from + " (its last snapshot); refusing rather than risk writing a"
                        + " replayed record twice. Its snapshot moves at every batch end: a writer this far behind"
                        + " ran without one for long");
                }
                if (!SourcePosition.isPositioned(frame.header)) continue;
                SourcePosition.Span span = SourcePosition.of(frame, decoder);
                if (span.identity().equals(id)) found = span.lastOffset();
            }
            if (found < 0 && start > from) {
                throw new KStreamException(KStreamException.Kind.KStreamError, "the source position of " + id + " in "
                    + replicaDir + " is unknown: retention removed offsets " + from + ".." + (start - 1) + " after"
                    + " its last snapshot, and no frame of it remains; the sink cannot tell which replayed records it"
                    + " holds. Restart the query from a new checkpoint after checking the output");
            }
            return found;
        } finally {
            allocator.close();
        }
    }

    /**
     * The guard of one positioned append: under the partition lock, learn the frames appended
     * since {@link #knownEnd()} and refuse (false) when a frame of {@code spans} starts at or below
     * its identity's last offset in the log.
     */
    PartitionAppender.TransactionGuard guard(List<SourcePosition.Span> spans) {
        return logEnd -> {
            catchUp(logEnd);
            for (SourcePosition.Span span : spans) {
                Long known = last.get(span.identity());
                if (known == null) throw new IllegalStateException("append before lastOffset(" + span.identity() + ")");
                if (span.firstOffset() <= known) return false;
            }
            return true;
        };
    }

    /** After an append of {@code spans} ended at {@code endOffset} (the guard let it through). */
    void appended(List<SourcePosition.Span> spans, long endOffset) {
        for (SourcePosition.Span span : spans) last.put(span.identity(), span.lastOffset());
        knownEnd = endOffset;
    }

    /** Forget everything (an append failed: what it wrote is unknown); the next use learns cold. */
    void forget() {
        last.clear();
        knownEnd = -1;
    }

    private void catchUp(long logEnd) {
        if (logEnd == knownEnd) return;
        if (logEnd < knownEnd) {
            forget();
            throw new KStreamException(KStreamException.Kind.KStreamError, "the log end of " + replicaDir + " moved"
                + " back from " + knownEnd + " to " + logEnd + " (truncated) while the Real-time sink wrote it");
        }
        BufferAllocator allocator = SharedAllocator.child("positions " + replicaDir);
        try (LogReader reader = new LogReader(replicaDir, false)) {
            PayloadDecoder decoder = new PayloadDecoder(allocator);
            reader.seek(knownEnd);
            while (true) {
                Frame frame = reader.next(logEnd);
                if (frame == null) break;
                if (!SourcePosition.isPositioned(frame.header)) continue;
                SourcePosition.Span span = SourcePosition.of(frame, decoder);
                Long known = last.get(span.identity());
                if (known != null && span.lastOffset() > known) last.put(span.identity(), span.lastOffset());
            }
        } finally {
            allocator.close();
        }
        knownEnd = logEnd;
    }
}

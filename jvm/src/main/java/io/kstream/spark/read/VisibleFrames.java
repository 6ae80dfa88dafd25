package io.kstream.spark.read;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.Frame;
import io.kstream.spark.format.FrameHeader;
import io.kstream.spark.format.FrameRows;
import io.kstream.spark.format.LogReader;
import io.kstream.spark.format.PayloadDecoder;
import java.util.Set;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a reader may see of one split, frame by frame: the JVM's copy of Python's
 * kstream.log.visible_reads.read_visible, with no Spark type in it. From the split's start to its
 * end (never past the HW or LSO planned on the driver) it skips control frames and the log
 * cleaner's fillers always and aborted transactional frames under read_committed, and hands out
 * each other frame's rows in [position, end) as decoded Arrow vectors with their offsets
 * ({@link FrameRows}: a cleaned frame's rows have gaps between them, which are not data loss; a
 * start or end inside a frame or inside a gap keeps the rows at or after the start and below the
 * end; a frame that keeps none of them is skipped). Offsets below the log start (deleted by
 * retention) before they were read are an OffsetOutOfRangeError (failOnDataLoss=true) or skipped
 * with a warning. The vectors of {@link #root} are valid until the next call to next(); decoding
 * uses the caller's allocator. Not thread-safe.
 */
public final class VisibleFrames implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(VisibleFrames.class);

    private final OffsetRange split;
    private final Set<String> columns;
    private final LogReader reader;
    private final PayloadDecoder decoder;
    private long offset;
    private Frame frame;
    private VectorSchemaRoot root;
    private FrameRows rows;
    private int firstRow;
    private int count;

    /** {@code columns}: the stored columns to decode (only these are decompressed and loaded). */
    public VisibleFrames(OffsetRange split, Set<String> columns, boolean failOnDataLoss, boolean verifyChecksums,
                         BufferAllocator allocator) {
        this.split = split;
        this.columns = columns;
        this.reader = new LogReader(split.replicaDir, verifyChecksums);
        this.decoder = new PayloadDecoder(allocator);
        this.offset = split.start;
        long logStart = reader.logStartOffset();
        if (offset < logStart) {
            String message = split.tp + ": offsets " + offset + ".." + (logStart - 1)
                + " were deleted by retention before they were read";
            if (failOnDataLoss) {
                reader.close();
                throw KStreamException.outOfRange(message + "; set failOnDataLoss=false to skip them");
            }
            LOG.warn("{}; skipping them (failOnDataLoss=false)", message);
            offset = logStart;
        }
        if (offset < split.end) reader.seek(offset);
    }

    /** The offset after the last frame handed out or skipped (or the split's start). */
    public long position() {
        return offset;
    }

    /** Move to the next frame with rows in [position, end); false at the split's end. */
    public boolean next() {
        release();
        while (offset < split.end) {
            Frame next = reader.next(split.end);
            if (next == null) {
                throw KStreamException.outOfRange(split.tp + " has no data at offset " + offset
                    + ", below the planned end " + split.end);
            }
            FrameHeader h = next.header;
            boolean visible = split.transactions == null ? !h.isControl() : split.transactions.visibleCommitted(h);
            long from = offset;
            offset = Math.min(h.nextOffset(), split.end);
            if (!visible || h.isFiller()) continue; // a marker, an aborted transaction's frame, a cleaner's filler
            VectorSchemaRoot decoded = decoder.decode(next, FrameRows.columns(h, columns));
            try {
                FrameRows all = FrameRows.of(next, decoded);
                int first = all.firstAtOrAfter(from);
                int end = all.firstAtOrAfter(split.end);
                if (end <= first) {
                    decoded.close();
                    continue;
                }
                int n = end - first;
                if ((first != 0 || end != all.count()) && !decoded.getFieldVectors().isEmpty()) {
                    VectorSchemaRoot sliced = decoded.slice(first, n);
                    decoded.close();
                    decoded = sliced;
                }
                frame = next;
                root = decoded;
                rows = all; // of the whole frame: row r in range is the frame's row first + r
                firstRow = first;
                count = n;
                return true;
            } catch (RuntimeException e) {
                decoded.close();
                throw e;
            }
        }
        return false;
    }

    /** The current frame (its header: timestamps, LogAppendTime). */
    public Frame frame() {
        return frame;
    }

    /** The current frame's stored columns, sliced to its rows in range (it may hold no column). */
    public VectorSchemaRoot root() {
        return root;
    }

    /** Rows handed out from the current frame. */
    public int count() {
        return count;
    }

    /** The offset of row {@code row} (0 <= row < count) of the current frame's rows in range. */
    public long rowOffset(int row) {
        return rows.offset(firstRow + row);
    }

    /** The rows' offsets: row {@code r} in range is {@code rows().offset(firstRow() + r)}. */
    public FrameRows rows() {
        return rows;
    }

    public int firstRow() {
        return firstRow;
    }

    private void release() {
        if (root != null) root.close();
        root = null;
        rows = null;
        frame = null;
    }

    @Override
    public void close() {
        release();
        reader.close();
    }
}

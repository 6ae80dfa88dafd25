package io.kstream.spark.read;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.Frame;
import io.kstream.spark.format.FrameHeader;
import io.kstream.spark.format.FrameRows;
import io.kstream.spark.format.LogReader;
import io.kstream.spark.format.PayloadDecoder;
import io.kstream.spark.format.SharedAllocator;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads one split's records, one ColumnarBatch per stored frame, as Python's
 * kstream.source.partition_reader.read_range: from the split's start to its end (never past
 * the HW or LSO planned on the driver), skipping control frames and the log cleaner's fillers
 * always and aborted transactional frames under read_committed; each row's offset comes from its
 * frame ({@link FrameRows}: a cleaned frame's rows have gaps between them, which are not data
 * loss, and a start or end inside a frame or a gap keeps the rows at or after the start, below the
 * end); offsets deleted by retention before they were read
 * are an OffsetOutOfRangeError (failOnDataLoss=true) or skipped with a warning. A batch is
 * valid until the next call to next(); the reader owns its Arrow memory and frees it on close.
 */
public final class ColumnarPartitionReader implements PartitionReader<ColumnarBatch> {
    private static final Logger LOG = LoggerFactory.getLogger(ColumnarPartitionReader.class);

    private final OffsetRange split;
    private final boolean failOnDataLoss;
    private final BufferAllocator allocator = SharedAllocator.child("kstream-partition-reader");
    private final LogReader reader;
    private final PayloadDecoder decoder;
    private final BatchAssembler assembler;
    private long offset;
    private VectorSchemaRoot current;
    private ColumnarBatch batch;
    private FrameRows currentRows;
    private int currentFirstRow;

    public ColumnarPartitionReader(OffsetRange split, StructType schema, boolean failOnDataLoss, boolean verifyChecksums) {
        this.split = split;
        this.failOnDataLoss = failOnDataLoss;
        this.reader = new LogReader(split.replicaDir, verifyChecksums);
        this.decoder = new PayloadDecoder(allocator);
        this.assembler = new BatchAssembler(split.tp, schema);
        this.offset = split.start;
        long logStart = reader.logStartOffset();
        if (offset < logStart) {
            String message = split.tp + ": offsets " + offset + ".." + (logStart - 1)
                + " were deleted by retention before they were read";
            if (failOnDataLoss) throw KStreamException.outOfRange(message + "; set failOnDataLoss=false to skip them");
            LOG.warn("{}; skipping them (failOnDataLoss=false)", message);
            offset = logStart;
        }
        if (offset < split.end) reader.seek(offset);
    }

    /** The offset after the last record handed out (or the split's start). */
    public long position() {
        return offset;
    }

    @Override
    public boolean next() {
        release();
        while (offset < split.end) {
            Frame frame = reader.next(split.end);
            if (frame == null) {
                throw KStreamException.outOfRange(split.tp + " has no data at offset " + offset
                    + ", below the planned end " + split.end);
            }
            FrameHeader h = frame.header;
            boolean visible = split.transactions == null ? !h.isControl() : split.transactions.visibleCommitted(h);
            if (!visible || h.isFiller()) { // a marker, an aborted transaction's frame, a cleaner's filler
                offset = Math.min(h.nextOffset(), split.end);
                continue;
            }
            VectorSchemaRoot root = decoder.decode(frame, FrameRows.columns(h, assembler.storedColumns()));
            FrameRows rows;
            try {
                rows = FrameRows.of(frame, root);
            } catch (RuntimeException e) {
                root.close();
                throw e;
            }
            // Rows by their offsets: a start or end inside the frame (or inside a cleaned frame's
            // gap) keeps the rows in [offset, end); a cleaned frame may keep none of them.
            int firstRow = rows.firstAtOrAfter(offset);
            int endRow = rows.firstAtOrAfter(split.end);
            offset = Math.min(h.nextOffset(), split.end);
            if (endRow <= firstRow) {
                root.close();
                continue;
            }
            if ((firstRow != 0 || endRow != rows.count()) && !root.getFieldVectors().isEmpty()) {
                VectorSchemaRoot sliced = root.slice(firstRow, endRow - firstRow);
                root.close();
                root = sliced;
                rows = FrameRows.of(frame, root);
            }
            current = root;
            currentRows = rows;
            currentFirstRow = root.getFieldVectors().isEmpty() ? firstRow : 0;
            batch = assembler.build(frame, rows, currentFirstRow, endRow - firstRow, root);
            return true;
        }
        return false;
    }

    /** The offset of row {@code row} of the batch {@link #get} returns (cleaned frames have gaps). */
    public long rowOffset(int row) {
        return currentRows.offset(currentFirstRow + row);
    }

    @Override
    public ColumnarBatch get() {
        return batch;
    }

    private void release() {
        if (current != null) current.close();
        current = null;
        currentRows = null;
        batch = null;
    }

    @Override
    public void close() {
        release();
        assembler.close();
        reader.close();
        allocator.close();
    }
}

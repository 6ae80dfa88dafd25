package io.kstream.spark.read;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.Frame;
import io.kstream.spark.format.FrameHeader;
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
 * the HW or LSO planned on the driver), skipping control frames always and aborted
 * transactional frames under read_committed; offsets deleted by retention before they were read
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
            if (!visible) {
                offset = h.nextOffset();
                continue;
            }
            VectorSchemaRoot root = decoder.decode(frame, assembler.storedColumns());
            long first = Math.max(offset, h.baseOffset);
            long last = Math.min(h.nextOffset(), split.end);
            if ((first != h.baseOffset || last != h.nextOffset()) && !root.getFieldVectors().isEmpty()) {
                VectorSchemaRoot sliced = root.slice((int) (first - h.baseOffset), (int) (last - first));
                root.close();
                root = sliced;
            }
            current = root;
            batch = assembler.build(frame, first, (int) (last - first), root);
            offset = last;
            return true;
        }
        return false;
    }

    @Override
    public ColumnarBatch get() {
        return batch;
    }

    private void release() {
        if (current != null) current.close();
        current = null;
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

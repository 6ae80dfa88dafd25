package io.kstream.spark.read;

import io.kstream.spark.format.SharedAllocator;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Reads one split's records, one ColumnarBatch per stored frame, as Python's
 * kstream.source.partition_reader.read_range: the frames and rows {@link VisibleFrames} hands out
 * (markers, fillers and aborted frames skipped, each row at its own offset: a cleaned frame's
 * gaps are not data loss; data deleted below the log start is, with failOnDataLoss), as batches
 * of the read's schema. A batch is valid until the next call to next(); the reader owns its Arrow
 * memory and frees it on close.
 */
public final class ColumnarPartitionReader implements PartitionReader<ColumnarBatch> {
    private final BufferAllocator allocator = SharedAllocator.child("kstream-partition-reader");
    private final VisibleFrames frames;
    private final BatchAssembler assembler;
    private ColumnarBatch batch;

    public ColumnarPartitionReader(OffsetRange split, StructType schema, boolean failOnDataLoss, boolean verifyChecksums) {
        this.assembler = new BatchAssembler(split.tp, schema);
        try {
            this.frames = new VisibleFrames(split, assembler.storedColumns(), failOnDataLoss, verifyChecksums, allocator);
        } catch (RuntimeException e) {
            assembler.close();
            allocator.close();
            throw e;
        }
    }

    /** The offset after the last record handed out (or the split's start). */
    public long position() {
        return frames.position();
    }

    @Override
    public boolean next() {
        batch = null;
        if (!frames.next()) return false;
        batch = assembler.build(frames.frame(), frames.rows(), frames.firstRow(), frames.count(), frames.root());
        return true;
    }

    /** The offset of row {@code row} of the batch {@link #get} returns (cleaned frames have gaps). */
    public long rowOffset(int row) {
        return frames.rowOffset(row);
    }

    @Override
    public ColumnarBatch get() {
        return batch;
    }

    @Override
    public void close() {
        batch = null;
        frames.close();
        assembler.close();
        allocator.close();
    }
}

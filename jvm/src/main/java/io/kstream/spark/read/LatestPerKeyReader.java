package io.kstream.spark.read;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.Format;
import io.kstream.spark.format.SharedAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * A latestPerKey read of one split (Python's kstream.source.latest_per_key.read_latest): one row
 * per key, its latest visible record in [start, end), in offset order; a key whose latest record
 * is a tombstone is left out unless includeTombstones. All of a key's records are in its
 * partition, so the reduction runs in the partition's own task, with no shuffle.
 *
 * <p>Two passes over the split, each through {@link VisibleFrames}: {@link LatestOffsets} decodes
 * the keys alone and keeps each key's latest offset; the second decodes the frames whole and hands
 * out the rows at those offsets (a merge walk, the offsets ascending in both). A tombstone is the
 * log cleaner's (Python's frame_rewrite.tombstones): a null value, or on a typed topic every value
 * column null. Should a kept offset have no row in the second pass (the cleaner rewrote the
 * partition between the passes, under a newer record of that key), the read fails rather than
 * leave the key out. Rows are valid until the next call to next(). Not thread-safe.
 */
public final class LatestPerKeyReader implements PartitionReader<InternalRow> {
    /** Stored columns that are not a typed topic's value columns. */
    private static final Set<String> RECORD_COLUMNS = Set.of("key", "value", "timestamp", "headers",
        Format.OFFSET_DELTA_COLUMN);

    private final BufferAllocator allocator = SharedAllocator.child("kstream-latest-per-key");
    private final OffsetRange split;
    private final boolean includeTombstones;
    private final long[] winners;
    private final VisibleFrames frames;
    private final BatchAssembler assembler;
    private int winner; // the next kept offset to find
    private ColumnarBatch batch;
    private int row = -1;
    private int rows;

    public LatestPerKeyReader(OffsetRange split, StructType schema, boolean failOnDataLoss, boolean verifyChecksums,
                              boolean includeTombstones) {
        this.split = split;
        this.includeTombstones = includeTombstones;
        this.assembler = new BatchAssembler(split.tp, schema);
        try {
            this.winners = LatestOffsets.of(split, failOnDataLoss, verifyChecksums, allocator);
            this.frames = new VisibleFrames(split, null, failOnDataLoss, verifyChecksums, allocator);
        } catch (RuntimeException e) {
            assembler.close();
            allocator.close();
            throw e;
        }
    }

    @Override
    public boolean next() {
        while (true) {
            while (batch != null && ++row < rows) {
                long offset = frames.rowOffset(row);
                if (winner >= winners.length || winners[winner] > offset) continue; // a superseded record
                if (winners[winner] < offset) throw rewritten(winners[winner]);
                winner++;
                if (includeTombstones || !tombstone(frames.root(), row)) return true;
            }
            batch = null;
            if (!frames.next()) {
                if (winner < winners.length) throw rewritten(winners[winner]);
                return false;
            }
            batch = assembler.build(frames.frame(), frames.rows(), frames.firstRow(), frames.count(), frames.root());
            rows = frames.count();
            row = -1;
        }
    }

    private KStreamException rewritten(long offset) {
        return new KStreamException(KStreamException.Kind.KStreamError, split + ": the latest record of a key (offset "
            + offset + ") was gone when read a second time: the log cleaner rewrote the partition during the read "
            + "(a newer record of that key arrived after the read was planned); run the read again");
    }

    /** The cleaner's rule on the frame's decoded columns (all of them). */
    static boolean tombstone(VectorSchemaRoot root, int row) {
        FieldVector value = root.getVector("value");
        if (value != null) return value.isNull(row);
        List<FieldVector> values = new ArrayList<>();
        for (FieldVector v : root.getFieldVectors()) if (!RECORD_COLUMNS.contains(v.getName())) values.add(v);
        if (values.isEmpty()) return false; // a bytes frame stored without values: no null value
        for (FieldVector v : values) if (!v.isNull(row)) return false;
        return true;
    }

    @Override
    public InternalRow get() {
        return batch.getRow(row);
    }

    @Override
    public void close() {
        batch = null;
        frames.close();
        assembler.close();
        allocator.close();
    }
}

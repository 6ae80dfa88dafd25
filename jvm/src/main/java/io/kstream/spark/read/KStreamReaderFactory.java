package io.kstream.spark.read;

import io.kstream.spark.options.ReaderOptions;
import java.util.Set;
import java.util.TreeSet;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Makes the readers of {@link OffsetRange} splits (the log) and {@link LakeRange} splits (a
 * tiered topic's Delta table) on executors: columnar, or rows over them
 * ({@link ColumnarPartitionReader}, {@link LakePartitionReader}, or {@link LatestPerKeyReader}
 * for a latestPerKey read: of an {@link OffsetRange}, or of a tiered partition's lake and log,
 * a {@link UnionRange}).
 */
public final class KStreamReaderFactory implements PartitionReaderFactory {
    private final StructType schema;
    private final boolean failOnDataLoss;
    private final boolean verifyChecksums;
    private final boolean latestPerKey;
    private final boolean includeTombstones;
    private final Set<String> valueColumns;

    public KStreamReaderFactory(StructType schema, ReaderOptions options) {
        this(schema, options, Set.of());
    }

    /** {@code valueColumns}: the topics' value columns, which a latestPerKey read's tombstone rule reads. */
    public KStreamReaderFactory(StructType schema, ReaderOptions options, Set<String> valueColumns) {
        this.schema = schema;
        this.valueColumns = new TreeSet<>(valueColumns);
        this.failOnDataLoss = options.failOnDataLoss;
        this.verifyChecksums = options.verifyChecksums;
        this.latestPerKey = options.latestPerKey;
        this.includeTombstones = options.includeTombstones;
    }

    public ColumnarPartitionReader columnar(InputPartition partition) {
        return new ColumnarPartitionReader((OffsetRange) partition, schema, failOnDataLoss, verifyChecksums);
    }

    private PartitionReader<ColumnarBatch> batches(InputPartition partition) {
        if (partition instanceof LakeRange lake) return new LakePartitionReader(lake, schema);
        if (partition instanceof UnionRange union) {
            return new LatestPerKeyReader(union, schema, valueColumns, failOnDataLoss, verifyChecksums, includeTombstones);
        }
        if (!latestPerKey) return columnar(partition);
        return new LatestPerKeyReader((OffsetRange) partition, schema, valueColumns, failOnDataLoss, verifyChecksums,
            includeTombstones);
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
        return true;
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
        return batches(partition);
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        return new RowPartitionReader(batches(partition));
    }
}

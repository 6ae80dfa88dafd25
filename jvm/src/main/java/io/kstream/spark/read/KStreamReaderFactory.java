package io.kstream.spark.read;

import io.kstream.spark.options.ReaderOptions;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Makes the readers of {@link OffsetRange} splits on executors: columnar, or rows over them; a
 * latestPerKey read's rows ({@link LatestPerKeyReader}: rows, since it keeps some rows of a frame).
 */
public final class KStreamReaderFactory implements PartitionReaderFactory {
    private final StructType schema;
    private final boolean failOnDataLoss;
    private final boolean verifyChecksums;
    private final boolean latestPerKey;
    private final boolean includeTombstones;

    public KStreamReaderFactory(StructType schema, ReaderOptions options) {
        this.schema = schema;
        this.failOnDataLoss = options.failOnDataLoss;
        this.verifyChecksums = options.verifyChecksums;
        this.latestPerKey = options.latestPerKey;
        this.includeTombstones = options.includeTombstones;
    }

    public ColumnarPartitionReader columnar(InputPartition partition) {
        return new ColumnarPartitionReader((OffsetRange) partition, schema, failOnDataLoss, verifyChecksums);
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
        return !latestPerKey;
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
        return columnar(partition);
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        if (latestPerKey) {
            return new LatestPerKeyReader((OffsetRange) partition, schema, failOnDataLoss, verifyChecksums,
                includeTombstones);
        }
        return new RowPartitionReader(columnar(partition));
    }
}

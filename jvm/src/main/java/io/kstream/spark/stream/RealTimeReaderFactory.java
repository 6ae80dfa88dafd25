package io.kstream.spark.stream;

import io.kstream.spark.options.ReaderOptions;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;

/** Makes {@link RealTimeReader}s of {@link TailRange}s: rows only (Real-time Mode reads no columnar batches). */
public final class RealTimeReaderFactory implements PartitionReaderFactory {
    private final StructType schema;
    private final ReaderOptions options;

    public RealTimeReaderFactory(StructType schema, ReaderOptions options) {
        this.schema = schema;
        this.options = options;
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
        return false;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        return new RealTimeReader((TailRange) partition, schema, options);
    }
}

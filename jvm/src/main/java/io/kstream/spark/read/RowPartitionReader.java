package io.kstream.spark.read;

import java.io.IOException;
import java.util.Iterator;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * The rows of a columnar partition reader ({@link ColumnarPartitionReader}, {@link LatestPerKeyReader}), for Spark paths that read rows (a row is
 * valid until the next call to next(), as Spark's own columnar-to-row readers hand them out).
 */
public final class RowPartitionReader implements PartitionReader<InternalRow> {
    private final PartitionReader<ColumnarBatch> batches;
    private Iterator<InternalRow> rows;
    private InternalRow row;

    public RowPartitionReader(PartitionReader<ColumnarBatch> batches) {
        this.batches = batches;
    }

    @Override
    public boolean next() throws IOException {
        while (rows == null || !rows.hasNext()) {
            if (!batches.next()) return false;
            rows = batches.get().rowIterator();
        }
        row = rows.next();
        return true;
    }

    @Override
    public InternalRow get() {
        return row;
    }

    @Override
    public void close() throws IOException {
        batches.close();
    }
}

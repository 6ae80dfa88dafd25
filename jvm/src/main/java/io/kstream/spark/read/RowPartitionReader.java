package io.kstream.spark.read;

import java.util.Iterator;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.PartitionReader;

/**
 * The rows of a {@link ColumnarPartitionReader}, for Spark paths that read rows (a row is
 * valid until the next call to next(), as Spark's own columnar-to-row readers hand them out).
 */
public final class RowPartitionReader implements PartitionReader<InternalRow> {
    private final ColumnarPartitionReader batches;
    private Iterator<InternalRow> rows;
    private InternalRow row;

    public RowPartitionReader(ColumnarPartitionReader batches) {
        this.batches = batches;
    }

    @Override
    public boolean next() {
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
    public void close() {
        batches.close();
    }
}

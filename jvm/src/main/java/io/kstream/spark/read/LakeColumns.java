package io.kstream.spark.read;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.lake.LakeFile;
import java.io.IOException;
import java.util.List;
import org.apache.spark.sql.execution.datasources.parquet.VectorizedParquetRecordReader;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Some columns of one data file of a tier table, batch by batch, decoded by Spark's vectorized
 * Parquet reader (as {@link LakePartitionReader} reads a split): what the union read's offset
 * for a time ({@link LakeTimestampLookup}, on the driver) and latestPerKey's first pass
 * ({@link LatestOffsets}) read of the lake. The columns must be ones every tier table file holds
 * (offset, key, timestamp). A batch is valid until the next call to next(). Not thread-safe;
 * close it.
 */
final class LakeColumns implements AutoCloseable {
    private final String where;
    private final VectorizedParquetRecordReader parquet;

    /** {@code where}: the table and its version, for errors. */
    LakeColumns(String where, LakeFile file, List<String> columns) {
        this.where = where + ": its data file " + file.path;
        this.parquet = new VectorizedParquetRecordReader(false, LakePartitionReader.BATCH_ROWS);
        try {
            parquet.initialize(file.path, columns);
            parquet.resultBatch(); // allocates the batch's vectors, which nextBatch() fills
        } catch (IOException | RuntimeException e) {
            try {
                parquet.close();
            } catch (IOException closing) {
                e.addSuppressed(closing);
            }
            throw new KStreamException(KStreamException.Kind.KStreamError, "the tier table " + this.where
                + " cannot be read (columns " + columns + "): " + e, e);
        }
    }

    /** Decode the next batch; false at the end of the file. */
    boolean next() {
        try {
            return parquet.nextBatch();
        } catch (IOException e) {
            throw new KStreamException(KStreamException.Kind.KStreamError, "the tier table " + where
                + " cannot be read: " + e, e);
        }
    }

    /** The batch next() decoded: the columns in the order asked for. */
    ColumnarBatch batch() {
        return parquet.resultBatch();
    }

    @Override
    public void close() {
        try {
            parquet.close();
        } catch (IOException e) {
            throw new KStreamException(KStreamException.Kind.KStreamError, "closing " + where + ": " + e, e);
        }
    }
}

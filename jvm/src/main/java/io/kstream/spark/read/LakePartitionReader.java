package io.kstream.spark.read;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.lake.TierTable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.schema.MessageType;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.execution.datasources.parquet.VectorizedParquetRecordReader;
import org.apache.spark.sql.execution.vectorized.ConstantColumnVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Reads one {@link LakeRange}: the rows of one data file of a tier table whose offsets are in
 * the split's [start, end), as batches of the read's schema (the same columns, types and values
 * a read of the log gives: the tierer wrote the reader's own output, with the timestamp in
 * microseconds, as Spark's TimestampType holds it). Spark's own vectorized Parquet reader
 * decodes the file, only the columns the read selects plus {@code offset}; {@code topic} and
 * {@code partition} are constants (the partition is Delta's partition column, not in the file);
 * a stored column an older file lacks (a typed topic's later nullable column) is null. A batch
 * wholly in range is handed out as decoded; another keeps its rows in range through
 * {@link SelectedColumnVector}. A batch is valid until the next call to next(). A column whose
 * type in the file differs from the read's is a KStreamError naming the file (never converted
 * silently). A latestPerKey read ({@link LatestPerKeyReader}) also decodes the value columns and
 * keeps only the rows its {@link RowFilter} keeps. Not thread-safe.
 */
public final class LakePartitionReader implements PartitionReader<ColumnarBatch> {
    /** Rows per decoded batch (Spark's default for its Parquet reader). */
    static final int BATCH_ROWS = 4096;

    private final LakeRange split;
    private final StructField[] fields;
    /** Per output field: its column in the Parquet batch, or -1 (a constant or a missing column). */
    private final int[] source;
    private final int offsetColumn;
    private final VectorizedParquetRecordReader parquet;
    /** Per column of {@code alsoDecoded}: its column in the Parquet batch, or -1 (the file lacks it: null). */
    private final int[] extraSource;
    private final RowFilter filter;
    private final ColumnVector[] extra;
    private int[] selected = new int[BATCH_ROWS];
    private ColumnarBatch batch;

    /** Which rows in the split's range a read keeps. */
    @FunctionalInterface
    public interface RowFilter {
        /**
         * Whether the row {@code row} at {@code offset} is kept; {@code columns}: the
         * {@code alsoDecoded} columns, an entry null where the file lacks that column (all null).
         */
        boolean keep(long offset, ColumnVector[] columns, int row);
    }

    public LakePartitionReader(LakeRange split, StructType schema) {
        this(split, schema, List.of(), null);
    }

    /**
     * A reader that also decodes {@code alsoDecoded} (columns the output may lack, e.g. the
     * values a tombstone rule reads) and keeps only the rows {@code filter} keeps (null: all).
     */
    public LakePartitionReader(LakeRange split, StructType schema, List<String> alsoDecoded, RowFilter filter) {
        this.split = split;
        this.filter = filter;
        this.extraSource = new int[alsoDecoded.size()];
        this.extra = new ColumnVector[alsoDecoded.size()];
        this.fields = schema.fields();
        this.source = new int[fields.length];
        Set<String> present = fileColumns(split);
        if (!present.contains(TierTable.OFFSET_COLUMN)) {
            throw fileError(split, "has no 'offset' column: not a kstream tier table's file");
        }
        List<String> columns = new ArrayList<>();
        columns.add(TierTable.OFFSET_COLUMN);
        for (int i = 0; i < fields.length; i++) {
            String name = fields[i].name();
            if (name.equals("topic") || name.equals("partition") || !present.contains(name)) {
                source[i] = -1;
            } else {
                if (!columns.contains(name)) columns.add(name);
                source[i] = columns.indexOf(name);
            }
        }
        for (int i = 0; i < extraSource.length; i++) {
            String name = alsoDecoded.get(i);
            if (!present.contains(name)) {
                extraSource[i] = -1;
            } else {
                if (!columns.contains(name)) columns.add(name);
                extraSource[i] = columns.indexOf(name);
            }
        }
        this.offsetColumn = 0;
        this.parquet = new VectorizedParquetRecordReader(false, BATCH_ROWS);
        try {
            parquet.initialize(split.file.path, columns);
            ColumnarBatch decoded = parquet.resultBatch();
            for (int i = 0; i < fields.length; i++) {
                if (source[i] < 0) continue;
                DataType stored = decoded.column(source[i]).dataType();
                if (!stored.catalogString().equals(fields[i].dataType().catalogString())) {
                    throw fileError(split, "holds column '" + fields[i].name() + "' as " + stored.catalogString()
                        + ", but the topic's column is " + fields[i].dataType().catalogString()
                        + "; the JVM reader does not convert it: use reader=python");
                }
            }
        } catch (IOException | RuntimeException e) {
            closeQuietly();
            if (e instanceof KStreamException k) throw k;
            throw new KStreamException(KStreamException.Kind.KStreamError, "cannot read " + split + ": " + e, e);
        }
    }

    private static Set<String> fileColumns(LakeRange split) {
        try (ParquetFileReader reader = ParquetFileReader.open(HadoopInputFile.fromPath(new Path(split.file.path),
                new Configuration()))) {
            MessageType schema = reader.getFooter().getFileMetaData().getSchema();
            Set<String> names = new java.util.HashSet<>();
            schema.getFields().forEach(f -> names.add(f.getName()));
            return names;
        } catch (java.io.FileNotFoundException e) {
            throw fileError(split, "is missing (the table was vacuumed or restored since the read was planned? "
                + "plan the read again)");
        } catch (IOException e) {
            throw new KStreamException(KStreamException.Kind.KStreamError, "cannot read " + split + ": " + e, e);
        }
    }

    private static KStreamException fileError(LakeRange split, String problem) {
        return new KStreamException(KStreamException.Kind.KStreamError, split.tp + ": the tier table " + split.tableDir
            + " (Delta version " + split.tableVersion + "): its data file " + split.file.path + " " + problem);
    }

    @Override
    public boolean next() throws IOException {
        batch = null;
        while (parquet.nextBatch()) {
            ColumnarBatch decoded = parquet.resultBatch();
            int n = decoded.numRows();
            ColumnVector offsets = decoded.column(offsetColumn);
            for (int i = 0; i < extra.length; i++) extra[i] = extraSource[i] < 0 ? null : decoded.column(extraSource[i]);
            if (offsets.numNulls() > 0) throw nullOffsets(offsets.numNulls());
            int kept = 0;
            for (int r = 0; r < n; r++) {
                long offset = offsets.getLong(r);
                if (offset >= split.start && offset < split.end && (filter == null || filter.keep(offset, extra, r))) {
                    selected[kept++] = r;
                }
            }
            if (kept == 0) continue;
            batch = output(decoded, kept == n ? null : selected, kept);
            if (kept != n) selected = new int[BATCH_ROWS]; // the batch handed out keeps its row array
            return true;
        }
        return false;
    }

    /**
     * A file with rows whose offset is null (kstream never writes one): {@link LakeRowError}, in
     * Python's words, the nulls counted to the end of the file (the batches before this one had
     * none). {@code rows}: this batch's.
     */
    private KStreamException nullOffsets(long rows) throws IOException {
        long total = rows;
        while (parquet.nextBatch()) total += parquet.resultBatch().column(offsetColumn).numNulls();
        return LakeRowError.of(split.tp, split.tableDir, split.tableVersion, split.file.path, total,
            TierTable.OFFSET_COLUMN);
    }

    private ColumnarBatch output(ColumnarBatch decoded, int[] rows, int n) {
        ColumnVector[] columns = new ColumnVector[fields.length];
        for (int i = 0; i < fields.length; i++) {
            String name = fields[i].name();
            if (name.equals("topic")) {
                ConstantColumnVector c = new ConstantColumnVector(n, DataTypes.StringType);
                c.setUtf8String(UTF8String.fromString(split.tp.topic));
                columns[i] = c;
            } else if (name.equals("partition")) {
                ConstantColumnVector c = new ConstantColumnVector(n, DataTypes.IntegerType);
                c.setInt(split.tp.partition);
                columns[i] = c;
            } else if (source[i] < 0) {
                ConstantColumnVector c = new ConstantColumnVector(n, fields[i].dataType());
                c.setNull();
                columns[i] = c;
            } else {
                ColumnVector v = decoded.column(source[i]);
                columns[i] = rows == null ? v : new SelectedColumnVector(v, rows, n);
            }
        }
        return new ColumnarBatch(columns, n);
    }

    @Override
    public ColumnarBatch get() {
        return batch;
    }

    private void closeQuietly() {
        try {
            if (parquet != null) parquet.close();
        } catch (IOException e) {
            // closing after a failure: the failure is what the caller sees
        }
    }

    @Override
    public void close() throws IOException {
        batch = null;
        parquet.close();
    }
}

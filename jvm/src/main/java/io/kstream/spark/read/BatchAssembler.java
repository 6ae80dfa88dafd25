package io.kstream.spark.read;

import io.kstream.spark.format.Frame;
import io.kstream.spark.format.FrameRows;
import java.util.HashSet;
import java.util.Set;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.sql.execution.vectorized.ConstantColumnVector;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Builds one partition's output batches (as Python's kstream.log.storage.output.OutputBuilder): the
 * stored columns the read selects as ArrowColumnVectors over the frame's decoded vectors (no
 * copy), nulls for a column a frame lacks (no key or headers, an older schema version), and
 * the computed columns: topic, partition, offset (the frame's: base offset + row, or + the row's delta in a
 * frame the log cleaner rewrote), timestamp (the stored
 * column, or the frame's max timestamp for LogAppendTime and batches stored without one; Spark
 * microseconds) and timestampType (0 create time, 1 log-append time). Not thread-safe.
 */
public final class BatchAssembler implements AutoCloseable {
    private static final int CREATE_TIME = 0;
    private static final int LOG_APPEND_TIME = 1;

    private final TopicPartition tp;
    private final StructType schema;
    private final Set<String> stored = new HashSet<>();
    private OnHeapColumnVector offsets;
    private OnHeapColumnVector timestamps;
    private int capacity;

    public BatchAssembler(TopicPartition tp, StructType schema) {
        this.tp = tp;
        this.schema = schema;
        for (StructField f : schema.fields()) if (!OutputSchema.COMPUTED.contains(f.name())) stored.add(f.name());
        if (schema.getFieldIndex("timestamp").isDefined()) stored.add("timestamp");
    }

    /** The stored columns to decode (only these are decompressed and loaded). */
    public Set<String> storedColumns() {
        return stored;
    }

    /**
     * The output batch of {@code n} rows: {@code root} holds the frame's stored columns already
     * sliced to those rows (it may hold no column at all); row {@code r}'s offset is
     * {@code rows.offset(firstRow + r)}.
     */
    public ColumnarBatch build(Frame frame, FrameRows rows, int firstRow, int n, VectorSchemaRoot root) {
        if (n > capacity) {
            close();
            capacity = Math.max(n, Math.max(1024, 2 * capacity));
            offsets = new OnHeapColumnVector(capacity, DataTypes.LongType);
            timestamps = new OnHeapColumnVector(capacity, DataTypes.TimestampType);
        }
        StructField[] fields = schema.fields();
        ColumnVector[] columns = new ColumnVector[fields.length];
        boolean appendTime = frame.header.logAppendTime();
        for (int i = 0; i < fields.length; i++) {
            String name = fields[i].name();
            switch (name) {
                case "topic": {
                    ConstantColumnVector c = new ConstantColumnVector(n, DataTypes.StringType);
                    c.setUtf8String(UTF8String.fromString(tp.topic));
                    columns[i] = c;
                    break;
                }
                case "partition":
                    columns[i] = constantInt(n, tp.partition);
                    break;
                case "timestampType":
                    columns[i] = constantInt(n, appendTime ? LOG_APPEND_TIME : CREATE_TIME);
                    break;
                case "offset":
                    for (int r = 0; r < n; r++) offsets.putLong(r, rows.offset(firstRow + r));
                    columns[i] = offsets;
                    break;
                case "timestamp":
                    columns[i] = timestamps(frame, root, n, appendTime);
                    break;
                default: {
                    FieldVector v = root.getVector(name);
                    if (v != null) {
                        columns[i] = new ArrowColumnVector(v);
                    } else {
                        ConstantColumnVector c = new ConstantColumnVector(n, fields[i].dataType());
                        c.setNull();
                        columns[i] = c;
                    }
                }
            }
        }
        return new ColumnarBatch(columns, n);
    }

    private ColumnVector timestamps(Frame frame, VectorSchemaRoot root, int n, boolean appendTime) {
        FieldVector stored = root.getVector("timestamp");
        if (appendTime || !(stored instanceof BigIntVector)) {
            ConstantColumnVector c = new ConstantColumnVector(n, DataTypes.TimestampType);
            c.setLong(frame.header.maxTimestamp * 1000);
            return c;
        }
        BigIntVector ms = (BigIntVector) stored;
        timestamps.reset();
        for (int r = 0; r < n; r++) {
            if (ms.isNull(r)) timestamps.putNull(r);
            else timestamps.putLong(r, ms.get(r) * 1000);
        }
        return timestamps;
    }

    private static ConstantColumnVector constantInt(int n, int value) {
        ConstantColumnVector c = new ConstantColumnVector(n, DataTypes.IntegerType);
        c.setInt(value);
        return c;
    }

    @Override
    public void close() {
        if (offsets != null) offsets.close();
        if (timestamps != null) timestamps.close();
        offsets = null;
        timestamps = null;
    }
}

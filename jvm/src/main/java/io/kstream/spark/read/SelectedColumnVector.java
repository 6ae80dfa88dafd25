package io.kstream.spark.read;

import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Some rows of another column vector, without a copy: row {@code r} is the inner vector's row
 * {@code rows[r]} (children, structs, arrays and maps alike). The union read's lake batches use
 * it to keep only a Parquet batch's rows in the split's offset range. Valid while the inner
 * vector and the row array are; closing it does not close the inner vector (its reader owns it).
 */
final class SelectedColumnVector extends ColumnVector {
    private final ColumnVector inner;
    private final int[] rows;
    private final int count;
    private SelectedColumnVector[] children;

    SelectedColumnVector(ColumnVector inner, int[] rows, int count) {
        super(inner.dataType());
        this.inner = inner;
        this.rows = rows;
        this.count = count;
    }

    @Override
    public void close() {}

    @Override
    public boolean hasNull() {
        return numNulls() > 0;
    }

    @Override
    public int numNulls() {
        if (!inner.hasNull()) return 0;
        int n = 0;
        for (int r = 0; r < count; r++) if (inner.isNullAt(rows[r])) n++;
        return n;
    }

    @Override
    public boolean isNullAt(int rowId) {
        return inner.isNullAt(rows[rowId]);
    }

    @Override
    public boolean getBoolean(int rowId) {
        return inner.getBoolean(rows[rowId]);
    }

    @Override
    public byte getByte(int rowId) {
        return inner.getByte(rows[rowId]);
    }

    @Override
    public short getShort(int rowId) {
        return inner.getShort(rows[rowId]);
    }

    @Override
    public int getInt(int rowId) {
        return inner.getInt(rows[rowId]);
    }

    @Override
    public long getLong(int rowId) {
        return inner.getLong(rows[rowId]);
    }

    @Override
    public float getFloat(int rowId) {
        return inner.getFloat(rows[rowId]);
    }

    @Override
    public double getDouble(int rowId) {
        return inner.getDouble(rows[rowId]);
    }

    @Override
    public ColumnarArray getArray(int rowId) {
        return inner.getArray(rows[rowId]);
    }

    @Override
    public ColumnarMap getMap(int ordinal) {
        return inner.getMap(rows[ordinal]);
    }

    @Override
    public Decimal getDecimal(int rowId, int precision, int scale) {
        return inner.getDecimal(rows[rowId], precision, scale);
    }

    @Override
    public UTF8String getUTF8String(int rowId) {
        return inner.getUTF8String(rows[rowId]);
    }

    @Override
    public byte[] getBinary(int rowId) {
        return inner.getBinary(rows[rowId]);
    }

    @Override
    public ColumnVector getChild(int ordinal) {
        if (children == null) children = new SelectedColumnVector[childCount()];
        if (children[ordinal] == null) children[ordinal] = new SelectedColumnVector(inner.getChild(ordinal), rows, count);
        return children[ordinal];
    }

    private int childCount() {
        if (dataType() instanceof org.apache.spark.sql.types.StructType s) return s.fields().length;
        return 3; // at most: a calendar interval's months, days, microseconds (a map has two)
    }
}

package io.kstream.spark;

import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Builds a {@link KStreamScan}; takes Spark's column pruning, so a query that uses two of a
 * typed topic's twenty columns decodes only those two (as option 'columns' does).
 */
public final class KStreamScanBuilder implements ScanBuilder, SupportsPushDownRequiredColumns {
    private StructType schema;
    private final CaseInsensitiveStringMap options;

    public KStreamScanBuilder(StructType schema, CaseInsensitiveStringMap options) {
        this.schema = schema;
        this.options = options;
    }

    @Override
    public void pruneColumns(StructType required) {
        schema = required;
    }

    @Override
    public Scan build() {
        return new KStreamScan(schema, options);
    }
}

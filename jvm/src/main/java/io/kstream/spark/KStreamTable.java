package io.kstream.spark;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** The JVM reader's table: batch and micro-batch reads of the selected topics (never writes). */
public final class KStreamTable implements SupportsRead {
    private final StructType schema;
    private final Map<String, String> properties;

    public KStreamTable(StructType schema, Map<String, String> properties) {
        this.schema = schema;
        this.properties = properties;
    }

    @Override
    public String name() {
        return "kstream";
    }

    @Override
    @SuppressWarnings("deprecation") // Table.schema(): columns() derives from it in Spark 4.3
    public StructType schema() {
        return schema;
    }

    @Override
    public Map<String, String> properties() {
        return properties;
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        return new KStreamScanBuilder(schema, options);
    }
}

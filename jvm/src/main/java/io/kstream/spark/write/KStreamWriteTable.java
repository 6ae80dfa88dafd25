package io.kstream.spark.write;

import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The table of a {@code format("kstream")} write when the jar is on the session: the Python
 * data source's table (Spark's PythonTable) with two things added, the {@code update} output
 * mode and the choice of writer (a batch or streaming append may go to the JVM writer,
 * {@link KStreamWrite}). Everything else (name, schema, columns, capabilities, properties, scans)
 * is the Python table's, unchanged.
 *
 * <p>pyspark 4.3's PythonWriteBuilder implements SupportsTruncate (complete mode) but not
 * SupportsStreamingUpdateAsAppend, so Spark's StreamExecution.createWrite refuses update mode
 * ("kstream does not support Update mode.") before any Python runs. {@link #newWriteBuilder}
 * wraps Python's builder in an {@link UpdateAsAppendWriteBuilder}, which says yes and writes
 * the rows Spark hands it in each micro-batch as appends, as Spark's Kafka connector does
 * (KafkaWriteBuilder). The Python sink and its exactly-once protocol see an update-mode batch
 * exactly as an append-mode one.
 *
 * <p>It also implements SupportsRead (delegated) because a table for options that name no topic
 * selector is asked for a scan only by a read that forgot subscribe/assign/subscribePattern:
 * the Python reader then gives its own error, as without the jar.
 */
public final class KStreamWriteTable implements SupportsRead, SupportsWrite {
    private final Table python;

    /** {@code python}: the Python data source's table; it must support writes and reads. */
    public KStreamWriteTable(Table python) {
        if (!(python instanceof SupportsWrite) || !(python instanceof SupportsRead)) {
            throw new IllegalArgumentException("not a readable and writable table: " + python);
        }
        this.python = python;
    }

    /** The Python data source's table this one adds update mode to. */
    public Table python() {
        return python;
    }

    @Override
    public String name() {
        return python.name();
    }

    @Override
    @SuppressWarnings("deprecation") // Table.schema(): the Python table defines its columns by it
    public StructType schema() {
        return python.schema();
    }

    @Override
    public Column[] columns() {
        return python.columns();
    }

    @Override
    public Transform[] partitioning() {
        return python.partitioning();
    }

    @Override
    public Map<String, String> properties() {
        return python.properties();
    }

    @Override
    public Set<TableCapability> capabilities() {
        return python.capabilities();
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        return ((SupportsRead) python).newScanBuilder(options);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        return new UpdateAsAppendWriteBuilder(((SupportsWrite) python).newWriteBuilder(info), info);
    }
}

package io.kstream.spark;

import io.kstream.spark.log.KStreamException;
import io.kstream.spark.log.MetadataSnapshot;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Map;
import java.util.TreeSet;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code format("kstream")} when the kstream jar is on the session (spark.jars). Spark 4.3
 * resolves a short name to a JVM DataSourceRegister before the Python data source of the same
 * name (checked: docs/JVM_READER.md), so this provider is asked for every kstream read and
 * write, and hands what it does not do to the Python data source that pyspark_kstream
 * registered, through Spark's own PythonDataSourceV2 (the provider Spark would have used):
 * <ul>
 * <li>writes (batch and streaming): always Python (Spark asks for the table with the
 *     DataFrame's schema and never infers one, so {@link #inferSchema} was not called);</li>
 * <li>reads: {@link ReaderChoice} on the options (reader=jvm|python|auto): the JVM reader
 *     ({@link KStreamTable}), or Python's table;</li>
 * <li>a read with a user-given schema: Python (it is what Python did).</li>
 * </ul>
 * Spark makes one provider instance per DataFrameReader/Writer load, so the choice made in
 * inferSchema holds for the getTable that follows it.
 */
public final class KStreamProvider implements TableProvider, DataSourceRegister {
    public static final String SHORT_NAME = "kstream";

    private PythonDataSourceV2 python;
    private ReaderChoice.Reader chosen;

    @Override
    public String shortName() {
        return SHORT_NAME;
    }

    private PythonDataSourceV2 python() {
        if (python == null) {
            python = new PythonDataSourceV2();
            python.setShortName(SHORT_NAME);
        }
        return python;
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        chosen = ReaderChoice.choose(options);
        if (chosen == ReaderChoice.Reader.PYTHON) return python().inferSchema(options);
        OptionNames.check(options);
        ReaderOptions parsed = ReaderOptions.parse(options, null);
        PartitionPlanner planner = new PartitionPlanner(parsed);
        MetadataSnapshot snapshot = planner.snapshot();
        TreeSet<String> topics = new TreeSet<>();
        for (TopicPartition tp : planner.topicPartitions()) topics.add(tp.topic);
        try {
            return OutputSchema.spark(OutputSchema.arrow(snapshot, new ArrayList<>(topics), parsed.includeHeaders),
                parsed.columns);
        } catch (OutputSchema.UnsupportedColumnException e) {
            if (!ReaderChoice.isAuto(options)) throw e;
            chosen = ReaderChoice.Reader.PYTHON; // a column type the JVM reader does not convert
            return python().inferSchema(options);
        } catch (IOException e) {
            throw new KStreamException(KStreamException.Kind.KStreamError, "unreadable topic schema in "
                + parsed.cluster + ": " + e, e);
        }
    }

    @Override
    public boolean supportsExternalMetadata() {
        return true; // a write's table takes the DataFrame's schema, as Python's does
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        if (chosen == ReaderChoice.Reader.JVM) return new KStreamTable(schema, properties);
        return python().getTable(schema, partitioning, properties);
    }

    /** Which reader the last inferSchema chose (for tests and explain output). */
    public ReaderChoice.Reader chosen() {
        return chosen;
    }
}

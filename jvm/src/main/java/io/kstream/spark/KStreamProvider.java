package io.kstream.spark;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.MetadataSnapshot;
import io.kstream.spark.options.OptionNames;
import io.kstream.spark.options.ReaderChoice;
import io.kstream.spark.options.ReaderOptions;
import io.kstream.spark.read.OutputSchema;
import io.kstream.spark.read.PartitionPlanner;
import io.kstream.spark.read.TopicPartition;
import io.kstream.spark.write.KStreamWriteTable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Map;
import java.util.TreeSet;
import org.apache.spark.sql.AnalysisException;
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
 * <li>writes (batch and streaming; they name no subscribe, assign or subscribePattern; Spark asks
 *     for the table with the DataFrame's schema): Python's table wrapped in a
 *     {@link KStreamWriteTable}, which adds the {@code update} output mode Python's table lacks
 *     and lets option writer (jvm|python|auto, {@code write.WriterChoice}) give a batch append to
 *     the JVM writer ({@code write.JvmBatchWrite});</li>
 * <li>reads: {@link ReaderChoice} on the options (reader=jvm|python|auto): the JVM reader
 *     ({@link KStreamTable}), or Python's table;</li>
 * <li>a read with a user-given schema: Python, unless it is the JVM reader's own schema.</li>
 * </ul>
 * Stateless, as Spark's Kafka provider is: the provider keeps nothing between calls (Spark may make
 * one per load, or share one). {@link #getTable} decides again from what it is given, and both
 * calls reach the same answer through {@link #jvmSchema}: a read (it names subscribe, assign or
 * subscribePattern) that {@link ReaderChoice} gives the JVM reader, whose schema is the one the
 * JVM reader produces for these options (inferSchema's, or a user schema equal to it), gets the
 * JVM table; anything else (every write, a different user schema, reader=python, a column type
 * the JVM reader does not convert under reader=auto) gets Python's, a write's (options naming no
 * topics to read) wrapped in a {@link KStreamWriteTable}. The one field is the Python
 * provider delegate, which holds what Spark's own provider instance would hold.
 */
public final class KStreamProvider implements TableProvider, DataSourceRegister {
    public static final String SHORT_NAME = "kstream";

    /** Options naming what to read; a write names none of them (it takes option topic). */
    private static final String[] READ_OPTIONS = {"subscribe", "assign", "subscribepattern"};

    @Override
    public String shortName() {
        return SHORT_NAME;
    }

    /**
     * The Python data source's provider, made on first use: it is the provider Spark would have
     * used, and it caches the Python-side source it creates in inferSchema for its getTable.
     */
    private PythonDataSourceV2 python;

    private PythonDataSourceV2 python() {
        if (python == null) {
            python = new PythonDataSourceV2();
            python.setShortName(SHORT_NAME);
        }
        return python;
    }

    private static boolean isRead(Map<String, String> options) {
        Map<String, String> lower = ReaderOptions.lowered(options);
        for (String name : READ_OPTIONS) if (lower.containsKey(name)) return true;
        return false;
    }

    /**
     * The schema the JVM reader produces for these read options, or null when the Python reader
     * serves them (reader=python, a Python-only option under auto, or under auto a column type
     * the JVM reader does not convert). Throws a ConfigError for a bad option or reader=jvm on
     * what it cannot do.
     */
    static StructType jvmSchema(CaseInsensitiveStringMap options) {
        if (ReaderChoice.choose(options) == ReaderChoice.Reader.PYTHON) return null;
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
            return null; // a column type the JVM reader does not convert: Python's
        } catch (IOException e) {
            throw new KStreamException(KStreamException.Kind.KStreamError, "unreadable topic schema in "
                + parsed.cluster + ": " + e, e);
        }
    }

    /**
     * Python's provider, after checking that Spark found the Python data source. Spark looks it
     * up once per JVM in a Python worker and, when that worker cannot import pyspark_kstream
     * (it runs Spark's interpreter, not necessarily the driver's), remembers none and fails
     * every later use with DATA_SOURCE_NOT_EXIST, a message that names neither the interpreter
     * nor the fix: this says both.
     */
    private PythonDataSourceV2 pythonFound() {
        PythonDataSourceV2 provider = python();
        try {
            provider.source();
        } catch (Exception e) { // AnalysisException, checked to javac though Scala declares none
            // Spark 4.3 names the failed lookup DATA_SOURCE_NOT_EXIST (DATA_SOURCE_NOT_FOUND is its
            // error for a format nothing provides, as without the jar).
            if (!(e instanceof AnalysisException a) || !"DATA_SOURCE_NOT_EXIST".equals(a.getCondition())) throw e;
            throw new KStreamException(KStreamException.Kind.ConfigError, pythonNotFound(
                System.getenv("PYSPARK_DRIVER_PYTHON"), System.getenv("PYSPARK_PYTHON")), e);
        }
        return provider;
    }

    /**
     * The message when Spark's Python worker could not find the kstream data source, naming the
     * interpreter Spark ran: the Spark JVM's PYSPARK_DRIVER_PYTHON, else its PYSPARK_PYTHON,
     * else python3 on its PATH (the order of Spark 4.3's PythonUtils.defaultPythonExec, which
     * the data source lookup and the data source's workers use; spark.pyspark.python is not read
     * there).
     */
    static String pythonNotFound(String driverPython, String workerPython) {
        String interpreter;
        if (driverPython != null && !driverPython.isEmpty()) {
            interpreter = "'" + driverPython + "' (PYSPARK_DRIVER_PYTHON of the Spark JVM)";
        } else if (workerPython != null && !workerPython.isEmpty()) {
            interpreter = "'" + workerPython + "' (PYSPARK_PYTHON of the Spark JVM)";
        } else {
            interpreter = "'python3' from the Spark JVM's PATH (neither PYSPARK_DRIVER_PYTHON nor PYSPARK_PYTHON"
                + " was set when it started)";
        }
        return "format(\"kstream\") writes and Python reads run the kstream Python data source in Spark's"
            + " Python workers, but Spark's Python interpreter " + interpreter + " cannot import kstream"
            + " (pyspark_kstream), so Spark found no Python data source named kstream. Build the session with"
            + " kstream.spark_session() (or kstream.spark_builder()), or set PYSPARK_PYTHON to an interpreter"
            + " that has kstream installed (e.g. the driver's, sys.executable) before the Spark JVM starts;"
            + " a running JVM keeps its interpreter, so restart the Python process (notebook kernel) first";
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        StructType schema = jvmSchema(options);
        return schema != null ? schema : pythonFound().inferSchema(options);
    }

    @Override
    public boolean supportsExternalMetadata() {
        return true; // a write's table takes the DataFrame's schema, as Python's does
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        if (isRead(properties)) {
            StructType jvm = jvmSchema(new CaseInsensitiveStringMap(properties));
            if (jvm != null && jvm.equals(schema)) return new KStreamTable(schema, properties);
        }
        Table python = pythonFound().getTable(schema, partitioning, properties);
        // A read (Python reader) gets Python's table as is; anything else is a write (or a read
        // that names no topics, which Python's scan refuses): Python's table plus update mode.
        return isRead(properties) ? python : new KStreamWriteTable(python);
    }
}

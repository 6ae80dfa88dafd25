package io.kstream.spark.write;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.options.OptionNames;
import io.kstream.spark.options.ReaderOptions;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * What the JVM writer reads of a write, checked on the driver before any task runs: the
 * options (the Python sink's names, {@code check_sink_options}; kafka.* accepted as the
 * connector's sink accepts them, except the serializers it refuses) and the DataFrame's columns
 * (the Python sink's {@code SINK_COLUMNS}: value required, binary or string; key binary or string;
 * headers as the reader gives them or a map; partition an integer; timestamp a timestamp or int64
 * ms; topic a string, or option topic, which overrides it). Other columns are ignored, as the
 * Python sink and the Kafka connector ignore them. Errors use the Python sink's words.
 */
public final class SinkInput implements Serializable {
    private static final long serialVersionUID = 1L;

    public enum Kind { BINARY, STRING, INTEGER, TIMESTAMP, HEADERS_ARRAY, HEADERS_MAP }

    public final String cluster;
    public final String topicOption;
    public final int key;
    public final int value;
    public final int headers;
    public final int partition;
    public final int timestamp;
    public final int topic;
    public final Kind keyKind;
    public final Kind valueKind;
    public final Kind headersKind;
    public final boolean headerValueString;
    public final Kind timestampKind;
    public final DataType partitionType;
    public final DataType timestampType;

    private SinkInput(Map<String, String> lower, StructType schema) {
        cluster = ReaderOptions.clusterPath(lower);
        String t = lower.get("topic");
        topicOption = t == null ? null : t.strip();
        List<String> names = new ArrayList<>(List.of(schema.fieldNames()));
        if (!names.contains("value")) {
            throw new KStreamException(KStreamException.Kind.InvalidRecordError, "the kstream sink needs a 'value'"
                + " column (binary or string); got " + pyList(names));
        }
        if (!names.contains("topic") && topicOption == null) {
            throw new KStreamException(KStreamException.Kind.InvalidRecordError, "rows need a 'topic' column or the"
                + " sink needs .option('topic', ...)");
        }
        key = names.indexOf("key");
        value = names.indexOf("value");
        headers = names.indexOf("headers");
        partition = names.indexOf("partition");
        timestamp = names.indexOf("timestamp");
        topic = topicOption != null ? -1 : names.indexOf("topic");
        keyKind = key < 0 ? null : binaryLike(schema.fields()[key]);
        valueKind = binaryLike(schema.fields()[value]);
        if (topic >= 0 && !(schema.fields()[topic].dataType() instanceof StringType)) {
            throw invalid("column 'topic' has type " + schema.fields()[topic].dataType().simpleString()
                + "; expected string");
        }
        partitionType = partition < 0 ? null : schema.fields()[partition].dataType();
        if (partitionType != null && !(partitionType instanceof IntegerType || partitionType instanceof LongType
                || partitionType instanceof ShortType || partitionType instanceof ByteType)) {
            throw invalid("column 'partition' has type " + arrowName(partitionType) + "; expected an integer");
        }
        timestampKind = timestamp < 0 ? null : timestampKind(schema.fields()[timestamp]);
        timestampType = timestamp < 0 ? null : schema.fields()[timestamp].dataType();
        if (headers < 0) {
            headersKind = null;
            headerValueString = false;
        } else {
            DataType type = schema.fields()[headers].dataType();
            DataType valueType = null;
            Kind kind = null;
            if (type instanceof ArrayType a && a.elementType() instanceof StructType s && s.fields().length == 2
                    && s.fieldNames()[0].equals("key") && s.fields()[0].dataType() instanceof StringType
                    && s.fieldNames()[1].equals("value")) {
                kind = Kind.HEADERS_ARRAY;
                valueType = s.fields()[1].dataType();
            } else if (type instanceof MapType m && m.keyType() instanceof StringType) {
                kind = Kind.HEADERS_MAP;
                valueType = m.valueType();
            }
            if (kind == null || !(valueType instanceof BinaryType || valueType instanceof StringType)) {
                throw invalid("column 'headers' has type " + type.simpleString()
                    + "; expected list<item: struct<key: string not null, value: binary>>");
            }
            headersKind = kind;
            headerValueString = valueType instanceof StringType;
        }
    }

    /** Check the options and columns of a write; ConfigError / InvalidRecordError as the Python sink's. */
    public static SinkInput of(Map<String, String> options, StructType schema) {
        OptionNames.checkSink(options);
        Map<String, String> lower = ReaderOptions.lowered(options);
        return new SinkInput(lower, schema);
    }

    private static Kind binaryLike(StructField field) {
        if (field.dataType() instanceof BinaryType) return Kind.BINARY;
        if (field.dataType() instanceof StringType) return Kind.STRING;
        throw invalid("column '" + field.name() + "' has type " + arrowName(field.dataType())
            + "; expected binary or string");
    }

    /** A Spark type by the Arrow name the Python sink's errors use (pyspark hands it Arrow columns). */
    static String arrowName(DataType type) {
        if (type instanceof ByteType) return "int8";
        if (type instanceof ShortType) return "int16";
        if (type instanceof IntegerType) return "int32";
        if (type instanceof LongType) return "int64";
        if (type instanceof org.apache.spark.sql.types.FloatType) return "float";
        if (type instanceof org.apache.spark.sql.types.DoubleType) return "double";
        if (type instanceof org.apache.spark.sql.types.BooleanType) return "bool";
        return type.simpleString();
    }

    private static Kind timestampKind(StructField field) {
        DataType t = field.dataType();
        if (t instanceof TimestampType || t instanceof TimestampNTZType) return Kind.TIMESTAMP;
        if (t instanceof IntegerType || t instanceof LongType || t instanceof ShortType || t instanceof ByteType) {
            return Kind.INTEGER;
        }
        throw invalid("column 'timestamp' has type " + arrowName(t)
            + "; expected a timestamp or int64 milliseconds");
    }

    static KStreamException invalid(String message) {
        return new KStreamException(KStreamException.Kind.InvalidRecordError, message);
    }

    private static String pyList(List<String> names) {
        List<String> quoted = new ArrayList<>();
        for (String n : names) quoted.add("'" + n + "'");
        return "[" + String.join(", ", quoted) + "]";
    }

    @Override
    public String toString() {
        return "SinkInput(cluster=" + cluster + ", topic=" + topicOption + ")";
    }
}

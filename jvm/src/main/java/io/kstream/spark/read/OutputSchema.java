package io.kstream.spark.read;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.MetadataSnapshot;
import io.kstream.spark.format.PayloadDecoder;
import io.kstream.spark.options.ReaderOptions;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;

/**
 * The columns a read returns, as Python's kstream.log.storage.output.output_schema and the data
 * source's schema() build them: key, value (or a typed topic's declared columns, current
 * schema version), topic, partition, offset, timestamp, timestampType, and headers with
 * includeHeaders; option 'columns' keeps only those named (in this order). The Spark types are
 * those pyspark derives from the same Arrow schema.
 */
public final class OutputSchema {
    public static final Set<String> COMPUTED = Set.of("topic", "partition", "offset", "timestamp", "timestampType");

    private OutputSchema() {}

    public static Field headersField() {
        Field key = new Field("key", new FieldType(false, ArrowType.Utf8.INSTANCE, null), null);
        Field value = new Field("value", FieldType.nullable(ArrowType.Binary.INSTANCE), null);
        Field entry = new Field("item", FieldType.nullable(ArrowType.Struct.INSTANCE), List.of(key, value));
        return new Field("headers", FieldType.nullable(ArrowType.List.INSTANCE), List.of(entry));
    }

    /** The Arrow schema of every column a read of these topics may return (before 'columns'). */
    public static Schema arrow(MetadataSnapshot snapshot, List<String> topics, boolean includeHeaders) throws IOException {
        Set<String> kinds = new TreeSet<>();
        byte[] current = null;
        for (String t : topics) {
            MetadataSnapshot.TopicInfo info = snapshot.topic(t);
            byte[] schema = info.typed() ? info.schemas.get(info.schemas.size() - 1) : null;
            kinds.add(schema == null ? "bytes" : Arrays.toString(schema));
            current = schema;
        }
        if (kinds.size() > 1) {
            throw KStreamException.config("the selected topics " + ReaderOptions.pyList(new ArrayList<>(new TreeSet<>(topics)))
                + " mix bytes topics and typed schemas; read them separately");
        }
        List<Field> fields = new ArrayList<>();
        fields.add(new Field("key", FieldType.nullable(ArrowType.Binary.INSTANCE), null));
        if (current == null) {
            fields.add(new Field("value", FieldType.nullable(ArrowType.Binary.INSTANCE), null));
        } else {
            fields.addAll(PayloadDecoder.schemaOf(current).getFields());
        }
        fields.add(new Field("topic", FieldType.nullable(ArrowType.Utf8.INSTANCE), null));
        fields.add(new Field("partition", FieldType.nullable(new ArrowType.Int(32, true)), null));
        fields.add(new Field("offset", FieldType.nullable(new ArrowType.Int(64, true)), null));
        fields.add(new Field("timestamp", FieldType.nullable(new ArrowType.Timestamp(TimeUnit.MILLISECOND, "UTC")), null));
        fields.add(new Field("timestampType", FieldType.nullable(new ArrowType.Int(32, true)), null));
        if (includeHeaders) fields.add(headersField());
        return new Schema(fields);
    }

    /** A stored column's Spark type (what pyspark derives); ConfigError for one Spark cannot read. */
    static DataType fromArrow(Field field) {
        try {
            return ArrowUtils.fromArrowField(field);
        } catch (RuntimeException e) {
            throw new UnsupportedColumnException("column '" + field.getName() + "' has Arrow type " + field.getType()
                + ", which the JVM reader does not convert (" + e.getMessage() + "); use option reader=python");
        }
    }

    /** A ConfigError for a stored column type the JVM reader cannot hand to Spark. */
    public static final class UnsupportedColumnException extends KStreamException {
        UnsupportedColumnException(String message) {
            super(Kind.ConfigError, message);
        }
    }

    /** The Spark schema of a read, after option 'columns'. */
    public static StructType spark(Schema arrow, List<String> columns) {
        List<StructField> converted = new ArrayList<>();
        for (Field f : arrow.getFields()) {
            DataType type = f.getName().equals("timestamp") && !f.getType().equals(ArrowType.Null.INSTANCE)
                ? DataTypes.TimestampType : fromArrow(f);
            converted.add(new StructField(f.getName(), type, f.isNullable(), Metadata.empty()));
        }
        StructType all = new StructType(converted.toArray(new StructField[0]));
        if (columns == null) return all;
        Set<String> names = new LinkedHashSet<>(Arrays.asList(all.fieldNames()));
        List<String> unknown = new ArrayList<>();
        for (String c : columns) if (!names.contains(c)) unknown.add(c);
        if (!unknown.isEmpty()) {
            unknown.sort(null);
            throw KStreamException.config("option 'columns' names " + ReaderOptions.pyList(unknown)
                + ", which the topic does not have; columns: " + ReaderOptions.pyList(new ArrayList<>(names)));
        }
        List<StructField> kept = new ArrayList<>();
        for (StructField f : all.fields()) if (columns.contains(f.name())) kept.add(f);
        return new StructType(kept.toArray(new StructField[0]));
    }
}

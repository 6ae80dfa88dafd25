package io.kstream.spark.realtime;

import io.kstream.spark.error.KStreamException;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A child JVM for tests/jvm/test_real_time_sink.py: one {@link KStreamForeachWriter} task, as
 * Spark runs it (constructor on the "driver", open, process per row, close), without Spark.
 *
 * <pre>
 * write CLUSTER TOPIC CHECKPOINT ACKS [columns|long]
 *     stdin: "SOURCE_TOPIC SOURCE_PARTITION SOURCE_OFFSET VALUE [KEY]" per row, until EOF or a
 *     line "kill" (exit at once, nothing closed: a SIGKILLed task); prints "closed" after close.
 *     With columns, only the constructor's checks run ("ok" or the error); with long, the
 *     source_partition column is a bigint.
 * </pre>
 * A KStreamException ends the probe with exit code 2 and "KIND: message" on stdout.
 */
public final class RealTimeProbe {
    private RealTimeProbe() {}

    static final StructType SCHEMA = new StructType(new StructField[] {
        DataTypes.createStructField("key", DataTypes.BinaryType, true),
        DataTypes.createStructField("value", DataTypes.BinaryType, true),
        DataTypes.createStructField("source_topic", DataTypes.StringType, true),
        DataTypes.createStructField("source_partition", DataTypes.IntegerType, true),
        DataTypes.createStructField("source_offset", DataTypes.LongType, true)});

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        try {
            StructType schema = SCHEMA;
            boolean columns = args.length > 5 && args[5].equals("columns");
            boolean longPartition = args.length > 5 && args[5].equals("long");
            if (longPartition) {
                StructField[] f = SCHEMA.fields().clone();
                f[3] = DataTypes.createStructField("source_partition", DataTypes.LongType, true);
                schema = new StructType(f);
            }
            if (columns) {
                // "columns": a schema without the source columns, for the constructor's error
                schema = new StructType(new StructField[] {
                    DataTypes.createStructField("value", DataTypes.BinaryType, true)});
            }
            KStreamForeachWriter writer = new KStreamForeachWriter(
                Map.of("cluster", args[1], "topic", args[2], "acks", args[4]), schema, args[3]);
            if (columns) {
                out.println("ok");
                return;
            }
            writer.open(0, 0);
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null) {
                if (line.equals("kill")) {
                    Runtime.getRuntime().halt(9);
                }
                List<String> f = List.of(line.split(" "));
                byte[] key = f.size() > 4 ? f.get(4).getBytes(StandardCharsets.UTF_8) : null;
                Object partition = longPartition ? (Object) Long.parseLong(f.get(1)) : Integer.parseInt(f.get(1));
                writer.process(RowFactory.create(key, f.get(3).getBytes(StandardCharsets.UTF_8), f.get(0),
                    partition, Long.parseLong(f.get(2))));
            }
            writer.close(null);
            out.println("closed");
        } catch (KStreamException e) {
            out.println(e.getMessage());
            System.exit(2);
        }
    }
}

package io.kstream.spark;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.options.ReaderChoice;
import io.kstream.spark.options.ReaderOptions;
import io.kstream.spark.read.KStreamReaderFactory;
import io.kstream.spark.read.OutputSchema;
import io.kstream.spark.read.PartitionPlanner;
import io.kstream.spark.read.TopicPartition;
import io.kstream.spark.stream.KStreamMicroBatchStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A JVM read of kstream: a batch over [startingOffsets, endingOffsets) planned in Java from the
 * metadata snapshot and the log dirs, or a micro-batch / Real-time Mode stream.
 */
public final class KStreamScan implements Scan, Batch {
    private final StructType schema;
    private final Map<String, String> options;

    public KStreamScan(StructType schema, CaseInsensitiveStringMap options) {
        this.schema = schema;
        this.options = options.asCaseSensitiveMap();
    }

    @Override
    public StructType readSchema() {
        return schema;
    }

    @Override
    public String description() {
        return "kstream JVM reader";
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    @Override
    public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
        if (ReaderOptions.lowered(options).containsKey(ReaderChoice.GROUP_ID)) {
            // reader=jvm (ReaderChoice gives auto's group.id reads to Python): a stream here would
            // read and never commit
            throw KStreamException.config("option 'reader' is jvm, but the JVM reader does not commit a streaming "
                + "query's offsets to a consumer group (option group.id); use reader=python or reader=auto "
                + "(docs/JVM_READER.md)");
        }
        return new KStreamMicroBatchStream(schema, ReaderOptions.parse(options, true));
    }

    @Override
    public InputPartition[] planInputPartitions() {
        ReaderOptions parsed = ReaderOptions.parse(options, false);
        PartitionPlanner planner = new PartitionPlanner(parsed);
        List<TopicPartition> tps = planner.topicPartitions();
        PartitionPlanner.checkCoversSelection("startingOffsets", parsed.startingOffsets, tps);
        PartitionPlanner.checkCoversSelection("endingOffsets", parsed.endingOffsets, tps);
        Map<TopicPartition, Long> start = planner.resolve(parsed.startingOffsets, tps, ReaderOptions.EARLIEST);
        Map<TopicPartition, Long> end = planner.resolve(parsed.endingOffsets, tps, ReaderOptions.LATEST);
        return planner.ranges(start, end).toArray(new InputPartition[0]);
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        ReaderOptions parsed = ReaderOptions.parse(options, false);
        return new KStreamReaderFactory(schema, parsed, parsed.latestPerKey ? valueColumns(parsed) : Set.of());
    }

    /** The selected topics' value columns (value, or a typed topic's own): a latestPerKey read's tombstone rule. */
    private static Set<String> valueColumns(ReaderOptions parsed) {
        PartitionPlanner planner = new PartitionPlanner(parsed);
        TreeSet<String> topics = new TreeSet<>();
        for (TopicPartition tp : planner.topicPartitions()) topics.add(tp.topic);
        Set<String> out = new TreeSet<>();
        try {
            for (Field f : OutputSchema.arrow(planner.snapshot(), new ArrayList<>(topics), false).getFields()) {
                String name = f.getName();
                if (!OutputSchema.COMPUTED.contains(name) && !name.equals("key") && !name.equals("headers")) out.add(name);
            }
        } catch (IOException e) {
            throw new KStreamException(KStreamException.Kind.KStreamError, "unreadable topic schema in "
                + parsed.cluster + ": " + e, e);
        }
        return out;
    }
}

package io.kstream.spark.realtime;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.MetadataSnapshot;
import io.kstream.spark.format.SourcePosition;
import io.kstream.spark.log.PartitionAppender;
import io.kstream.spark.write.Partitioner;
import io.kstream.spark.write.QueryIdentity;
import io.kstream.spark.write.RowRouter;
import io.kstream.spark.write.SinkInput;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.spark.sql.ForeachWriter;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.CatalystTypeConverters;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;

/**
 * The Real-time Mode sink: a {@link ForeachWriter} (the sink kind Spark's Real-time Mode accepts)
 * that appends each row to a kstream topic within milliseconds, writing each source record once
 * across restarts (docs/JVM_WRITER.md, "The Real-time Mode sink"; docs/TRANSACTIONS.md,
 * "Source-position idempotence").
 *
 * <p>Rows follow the sink's column rules ({@link RowRouter}: key, value, headers, partition,
 * timestamp, topic column or option, Kafka's murmur2 partitioner) and must carry their source
 * position in {@code source_topic} (string), {@code source_partition} (int) and
 * {@code source_offset} (long). {@link #process} only buffers; one flusher thread per task
 * appends what arrived (every {@code linger.ms}, and at once while the previous append was
 * syncing: a group commit) as positioned frames, one per (output partition, source partition),
 * under the partition lock with the acks asked ({@code all}: fsynced before the high watermark
 * moves, so a read_committed consumer sees a record once it is durable).
 *
 * <p>The identity of a run of positions is (sink id, source topic, source partition), the sink id
 * the query's {@code query:<id>} from its checkpoint (the micro-batch sinks' rule,
 * {@link QueryIdentity}): a row whose source offset is at or below what the output partition holds
 * of its identity is dropped, before buffering and again under the partition lock (against other
 * writers of the same identity); a gap is accepted. Not thread-safe beyond Spark's contract (one
 * task calls open, process, close).
 *
 * <p>A replayed row must go to the partition its first run wrote it to, or the drop above cannot
 * see it: a keyed row (or one with a {@code partition}) goes where the key says, and a keyless row
 * to {@link #keylessPartition}, a function of its source position (never the micro-batch sink's
 * random sticky partition).
 */
public final class KStreamForeachWriter extends ForeachWriter<Row> {
    private static final long serialVersionUID = 1L;
    /** Rows buffered (not yet handed to the flusher's append) before process() waits. */
    public static final int MAX_BUFFERED_ROWS = 65_536;
    /** Rows per frame at most (a frame also stays below the topic's message.max.bytes). */
    public static final int MAX_FRAME_ROWS = 16_384;
    /** Source offsets of one source partition whose keyless rows share an output partition. */
    public static final long KEYLESS_STICKY_OFFSETS = 16_384;
    /** How often the flusher moves the identities' snapshots forward (positioned_sources). */
    public static final long SNAPSHOT_INTERVAL_MS = 10_000;
    /** Longest linger.ms accepted. */
    public static final long MAX_LINGER_MS = 1_000;
    /** Times an append is re-filtered and retried when another writer of its identity wrote first. */
    static final int MAX_APPEND_RETRIES = 16;
    /** The options of this sink that the micro-batch sink does not have. */
    public static final List<String> OWN_OPTIONS = List.of("acks", "linger.ms", "checkpointlocation");

    private final Map<String, String> sinkOptions;
    private final StructType schema;
    private final String checkpointLocation;
    private final String acks;
    private final long lingerMs;
    private final int sourceTopic;
    private final int sourcePartition;
    private final int sourceOffset;

    private transient Task task;

    /**
     * @param options the sink's options: {@code cluster}, {@code topic} (or a topic column),
     *     {@code acks} (all, 1, 0; default all), {@code linger.ms} (0..1000; default 0)
     * @param schema the streaming DataFrame's schema (checked here, on the driver)
     * @param checkpointLocation the query's checkpoint: its id is the sink id
     */
    public KStreamForeachWriter(Map<String, String> options, StructType schema, String checkpointLocation) {
        Map<String, String> rest = new HashMap<>();
        Map<String, String> own = new HashMap<>();
        for (Map.Entry<String, String> e : options.entrySet()) {
            String lower = e.getKey().toLowerCase(java.util.Locale.ROOT);
            (OWN_OPTIONS.contains(lower) ? own : rest).put(e.getKey(), e.getValue());
        }
        if (checkpointLocation == null || checkpointLocation.isBlank()) {
            throw KStreamException.config("the Real-time Mode sink needs the query's checkpointLocation: its query"
                + " id names the sink, so a restarted query drops the records it wrote before");
        }
        SinkInput.of(rest, schema);  // the micro-batch sink's option and column checks, on the driver
        this.sinkOptions = rest;
        this.schema = schema;
        this.checkpointLocation = checkpointLocation;
        String a = own.getOrDefault("acks", "all").strip();
        PartitionAppender.Config.of(Map.of(), a);  // ConfigError for a bad acks
        this.acks = a;
        String linger = own.getOrDefault("linger.ms", "0").strip();
        try {
            this.lingerMs = Long.parseLong(linger);
        } catch (NumberFormatException e) {
            throw KStreamException.config("linger.ms=" + linger + " is not an integer (0.." + MAX_LINGER_MS + ")");
        }
        if (lingerMs < 0 || lingerMs > MAX_LINGER_MS) {
            throw KStreamException.config("linger.ms=" + linger + " must be within 0.." + MAX_LINGER_MS);
        }
        List<String> names = List.of(schema.fieldNames());
        this.sourceTopic = column(schema, names, "source_topic", "string");
        this.sourcePartition = column(schema, names, "source_partition", "int");
        this.sourceOffset = column(schema, names, "source_offset", "bigint");
    }

    private static int column(StructType schema, List<String> names, String name, String type) {
        int i = names.indexOf(name);
        if (i < 0) {
            throw new KStreamException(KStreamException.Kind.InvalidRecordError, "the Real-time Mode sink needs the"
                + " source position of each row in columns source_topic (string), source_partition (int) and"
                + " source_offset (bigint), e.g. .selectExpr('key', 'value', 'topic AS source_topic', 'partition AS"
                + " source_partition', 'offset AS source_offset') on a kstream stream; column '" + name
                + "' is missing (got " + names + ")");
        }
        Object t = schema.fields()[i].dataType();
        boolean ok = switch (type) {
            case "string" -> t instanceof StringType;
            case "int" -> t instanceof IntegerType || t instanceof LongType;
            default -> t instanceof LongType;
        };
        if (!ok) {
            throw new KStreamException(KStreamException.Kind.InvalidRecordError, "column '" + name + "' has type "
                + schema.fields()[i].dataType().simpleString() + "; the Real-time Mode sink needs " + type);
        }
        return i;
    }

    @Override
    public boolean open(long partitionId, long epochId) {
        String sinkId = QueryIdentity.sinkId(checkpointLocation);
        task = new Task(SinkInput.of(sinkOptions, schema), schema, sinkId, acks, lingerMs);
        return true;
    }

    @Override
    public void process(Row row) {
        Task t = task;
        InternalRow internal = (InternalRow) t.toInternal.apply(row);
        RowRouter.Record r = t.router.route(internal);
        if (row.isNullAt(sourceTopic) || row.isNullAt(sourcePartition) || row.isNullAt(sourceOffset)) {
            throw new KStreamException(KStreamException.Kind.InvalidRecordError, "a row has a null source_topic,"
                + " source_partition or source_offset: the Real-time Mode sink needs each row's source position");
        }
        long p = ((Number) row.get(sourcePartition)).longValue();
        long offset = row.getLong(sourceOffset);
        if (p < 0 || p > Integer.MAX_VALUE || offset < 0) {
            // a long partition was cut to an int (2^32 + 1 became 1, another identity's), and an offset
            // below 0 (a -1 put in for a null) was below the identity's last: both dropped as replays
            throw new KStreamException(KStreamException.Kind.InvalidRecordError, "a row has source_partition " + p
                + " and source_offset " + offset + ": a source position is a partition 0.." + Integer.MAX_VALUE
                + " and an offset >= 0 (the row's source record's), never a placeholder");
        }
        SourcePosition.Identity id = t.identity(row.getString(sourceTopic), (int) p);
        if (r.key() == null && !t.partitionGiven(internal)) {
            r = new RowRouter.Record(r.topic(), keylessPartition(id.topic(), id.partition(), offset,
                r.topic().partitions), r.key(), r.value(), r.timestamp(), r.headers());
        }
        t.add(r, id, offset);
    }

    /**
     * The output partition of a keyless row (no {@code partition} given): the partition Kafka's
     * murmur2 gives the source partition's name ({@code topic-partition}), moved on by one every
     * {@link #KEYLESS_STICKY_OFFSETS} source offsets. Sticky like Kafka's keyless partitioner, but
     * a function of the source position, so a replay of the record goes where its first run did.
     */
    public static int keylessPartition(String sourceTopic, int sourcePartition, long sourceOffset, int numPartitions) {
        int first = Partitioner.partitionForKey((sourceTopic + "-" + sourcePartition).getBytes(
            java.nio.charset.StandardCharsets.UTF_8), numPartitions);
        return (int) Math.floorMod(first + Math.floorDiv(sourceOffset, KEYLESS_STICKY_OFFSETS), (long) numPartitions);
    }

    @Override
    public void close(Throwable errorOrNull) {
        Task t = task;
        task = null;
        if (t != null) t.close(errorOrNull == null);
    }

    /** One task's state on its executor: routing, buffers and the flusher thread. */
    private static final class Task {
        final scala.Function1<Object, Object> toInternal;  // Spark's Row -> InternalRow converter
        final RowRouter router;
        final String sinkId;
        final Flusher flusher;
        final Partitioner partitioner = new Partitioner(Partitioner.MURMUR2_RANDOM, new Random());
        final Map<String, SourcePosition.Identity> identities = new HashMap<>();

        final SinkInput input;

        Task(SinkInput input, StructType schema, String sinkId, String acks, long lingerMs) {
            this.input = input;
            this.toInternal = CatalystTypeConverters.createToCatalystConverter(schema);
            MetadataSnapshot snapshot = MetadataSnapshot.read(input.cluster);
            this.router = new RowRouter(input, snapshot, partitioner);
            this.sinkId = sinkId;
            this.flusher = new Flusher(input, snapshot, acks, lingerMs);
        }

        SourcePosition.Identity identity(String topic, int partition) {
            String key = topic + "\n" + partition;
            SourcePosition.Identity id = identities.get(key);
            if (id == null) {
                id = new SourcePosition.Identity(sinkId, topic, partition);
                identities.put(key, id);
            }
            return id;
        }

        void add(RowRouter.Record r, SourcePosition.Identity id, long sourceOffset) {
            String where = r.topic().name + "\n" + r.partition() + "\n" + id.topic() + "\n" + id.partition();
            Long previous = lastAdded.put(where, sourceOffset);
            if (previous != null && previous == sourceOffset) {
                throw new KStreamException(KStreamException.Kind.InvalidRecordError, "two rows of source record "
                    + id.topic() + "-" + id.partition() + "@" + sourceOffset + " go to partition " + r.partition()
                    + " of topic '" + r.topic().name + "': the Real-time Mode sink writes one row per source record"
                    + " and output partition (a source position is written once, so a second row of it would be"
                    + " dropped); send such rows to different partitions, or combine them into one row");
            }
            flusher.add(r, id, sourceOffset);
        }

        /** Whether the row names its partition (a {@code partition} column, not null nor -1). */
        boolean partitionGiven(InternalRow row) {
            return input.partition >= 0 && !row.isNullAt(input.partition)
                && RowRouter.integer(row, input.partition, input.partitionType) >= 0;
        }
        // (output topic, output partition, source topic, source partition) -> last source offset added
        private final Map<String, Long> lastAdded = new HashMap<>();

        void close(boolean clean) {
            flusher.close(clean);
        }
    }
}

package io.kstream.spark.stream;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.MetadataSnapshot;
import io.kstream.spark.options.ReaderOptions;
import io.kstream.spark.read.KStreamReaderFactory;
import io.kstream.spark.read.PartitionPlanner;
import io.kstream.spark.read.TopicPartition;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;
import org.apache.spark.sql.connector.read.streaming.ReadAllAvailable;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxRows;
import org.apache.spark.sql.connector.read.streaming.SupportsRealTimeMode;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;
import org.apache.spark.sql.types.StructType;

/**
 * Micro-batches over the selected partitions, as Python's KStreamStreamReader: offsets are each
 * partition's next offset ({@link KStreamOffset}); new partitions of subscribed topics are
 * picked up at each latestOffset and start at their earliest offset; maxOffsetsPerTrigger is
 * spread over partitions in proportion to their backlog (the Kafka connector's rule);
 * minOffsetsPerTrigger waits up to maxTriggerDelay; Trigger.AvailableNow reads what exists when
 * the query starts. The end of each partition is its HW, or LSO under read_committed. Lives
 * on the driver; each call re-reads the metadata snapshot and the partitions' bounds.
 *
 * <p>Real-time Mode ({@code trigger(realTime=...)}, Update output mode, a JVM sink): after
 * {@link #prepareForRealTimeMode} Spark plans one open-ended {@link TailRange} per partition
 * from the batch's start ({@link #planInputPartitions(Offset)}), its {@link RealTimeReader}s
 * follow the HW until the batch's deadline, and {@link #mergeOffsets} makes the next start from
 * where each reader stopped. Read limits do not apply there and are refused.
 */
public class KStreamMicroBatchStream implements MicroBatchStream, SupportsTriggerAvailableNow, SupportsRealTimeMode {
    protected final StructType schema;
    protected final ReaderOptions options;
    private Map<TopicPartition, Long> availableNowEnd;
    private Map<TopicPartition, Long> reportedLatest;
    private long lastBatchAtMs = System.currentTimeMillis();

    public KStreamMicroBatchStream(StructType schema, ReaderOptions options) {
        this.schema = schema;
        this.options = options;
    }

    @Override
    public Offset initialOffset() {
        PartitionPlanner planner = new PartitionPlanner(options);
        List<TopicPartition> tps = planner.topicPartitions();
        PartitionPlanner.checkCoversSelection("startingOffsets", options.startingOffsets, tps);
        return new KStreamOffset(planner.resolve(options.startingOffsets, tps, ReaderOptions.EARLIEST));
    }

    @Override
    public Offset deserializeOffset(String json) {
        return KStreamOffset.fromJson(json);
    }

    /** The end each selected partition may be read to now (new partitions included). */
    protected Map<TopicPartition, Long> latest() {
        PartitionPlanner planner = new PartitionPlanner(options);
        List<TopicPartition> tps = planner.topicPartitions();
        return planner.resolve(ReaderOptions.OffsetSpec.word("latest"), tps, ReaderOptions.LATEST);
    }

    @Override
    public ReadLimit getDefaultReadLimit() {
        if (options.maxOffsetsPerTrigger != null) return ReadLimit.maxRows(options.maxOffsetsPerTrigger);
        if (options.minOffsetsPerTrigger != null) return ReadLimit.minRows(options.minOffsetsPerTrigger, options.maxTriggerDelayMs);
        return ReadLimit.allAvailable();
    }

    @Override
    public void prepareForTriggerAvailableNow() {
        availableNowEnd = latest();
    }

    @Override
    public Offset latestOffset() {
        throw new UnsupportedOperationException("latestOffset(Offset, ReadLimit) is the one Spark calls for this stream");
    }

    @Override
    public Offset latestOffset(Offset startOffset, ReadLimit limit) {
        Map<TopicPartition, Long> start = new TreeMap<>(((KStreamOffset) startOffset).offsets);
        Map<TopicPartition, Long> latest = new TreeMap<>(latest());
        reportedLatest = latest;
        for (TopicPartition tp : latest.keySet()) start.putIfAbsent(tp, 0L); // new partitions: from the start
        if (availableNowEnd != null) latest.replaceAll((tp, o) -> Math.min(o, availableNowEnd.getOrDefault(tp, 0L)));
        long now = System.currentTimeMillis();
        if (options.minOffsetsPerTrigger != null && availableNowEnd == null) {
            long fresh = 0;
            for (Map.Entry<TopicPartition, Long> e : latest.entrySet()) fresh += e.getValue() - start.getOrDefault(e.getKey(), 0L);
            if (fresh < options.minOffsetsPerTrigger && now - lastBatchAtMs < options.maxTriggerDelayMs) {
                return new KStreamOffset(start); // wait for minOffsetsPerTrigger records, or maxTriggerDelay
            }
        }
        Long maxRows = options.maxOffsetsPerTrigger;
        if (maxRows == null && limit instanceof ReadMaxRows) maxRows = ((ReadMaxRows) limit).maxRows();
        if (maxRows != null) latest = limitRows(start, latest, maxRows);
        if (!latest.equals(start)) lastBatchAtMs = now;
        return new KStreamOffset(latest);
    }

    /** Spread {@code maxRows} over the partitions in proportion to their backlog (floor). */
    static Map<TopicPartition, Long> limitRows(Map<TopicPartition, Long> start, Map<TopicPartition, Long> latest,
                                               long maxRows) {
        Map<TopicPartition, Long> lags = new HashMap<>();
        long total = 0;
        for (Map.Entry<TopicPartition, Long> e : latest.entrySet()) {
            long lag = Math.max(0, e.getValue() - start.getOrDefault(e.getKey(), 0L));
            lags.put(e.getKey(), lag);
            total += lag;
        }
        if (total <= maxRows) return latest;
        Map<TopicPartition, Long> out = new TreeMap<>();
        for (Map.Entry<TopicPartition, Long> e : lags.entrySet()) {
            long share = java.math.BigInteger.valueOf(e.getValue()).multiply(java.math.BigInteger.valueOf(maxRows))
                .divide(java.math.BigInteger.valueOf(total)).longValue();
            out.put(e.getKey(), start.getOrDefault(e.getKey(), 0L) + share);
        }
        return out;
    }

    @Override
    public Offset reportLatestOffset() {
        return new KStreamOffset(reportedLatest != null ? reportedLatest : latest());
    }

    @Override
    public InputPartition[] planInputPartitions(Offset start, Offset end) {
        PartitionPlanner planner = new PartitionPlanner(options);
        List<InputPartition> ranges = planner.ranges(((KStreamOffset) start).offsets, ((KStreamOffset) end).offsets);
        return ranges.toArray(new InputPartition[0]);
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return realTime ? new RealTimeReaderFactory(schema, options) : new KStreamReaderFactory(schema, options);
    }

    private volatile boolean realTime;

    @Override
    public void prepareForRealTimeMode() {
        if (options.maxOffsetsPerTrigger != null || options.minOffsetsPerTrigger != null) {
            throw KStreamException.config("options maxOffsetsPerTrigger and minOffsetsPerTrigger do not apply in "
                + "Real-time Mode (a batch reads whatever arrives until its deadline); drop them");
        }
        realTime = true;
    }

    @Override
    public InputPartition[] planInputPartitions(Offset start) {
        PartitionPlanner planner = new PartitionPlanner(options);
        MetadataSnapshot snapshot = planner.snapshot();
        Map<TopicPartition, Long> from = ((KStreamOffset) start).offsets;
        List<InputPartition> out = new ArrayList<>();
        for (TopicPartition tp : planner.topicPartitions()) {
            MetadataSnapshot.PartitionInfo info = snapshot.topic(tp.topic).partitions.get(tp.partition);
            snapshot.leaderDir(tp.topic, tp.partition); // the leader's log dir must be online
            PartitionPlanner.Bounds bounds = planner.bounds(tp);
            long begin = from.containsKey(tp) ? from.get(tp) : bounds.earliest(); // new: from the start
            if (begin < bounds.lakeEnd() && begin < bounds.logStart) {
                throw KStreamException.config("Real-time Mode reads the log only, but " + tp + " is tiered and the "
                    + "stream's next offset " + begin + " is below its log start " + bounds.logStart + " (offsets below "
                    + bounds.lakeEnd() + " are in the Delta table " + bounds.lake.tableDir + "); catch up with a "
                    + "micro-batch trigger (e.g. availableNow) first, or start at offset " + bounds.logStart);
            }
            out.add(new TailRange(tp, begin, snapshot.lockPath(tp.topic, tp.partition),
                snapshot.replicaDirs(tp.topic, tp.partition), info.isr, info.leader));
        }
        return out.toArray(new InputPartition[0]);
    }

    @Override
    public Offset mergeOffsets(PartitionOffset[] offsets) {
        Map<TopicPartition, Long> merged = new TreeMap<>();
        for (PartitionOffset o : offsets) {
            KStreamPartitionOffset p = (KStreamPartitionOffset) o;
            merged.merge(p.tp, p.nextOffset, Math::max);
        }
        return new KStreamOffset(merged);
    }

    @Override
    public void commit(Offset end) {
        // Nothing to do: the JVM reader never writes (group commits are Python-only).
    }

    @Override
    public void stop() {}

    @Override
    public String toString() {
        return "kstream JVM reader stream " + options;
    }
}

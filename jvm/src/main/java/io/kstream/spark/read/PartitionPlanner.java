package io.kstream.spark.read;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.MetadataSnapshot;
import io.kstream.spark.format.SegmentFiles;
import io.kstream.spark.format.TransactionState;
import io.kstream.spark.lake.DeltaSnapshot;
import io.kstream.spark.lake.LakeFile;
import io.kstream.spark.lake.TierTable;
import io.kstream.spark.options.ReaderOptions;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;
import org.apache.spark.sql.connector.read.InputPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Driver-side planning from the metadata snapshot and the log dirs, as Python's
 * kstream.source.planning: which topic-partitions a read covers, each one's bounds (log start;
 * HW, or LSO under read_committed, with the aborted ranges), the concrete offsets of
 * earliest / latest / JSON / timestamp positions, and the splits of a read.
 * Errors carry Python's messages. One planner per planning call: it reads each partition's
 * bounds once (so a read's start and end agree), and a tiered topic's Delta table once, at its
 * newest version then (pinned for the whole plan).
 *
 * <p>The union read (docs/JVM_READER.md, "Tiered topics"): for a tiered topic's partition whose
 * lake end is e, a range [a, b) is read as [a, min(b, e)) from the Delta table (one
 * {@link LakeRange} per data file that may hold those offsets) and [max(a, e), b) from the log
 * (an {@link OffsetRange}); a latestPerKey read has both parts in one {@link UnionRange}.
 * Earliest is the lake's first offset when the lake starts below the log start; an offset for a
 * time is looked up in the lake first.
 */
public final class PartitionPlanner {
    private static final Logger LOG = LoggerFactory.getLogger(PartitionPlanner.class);

    /**
     * A partition's readable range and its transactions (null under read_uncommitted), and its
     * lake (null when the topic is not tiered).
     */
    public static final class Bounds {
        public final String leaderDir;
        public final long logStart;
        public final long end;
        public final TransactionState transactions;
        public final TierTable.PartitionLake lake;

        Bounds(String leaderDir, long logStart, long end, TransactionState transactions, TierTable.PartitionLake lake) {
            this.leaderDir = leaderDir;
            this.logStart = logStart;
            this.end = end;
            this.transactions = transactions;
            this.lake = lake;
        }

        /** The first offset a read can return: the lake's first offset when it starts below the log start. */
        public long earliest() {
            return lakeEnd() > 0 ? Math.min(lake.start, logStart) : logStart;
        }

        /** The lake end: offsets below it are read from the Delta table (0: nothing tiered). */
        public long lakeEnd() {
            return lake == null ? 0 : lake.end;
        }
    }

    private final MetadataSnapshot snapshot;
    private final ReaderOptions options;
    private final Map<TopicPartition, Bounds> known = new HashMap<>();
    private final Map<String, DeltaSnapshot> lakes = new HashMap<>();

    public PartitionPlanner(ReaderOptions options) {
        this.options = options;
        this.snapshot = MetadataSnapshot.read(options.cluster);
    }

    public MetadataSnapshot snapshot() {
        return snapshot;
    }

    /** The topic-partitions the options select, in a stable order. */
    public List<TopicPartition> topicPartitions() {
        List<TopicPartition> out = new ArrayList<>();
        if (options.assign != null) {
            for (Map.Entry<String, List<Integer>> e : options.assign.entrySet()) {
                int count = snapshot.topic(e.getKey()).partitions.size();
                for (int p : e.getValue()) {
                    if (p < 0 || p >= count) {
                        throw new KStreamException(KStreamException.Kind.PartitionNotFoundError, "option 'assign' names "
                            + e.getKey() + "-" + p + ", but '" + e.getKey() + "' has partitions 0.." + (count - 1));
                    }
                    out.add(new TopicPartition(e.getKey(), p));
                }
            }
            return out;
        }
        List<String> topics = new ArrayList<>();
        if (options.subscribePattern != null) {
            Pattern regex = Pattern.compile(options.subscribePattern);
            for (String t : snapshot.topics.keySet()) if (regex.matcher(t).matches()) topics.add(t);
        } else {
            List<String> missing = new ArrayList<>();
            for (String t : options.subscribe) if (!snapshot.topics.containsKey(t)) missing.add(t);
            if (!missing.isEmpty()) {
                throw new KStreamException(KStreamException.Kind.TopicNotFoundError, "option 'subscribe' names topic(s) "
                    + ReaderOptions.pyList(missing) + " that do not exist; existing topics: "
                    + (snapshot.topics.isEmpty() ? "none" : String.join(", ", snapshot.topics.keySet())));
            }
            topics.addAll(new TreeSet<>(options.subscribe));
        }
        for (String t : topics) {
            for (int p = 0; p < snapshot.topic(t).partitions.size(); p++) out.add(new TopicPartition(t, p));
        }
        return out;
    }

    /** The Kafka connector's rule: JSON offsets name exactly the selected partitions. */
    public static void checkCoversSelection(String option, ReaderOptions.OffsetSpec spec, List<TopicPartition> tps) {
        if (spec.offsets == null) return;
        if (spec.byTimestamp) option = option.replace("Offsets", "OffsetsByTimestamp");
        Set<TopicPartition> named = new TreeSet<>();
        spec.offsets.forEach((t, ps) -> ps.keySet().forEach(p -> named.add(new TopicPartition(t, p))));
        Set<TopicPartition> selected = new TreeSet<>(tps);
        if (!named.equals(selected)) {
            Set<TopicPartition> missing = new TreeSet<>(selected);
            missing.removeAll(named);
            Set<TopicPartition> extra = new TreeSet<>(named);
            extra.removeAll(selected);
            throw KStreamException.config("option '" + option + "' gives specific offsets, so it must name every partition "
                + "the read selects (use -2 for earliest, -1 for latest where you don't care): missing " + show(missing)
                + "; not selected " + show(extra));
        }
    }

    private static String show(Set<TopicPartition> keys) {
        if (keys.isEmpty()) return "none";
        List<String> s = new ArrayList<>();
        for (TopicPartition tp : keys) s.add(tp.toString());
        return String.join(", ", s);
    }

    /** A partition's bounds, read once per planner. */
    public Bounds bounds(TopicPartition tp) {
        Bounds b = known.get(tp);
        if (b != null) return b;
        try {
            String dir = snapshot.leaderDir(tp.topic, tp.partition);
            long hw = snapshot.highWatermark(tp.topic, tp.partition);
            long[] bases = SegmentFiles.bases(dir);
            long logStart = bases.length == 0 ? 0 : bases[0];
            TransactionState txns = options.readCommitted
                ? TransactionState.derive(dir, hw, options.verifyChecksums) : null;
            b = new Bounds(dir, logStart, txns == null ? hw : txns.lastStableOffset, txns, lake(tp));
        } catch (IOException e) {
            throw new UncheckedIOException("planning " + tp + " in " + options.cluster, e);
        }
        known.put(tp, b);
        return b;
    }

    /** The partition's lake at the table version this planner pinned, or null when its topic is not tiered. */
    private TierTable.PartitionLake lake(TopicPartition tp) {
        MetadataSnapshot.TopicInfo info = snapshot.topic(tp.topic);
        String path = info.config.get(TierTable.TIER_DELTA_PATH);
        if (path == null) return null;
        DeltaSnapshot table = lakes.computeIfAbsent(tp.topic, t -> DeltaSnapshot.latest(TierTable.directory(path)));
        return TierTable.partition(table, info.topicId, tp.partition);
    }

    /** Concrete offsets for {@code tps}; partitions the JSON leaves out take {@code missing}. */
    public Map<TopicPartition, Long> resolve(ReaderOptions.OffsetSpec spec, List<TopicPartition> tps, long missing) {
        Map<TopicPartition, Long> byTime = spec.byTimestamp ? timestampOffsets(spec, tps) : null;
        Map<TopicPartition, Long> out = new TreeMap<>();
        for (TopicPartition tp : tps) {
            long wanted;
            if (spec.word != null) {
                wanted = spec.word.equals("earliest") ? ReaderOptions.EARLIEST : ReaderOptions.LATEST;
            } else if (byTime != null) {
                wanted = byTime.getOrDefault(tp, missing);
            } else {
                Map<Integer, Long> ps = spec.offsets.get(tp.topic);
                wanted = ps == null ? missing : ps.getOrDefault(tp.partition, missing);
            }
            Bounds b = bounds(tp);
            if (wanted < 0) {
                wanted = wanted == ReaderOptions.EARLIEST ? b.earliest() : b.end;
            } else if (wanted > b.end) {
                String held = b.end > b.earliest() ? "offsets " + b.earliest() + ".." + (b.end - 1)
                    : "no readable records (next offset " + b.end + ")";
                throw KStreamException.outOfRange("offset " + wanted + " of " + tp + " does not exist yet: it has " + held
                    + "; use -1 for latest or an offset up to " + b.end);
            }
            out.put(tp, wanted);
        }
        return out;
    }

    /** Per partition, the first offset at or after its timestamp (LATEST, or an error, when none). */
    private Map<TopicPartition, Long> timestampOffsets(ReaderOptions.OffsetSpec spec, List<TopicPartition> tps) {
        Map<TopicPartition, Long> out = new HashMap<>();
        for (TopicPartition tp : tps) {
            Long ts = spec.timestampFor(tp.topic, tp.partition);
            if (ts == null) continue;
            long found = offsetForTimestamp(tp, ts);
            if (found < 0) {
                if (spec.strategy.equals("error")) {
                    throw KStreamException.outOfRange(tp + " has no record at or after timestamp " + ts + "; use an "
                        + "earlier timestamp, or startingOffsetsByTimestampStrategy=latest to start such partitions at the end");
                }
                found = ReaderOptions.LATEST;
            }
            out.put(tp, found);
        }
        return out;
    }

    /**
     * Offset of the first record at or after {@code timestampMs} that the read is handed, below
     * its end (HW, or LSO under read_committed), or -1. A tiered partition's lake is asked first
     * ({@link LakeTimestampLookup}, at the pinned version), as Python's planning.timestamp_offsets
     * does; the log ({@link TimestampLookup}'s rule) when the lake has no such record.
     */
    long offsetForTimestamp(TopicPartition tp, long timestampMs) {
        Bounds b = bounds(tp);
        if (b.lakeEnd() > 0) {
            long inLake = LakeTimestampLookup.find(tp, b.lake, timestampMs);
            if (inLake >= 0) return inLake;
        }
        TimestampLookup.Found found = TimestampLookup.find(b, timestampMs, options.verifyChecksums);
        return found == null ? -1 : found.offset;
    }

    /**
     * The splits of the offsets between {@code start} and {@code end}: per topic-partition with
     * data, the lake's files for the offsets below its lake end ({@link LakeRange}s) and one
     * {@link OffsetRange} for the rest; under latestPerKey, a partition with a lake part is one
     * {@link UnionRange} of both.
     */
    public List<InputPartition> ranges(Map<TopicPartition, Long> start, Map<TopicPartition, Long> end) {
        List<InputPartition> out = new ArrayList<>();
        for (Map.Entry<TopicPartition, Long> e : new TreeMap<>(end).entrySet()) {
            TopicPartition tp = e.getKey();
            long begin = start.getOrDefault(tp, 0L);
            long until = e.getValue();
            if (until <= begin) continue;
            Bounds b = bounds(tp);
            List<LakeRange> lake = new ArrayList<>();
            if (b.lakeEnd() > begin) begin = lakeRanges(tp, b, begin, until, lake);
            OffsetRange log = until > begin ? new OffsetRange(tp, b.leaderDir, begin, until, b.transactions) : null;
            if (options.latestPerKey && !lake.isEmpty()) {
                out.add(new UnionRange(tp, lake, log)); // a key's records in lake and log: one task reduces them
                continue;
            }
            out.addAll(lake);
            if (log != null) out.add(log);
        }
        return out;
    }

    /**
     * The lake's splits of [begin, min(until, lake end)) into {@code out}; returns where the log's
     * part starts. Offsets below both the lake's first offset and the log start were deleted
     * before the topic tiered: data loss, as below the log start of a topic that does not tier.
     */
    private long lakeRanges(TopicPartition tp, Bounds b, long begin, long until, List<LakeRange> out) {
        long earliest = b.earliest();
        if (begin < earliest) {
            String message = tp + ": offsets " + begin + ".." + (Math.min(earliest, until) - 1)
                + " were deleted by retention before they were read";
            if (options.failOnDataLoss) {
                throw KStreamException.outOfRange(message + "; set failOnDataLoss=false to skip them");
            }
            LOG.warn("{}; skipping them (failOnDataLoss=false)", message);
            begin = Math.min(earliest, until);
        }
        long lakeUntil = Math.min(until, b.lakeEnd());
        if (lakeUntil <= begin) return begin;
        for (LakeFile file : b.lake.filesFor(begin, lakeUntil)) {
            out.add(new LakeRange(tp, b.lake.tableDir, b.lake.version, file, begin, lakeUntil));
        }
        return lakeUntil;
    }
}

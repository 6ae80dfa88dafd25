package io.kstream.spark.options;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kstream.spark.error.KStreamException;
import java.io.File;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * What a JVM read needs, parsed from Spark's string options (names case-insensitive), with the
 * rules and ConfigError messages of Python's kstream.source.read_options.ReaderOptions: one of
 * subscribe / subscribePattern / assign; startingOffsets / endingOffsets (earliest, latest,
 * JSON with -2/-1); the timestamp forms, which win over the offsets; the Spark Kafka
 * connector's batch rules. Immutable and serializable (it travels to executors).
 * Options only the Python reader has are listed by {@link ReaderChoice}, not parsed here.
 */
public final class ReaderOptions implements Serializable {
    public static final long EARLIEST = -2;
    public static final long LATEST = -1;
    private static final String CLUSTER_ENV = "KSTREAM_CLUSTER";
    private static final String DEFAULT_CLUSTER = "data";

    /** A start or end: "earliest", "latest", per-partition offsets, or a timestamp position. */
    public static final class OffsetSpec implements Serializable {
        public final String word; // "earliest", "latest", or null
        public final Map<String, Map<Integer, Long>> offsets; // JSON offsets (or timestamps by partition)
        public final Long timestamp; // startingTimestamp: one for every partition
        public final boolean byTimestamp;
        public final String strategy; // timestamps: "error" or "latest" for a partition with no such record

        OffsetSpec(String word, Map<String, Map<Integer, Long>> offsets, Long timestamp, boolean byTimestamp,
                   String strategy) {
            this.word = word;
            this.offsets = offsets;
            this.timestamp = timestamp;
            this.byTimestamp = byTimestamp;
            this.strategy = strategy;
        }

        public static OffsetSpec word(String w) {
            return new OffsetSpec(w, null, null, false, "error");
        }

        /** The timestamp asked for a partition, or null. */
        public Long timestampFor(String topic, int partition) {
            if (timestamp != null) return timestamp;
            Map<Integer, Long> ps = offsets == null ? null : offsets.get(topic);
            return ps == null ? null : ps.get(partition);
        }
    }

    /** Python's read_options.BATCH_GROUP_ID, word for word (the shared option vectors compare them). */
    public static final String BATCH_GROUP_ID =
        "option 'group.id' on a batch read would commit nothing: only a streaming query commits its finished "
        + "batches' offsets to a consumer group. To commit, read with spark.readStream, "
        + ".trigger(availableNow=True) and a checkpointLocation (each batch commits, then the query stops); to "
        + "read from the group's committed offsets, add .option('startingOffsets', 'group') (a batch read at a "
        + "group position commits nothing); otherwise drop group.id";

    public static final String LATEST_PER_KEY_OPTION = "latestPerKey";
    public static final String INCLUDE_TOMBSTONES_OPTION = "includeTombstones";

    /** Python's read_options.LATEST_PER_KEY_STREAMING, word for word. */
    public static final String LATEST_PER_KEY_STREAMING =
        "option 'latestPerKey' is for batch reads (spark.read): a stream reads every record once. For a "
        + "stream-static join against the latest value of each key, read the table with spark.read and "
        + "latestPerKey=true and join the stream to it: Spark re-reads a batch source for every micro-batch";
    /** Python's read_options.INCLUDE_TOMBSTONES_ALONE, word for word. */
    public static final String INCLUDE_TOMBSTONES_ALONE =
        "option 'includeTombstones' applies to latestPerKey=true reads (a plain read returns every record, "
        + "tombstones included); add .option('latestPerKey', 'true') or drop includeTombstones";

    /** Python's read_options.LATEST_PER_KEY_SPLITS for option {@code name}, word for word. */
    static String latestPerKeySplits(String name) {
        return "option '" + name + "' cuts a partition into several Spark tasks, but latestPerKey=true reduces each "
            + "partition in one task (all of a key's records are in its partition, so no shuffle is needed); "
            + "drop '" + name + "'";
    }

    /**
     * latestPerKey reduces a batch read's partitions each in one task (Python's
     * read_options._check_latest_per_key): no stream, no option that cuts a partition into
     * several splits, and includeTombstones only with it. {@code streaming} null: not known yet.
     */
    public static void checkLatestPerKey(Map<String, String> lower, Boolean streaming) {
        boolean latest = bool(LATEST_PER_KEY_OPTION, lower.getOrDefault("latestperkey", "false"));
        boolean tombstones = bool(INCLUDE_TOMBSTONES_OPTION, lower.getOrDefault("includetombstones", "false"));
        if (tombstones && !latest) throw KStreamException.config(INCLUDE_TOMBSTONES_ALONE);
        if (!latest) return;
        if (Boolean.TRUE.equals(streaming)) throw KStreamException.config(LATEST_PER_KEY_STREAMING);
        for (String name : new String[] {"minPartitions", "maxRecordsPerPartition"}) {
            if (lower.containsKey(name.toLowerCase(Locale.ROOT))) throw KStreamException.config(latestPerKeySplits(name));
        }
    }

    public final String cluster;
    public final List<String> subscribe;
    public final String subscribePattern;
    public final Map<String, List<Integer>> assign;
    public final OffsetSpec startingOffsets;
    public final OffsetSpec endingOffsets;
    public final Long maxOffsetsPerTrigger;
    public final Long minOffsetsPerTrigger;
    public final long maxTriggerDelayMs;
    public final boolean includeHeaders;
    public final boolean failOnDataLoss;
    public final boolean readCommitted;
    public final List<String> columns; // null: all
    public final boolean verifyChecksums;
    public final boolean latestPerKey; // one row per key: its latest record below the end
    public final boolean includeTombstones; // latestPerKey keeps a deleted key's tombstone

    private ReaderOptions(Map<String, String> lower, Boolean streaming) {
        cluster = clusterPath(lower);
        List<String> chosen = new ArrayList<>();
        for (String s : new String[] {"subscribe", "subscribePattern", "assign"}) {
            if (lower.containsKey(s.toLowerCase(Locale.ROOT))) chosen.add(s);
        }
        if (chosen.size() != 1) {
            throw KStreamException.config("give exactly one of subscribe, subscribePattern or assign (got "
                + (chosen.isEmpty() ? "none" : pyList(chosen)) + "); e.g. .option('subscribe', 'events')");
        }
        List<String> sub = List.of();
        String pattern = null;
        Map<String, List<Integer>> assigned = null;
        if (chosen.get(0).equals("subscribe")) {
            sub = new ArrayList<>();
            for (String t : lower.get("subscribe").split(",")) if (!t.strip().isEmpty()) sub.add(t.strip());
            if (sub.isEmpty()) throw KStreamException.config("option 'subscribe' is empty; give a comma-separated list of topics");
        } else if (chosen.get(0).equals("subscribePattern")) {
            pattern = lower.get("subscribepattern");
            try {
                Pattern.compile(pattern);
            } catch (PatternSyntaxException e) {
                throw KStreamException.config("option 'subscribePattern': '" + pattern + "' is not a regex: "
                    + e.getDescription());
            }
        } else {
            assigned = parseAssign(lower.get("assign"));
        }
        subscribe = List.copyOf(sub);
        subscribePattern = pattern;
        assign = assigned;
        OffsetSpec starting = parseOffsets("startingOffsets",
            lower.getOrDefault("startingoffsets", Boolean.TRUE.equals(streaming) ? "latest" : "earliest"));
        OffsetSpec ending = parseOffsets("endingOffsets", lower.getOrDefault("endingoffsets", "latest"));
        String strategy = lower.getOrDefault("startingoffsetsbytimestampstrategy", "error");
        if (!strategy.equals("error") && !strategy.equals("latest")) {
            throw KStreamException.config("option 'startingOffsetsByTimestampStrategy': '" + strategy
                + "' is not error or latest");
        }
        OffsetSpec startTs = timestampPosition("starting", lower, strategy);
        OffsetSpec endTs = timestampPosition("ending", lower, "latest");
        if (startTs != null) starting = startTs;
        if (endTs != null) ending = endTs;
        if (Boolean.TRUE.equals(streaming) && (lower.containsKey("endingoffsets") || lower.containsKey("endingtimestamp")
                || lower.containsKey("endingoffsetsbytimestamp"))) {
            throw KStreamException.config("option 'endingOffsets' is for batch reads; a streaming query has no end");
        }
        if (Boolean.FALSE.equals(streaming)) checkBatchRange(starting, ending);
        // A batch read never commits. Python's reader takes group.id on a batch read to name the group
        // of startingOffsets/endingOffsets=group; this reader refuses those positions (parseOffsets), so
        // any group.id here is the one Python refuses too.
        if (Boolean.FALSE.equals(streaming) && lower.containsKey("group.id")) throw KStreamException.config(BATCH_GROUP_ID);
        startingOffsets = starting;
        endingOffsets = ending;
        Long min = positive("minOffsetsPerTrigger", lower.get("minoffsetspertrigger"));
        Long max = positive("maxOffsetsPerTrigger", lower.get("maxoffsetspertrigger"));
        if (min != null && max != null && min > max) {
            throw KStreamException.config("option 'minOffsetsPerTrigger' (" + min + ") is higher than "
                + "'maxOffsetsPerTrigger' (" + max + "); lower it or raise maxOffsetsPerTrigger");
        }
        minOffsetsPerTrigger = min;
        maxOffsetsPerTrigger = max;
        maxTriggerDelayMs = durationMs("maxTriggerDelay", lower.getOrDefault("maxtriggerdelay", "15m"));
        includeHeaders = bool("includeHeaders", lower.getOrDefault("includeheaders", "false"));
        failOnDataLoss = bool("failOnDataLoss", lower.getOrDefault("failondataloss", "true"));
        String level = lower.getOrDefault("kafka.isolation.level", lower.getOrDefault("isolation.level", "read_committed"));
        if (!level.equals("read_committed") && !level.equals("read_uncommitted")) {
            throw KStreamException.config("option 'isolation.level': '" + level
                + "' is not read_committed or read_uncommitted");
        }
        readCommitted = level.equals("read_committed");
        if (lower.containsKey("columns")) {
            List<String> cols = new ArrayList<>();
            for (String c : lower.get("columns").split(",")) if (!c.strip().isEmpty()) cols.add(c.strip());
            columns = List.copyOf(cols);
        } else {
            columns = null;
        }
        verifyChecksums = bool(ReaderChoice.CHECK_CRCS_OPTION, lower.getOrDefault(ReaderChoice.CHECK_CRCS_OPTION.toLowerCase(Locale.ROOT), "true"));
        checkLatestPerKey(lower, streaming);
        latestPerKey = bool(LATEST_PER_KEY_OPTION, lower.getOrDefault("latestperkey", "false"));
        includeTombstones = bool(INCLUDE_TOMBSTONES_OPTION, lower.getOrDefault("includetombstones", "false"));
    }

    /** The cluster dir: option 'cluster', else $KSTREAM_CLUSTER, else ./data (as Python resolves it). */
    public static String clusterPath(Map<String, String> lower) {
        String path = lower.get("cluster");
        if (path == null || path.isEmpty()) path = System.getenv().getOrDefault(CLUSTER_ENV, DEFAULT_CLUSTER);
        if (path.isEmpty()) path = DEFAULT_CLUSTER;
        return new File(path).getAbsolutePath();
    }

    /** Parse and check {@code options}; {@code streaming} null: not known yet (schema inference). */
    public static ReaderOptions parse(Map<String, String> options, Boolean streaming) {
        return new ReaderOptions(lowered(options), streaming);
    }

    public static Map<String, String> lowered(Map<String, String> options) {
        Map<String, String> lower = new TreeMap<>();
        options.forEach((k, v) -> lower.put(k.toLowerCase(Locale.ROOT), v));
        return lower;
    }

    private static final ObjectMapper JSON = new ObjectMapper();

    private static Map<String, List<Integer>> parseAssign(String text) {
        try {
            JsonNode root = JSON.readTree(text);
            if (root == null || !root.isObject()) throw new IllegalArgumentException("not a map of topic to a list of partition numbers");
            Map<String, List<Integer>> out = new TreeMap<>();
            Iterator<Map.Entry<String, JsonNode>> it = root.properties().iterator();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                if (!e.getValue().isArray()) throw new IllegalArgumentException("not a map of topic to a list of partition numbers");
                List<Integer> ps = new ArrayList<>();
                for (JsonNode p : e.getValue()) {
                    if (!p.isInt()) throw new IllegalArgumentException("not a map of topic to a list of partition numbers");
                    ps.add(p.asInt());
                }
                out.put(e.getKey(), ps);
            }
            return out;
        } catch (Exception e) {
            throw KStreamException.config("option 'assign': '" + text + "' is not JSON like {\"topicA\":[0,1]} ("
                + e.getMessage() + ")");
        }
    }

    static OffsetSpec parseOffsets(String name, String text) {
        if (text.equals("earliest") || text.equals("latest")) return OffsetSpec.word(text);
        if (text.equals("group") || text.startsWith("group@")) {
            throw KStreamException.config("option '" + name + "': '" + text + "' reads a consumer group's offsets, "
                + "which only the Python reader does; use option reader=python (or auto)");
        }
        try {
            JsonNode root = JSON.readTree(text);
            if (root == null || !root.isObject()) throw new IllegalArgumentException("not a map of topic to a map of partition to offset");
            Map<String, Map<Integer, Long>> out = new LinkedHashMap<>();
            Iterator<Map.Entry<String, JsonNode>> it = root.properties().iterator();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                if (!e.getValue().isObject()) throw new IllegalArgumentException("not a map of topic to a map of partition to offset");
                Map<Integer, Long> ps = new TreeMap<>();
                Iterator<Map.Entry<String, JsonNode>> pit = e.getValue().properties().iterator();
                while (pit.hasNext()) {
                    Map.Entry<String, JsonNode> p = pit.next();
                    if (!p.getValue().isIntegralNumber()) throw new IllegalArgumentException("not a map of topic to a map of partition to offset");
                    ps.put(Integer.parseInt(p.getKey()), p.getValue().asLong());
                }
                out.put(e.getKey(), ps);
            }
            return new OffsetSpec(null, out, null, false, "error");
        } catch (Exception e) {
            throw KStreamException.config("option '" + name + "': '" + text + "' is neither 'earliest', 'latest' nor JSON "
                + "like {\"topicA\":{\"0\":23,\"1\":-2}} (-2 = earliest, -1 = latest): " + e.getMessage());
        }
    }

    private static OffsetSpec timestampPosition(String which, Map<String, String> lower, String strategy) {
        String single = lower.get(which + "timestamp");
        String byPartition = lower.get(which + "offsetsbytimestamp");
        if (single != null) {
            long value;
            try {
                value = Long.parseLong(single.strip());
            } catch (NumberFormatException e) {
                throw KStreamException.config("option '" + which + "Timestamp': '" + single
                    + "' is not milliseconds since the epoch");
            }
            if (value < 0) {
                throw KStreamException.config("option '" + which + "Timestamp': '" + single
                    + "' is not milliseconds since the epoch (a timestamp is >= 0)");
            }
            return new OffsetSpec(null, null, value, true, strategy);
        }
        if (byPartition != null) {
            OffsetSpec spec = parseOffsets(which + "OffsetsByTimestamp", byPartition);
            boolean negative = spec.offsets == null
                || spec.offsets.values().stream().anyMatch(ps -> ps.values().stream().anyMatch(o -> o < 0));
            if (negative) {
                throw KStreamException.config("option '" + which + "OffsetsByTimestamp': '" + byPartition + "' is not JSON "
                    + "like {\"topicA\":{\"0\":1700000000000}} (milliseconds since the epoch per partition)");
            }
            return new OffsetSpec(null, spec.offsets, null, true, strategy);
        }
        return null;
    }

    private static void checkBatchRange(OffsetSpec starting, OffsetSpec ending) {
        if ("latest".equals(starting.word)) {
            throw KStreamException.config("option 'startingOffsets': starting offset can't be latest for batch queries "
                + "(a batch read would be empty); use 'earliest' (the default) or JSON offsets");
        }
        if ("earliest".equals(ending.word)) {
            throw KStreamException.config("option 'endingOffsets': ending offset can't be earliest for batch queries; "
                + "use 'latest' (the default) or JSON offsets");
        }
        Object[][] checks = {{"startingOffsets", starting, LATEST, "latest"}, {"endingOffsets", ending, EARLIEST, "earliest"}};
        for (Object[] c : checks) {
            OffsetSpec spec = (OffsetSpec) c[1];
            if (spec.offsets == null || spec.byTimestamp) continue;
            List<String> bad = new ArrayList<>();
            spec.offsets.forEach((t, ps) -> ps.forEach((p, o) -> {
                if (o == (long) c[2]) bad.add(t + "-" + p);
            }));
            if (!bad.isEmpty()) {
                throw KStreamException.config("option '" + c[0] + "': the offset of " + String.join(", ", bad) + " can't be "
                    + c[3] + " (" + c[2] + ") for batch queries");
            }
        }
        if (starting.offsets != null && !starting.byTimestamp && ending.offsets != null && !ending.byTimestamp) {
            List<String> onlyStart = new ArrayList<>();
            List<String> onlyEnd = new ArrayList<>();
            starting.offsets.forEach((t, ps) -> ps.keySet().forEach(p -> {
                if (!ending.offsets.containsKey(t) || !ending.offsets.get(t).containsKey(p)) onlyStart.add(t + "-" + p);
            }));
            ending.offsets.forEach((t, ps) -> ps.keySet().forEach(p -> {
                if (!starting.offsets.containsKey(t) || !starting.offsets.get(t).containsKey(p)) onlyEnd.add(t + "-" + p);
            }));
            if (!onlyStart.isEmpty() || !onlyEnd.isEmpty()) {
                throw KStreamException.config("options 'startingOffsets' and 'endingOffsets' must name the same partitions; "
                    + "only in startingOffsets: " + names(onlyStart) + ", only in endingOffsets: " + names(onlyEnd));
            }
            starting.offsets.forEach((t, ps) -> ps.forEach((p, start) -> {
                long end = ending.offsets.get(t).get(p);
                if (start >= 0 && end >= 0 && start > end) {
                    throw KStreamException.config("startingOffsets " + start + " of " + t + "-" + p
                        + " is after its endingOffsets " + end);
                }
            }));
        }
    }

    private static String names(List<String> keys) {
        if (keys.isEmpty()) return "none";
        List<String> sorted = new ArrayList<>(keys);
        sorted.sort(null);
        return String.join(", ", sorted);
    }

    public static String pyList(List<String> items) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < items.size(); i++) b.append(i > 0 ? ", " : "").append('\'').append(items.get(i)).append('\'');
        return b.append(']').toString();
    }

    private static Long positive(String name, String text) {
        if (text == null) return null;
        long value;
        try {
            value = Long.parseLong(text.strip());
        } catch (NumberFormatException e) {
            throw KStreamException.config("option '" + name + "': '" + text + "' is not an integer");
        }
        if (value < 1) throw KStreamException.config("option '" + name + "': " + value + " must be at least 1");
        return value;
    }

    private static final Map<String, Long> UNITS_MS = Map.of("ms", 1L, "s", 1000L, "m", 60_000L, "min", 60_000L,
        "h", 3_600_000L, "d", 86_400_000L);

    private static long durationMs(String name, String text) {
        java.util.regex.Matcher m = Pattern.compile("\\s*(\\d+)\\s*([a-z]*)\\s*").matcher(text.toLowerCase(Locale.ROOT));
        if (!m.matches() || !(m.group(2).isEmpty() || UNITS_MS.containsKey(m.group(2)))) {
            throw KStreamException.config("option '" + name + "': '" + text + "' is not a duration like 500ms, 30s, 15m or 2h");
        }
        return Long.parseLong(m.group(1)) * UNITS_MS.getOrDefault(m.group(2).isEmpty() ? "ms" : m.group(2), 1L);
    }

    private static boolean bool(String name, String text) {
        String t = text.toLowerCase(Locale.ROOT);
        if (t.equals("true") || t.equals("false")) return t.equals("true");
        throw KStreamException.config("option '" + name + "': '" + text + "' is not true or false");
    }

    @Override
    public String toString() {
        return "ReaderOptions(cluster=" + cluster + ", subscribe=" + subscribe + ", pattern=" + subscribePattern
            + ", assign=" + assign + ", columns=" + (columns == null ? "all" : Arrays.toString(columns.toArray())) + ")";
    }
}

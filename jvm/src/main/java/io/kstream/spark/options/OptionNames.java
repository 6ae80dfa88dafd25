package io.kstream.spark.options;

import io.kstream.spark.error.KStreamException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The option names a JVM read takes, the same table as Python's kstream.config.data_source_options
 * (the shared vectors carry Python's; OptionNamesParityTest fails when they differ): kstream's own,
 * the Spark Kafka connector's, any kafka.* key (except those the connector refuses), and
 * {@code reader}. Any other name is a ConfigError with the closest known names.
 */
public final class OptionNames {
    private static final String[] READER_OPTIONS = {
        "assign", "subscribe", "subscribePattern", "startingOffsets", "endingOffsets",
        "startingTimestamp", "endingTimestamp", "startingOffsetsByTimestamp", "endingOffsetsByTimestamp",
        "startingOffsetsByTimestampStrategy", "failOnDataLoss", "maxOffsetsPerTrigger", "minOffsetsPerTrigger",
        "maxTriggerDelay", "minPartitions", "maxRecordsPerPartition", "includeHeaders", "groupIdPrefix",
        "kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
        "cluster", "maxBytesPerTrigger", "isolation.level", "columns", "group.id", "auto.offset.reset",
        "auto.commit.interval.ms", "valueFormat", "avroSchema", ReaderChoice.OPTION, ReaderChoice.CHECK_CRCS_OPTION,
        ReaderOptions.LATEST_PER_KEY_OPTION, ReaderOptions.INCLUDE_TOMBSTONES_OPTION,
        "path", "checkpointLocation", "queryName",
    };
    private static final Map<String, String> REFUSED = new LinkedHashMap<>();

    static {
        REFUSED.put("kafka.auto.offset.reset", "set the source option 'startingOffsets' to 'earliest' or 'latest' "
            + "instead (kstream's own 'auto.offset.reset' applies to startingOffsets=group only)");
        REFUSED.put("kafka.key.deserializer", "keys are read as bytes; use DataFrame operations (CAST(key AS STRING)) "
            + "to decode them");
        REFUSED.put("kafka.value.deserializer", "values are read as bytes; use DataFrame operations "
            + "(CAST(value AS STRING)) to decode them");
        REFUSED.put("kafka.enable.auto.commit", "the source never commits offsets itself; give kstream's 'group.id' "
            + "to have a query commit each finished batch to a consumer group");
        REFUSED.put("kafka.interceptor.classes", "interceptors could change records under the query");
    }

    private OptionNames() {}

    /** The names a read takes, as spelled in the docs (checked against Python's: OptionNamesParityTest). */
    static List<String> readerOptions() {
        return List.of(READER_OPTIONS);
    }

    /** The kafka.* keys a read refuses (lower case) and why. */
    static Map<String, String> refused() {
        return java.util.Collections.unmodifiableMap(REFUSED);
    }

    /** The names a write takes (Python's SINK_OPTIONS), and the kafka.* keys the sink refuses. */
    private static final String[] SINK_OPTIONS = {
        "cluster", "topic", "includeHeaders", "writer", "path", "checkpointLocation", "queryName",
    };
    private static final Map<String, String> SINK_REFUSED = new LinkedHashMap<>();

    static {
        SINK_REFUSED.put("kafka.key.serializer", "keys are written as bytes (a string key is UTF-8 encoded); cast the"
            + " 'key' column instead");
        SINK_REFUSED.put("kafka.value.serializer", "values are written as bytes (a string value is UTF-8 encoded);"
            + " cast the 'value' column instead");
    }

    public static void check(Map<String, String> options) {
        check(options, READER_OPTIONS, REFUSED, "the kstream reader");
    }

    /** A write's option names, as Python's check_sink_options (the JVM writer's). */
    public static void checkSink(Map<String, String> options) {
        check(options, SINK_OPTIONS, SINK_REFUSED, "the kstream sink");
    }

    private static void check(Map<String, String> options, String[] known, Map<String, String> refused, String what) {
        Map<String, String> spelled = new LinkedHashMap<>();
        for (String n : known) spelled.put(n.toLowerCase(Locale.ROOT), n);
        for (String name : options.keySet()) {
            String lower = name.toLowerCase(Locale.ROOT);
            if (refused.containsKey(lower)) {
                throw KStreamException.config("option '" + name + "' is not supported by " + what + " (nor by the "
                    + "Spark Kafka connector): " + refused.get(lower));
            }
            if (spelled.containsKey(lower) || lower.startsWith("kafka.")) continue;
            List<String> close = new ArrayList<>();
            spelled.keySet().stream().filter(k -> distance(k, lower) <= Math.max(2, lower.length() / 3))
                .sorted((a, b) -> Integer.compare(distance(a, lower), distance(b, lower))).limit(3)
                .forEach(k -> close.add("'" + spelled.get(k) + "'"));
            String hint = close.isEmpty() ? "" : "; did you mean " + String.join(", ", close) + "?";
            throw KStreamException.config("unknown option '" + name + "' for " + what + hint + " (it takes "
                + "kstream's options, the Spark Kafka connector's and any kafka.* Kafka client setting; see README 'Spark')");
        }
    }

    private static int distance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) prev[j] = j;
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + cost);
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }
}

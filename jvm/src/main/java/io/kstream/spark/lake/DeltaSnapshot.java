package io.kstream.spark.lake;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kstream.spark.error.KStreamException;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A tier table's state at one Delta version, read from its {@code _delta_log} without
 * delta-spark: the newest complete checkpoint at or below the version ({@link DeltaCheckpoint},
 * single or multi-part Parquet), then every JSON commit after it, in order. What the union read
 * needs of it: the live data files (add actions not removed later) with their partition and
 * offset statistics, each app transaction's highest version (a tiered partition's lake end:
 * docs/TIERING.md), and the table's description and partition columns. The version is pinned:
 * {@link #latest} takes the newest commit file present when it lists the log, and a commit
 * written afterwards is not seen. Refuses (KStreamError naming the table) a log with a missing
 * commit, a protocol or reader feature it does not read (deletion vectors, column mapping,
 * V2 checkpoints), a table not partitioned by {@code partition}, and a file a commit names
 * outside the local file system. Immutable; reads files only.
 */
public final class DeltaSnapshot {
    public static final String LOG_DIR = "_delta_log";
    public static final String PARTITION_COLUMN = "partition";
    /** Reader features that change nothing for a reader of kstream's columns. */
    private static final Set<String> HARMLESS_READER_FEATURES = Set.of("timestampNtz", "vacuumProtocolCheck");
    private static final Pattern COMMIT = Pattern.compile("(\\d{20})\\.json");
    private static final Pattern CHECKPOINT = Pattern.compile("(\\d{20})\\.checkpoint(?:\\.(\\d{10})\\.(\\d{10}))?\\.parquet");
    private static final ObjectMapper JSON = new ObjectMapper();

    public final String tableDir;
    /** The pinned version; -1 when the directory holds no Delta table (nothing tiered yet). */
    public final long version;
    public final List<LakeFile> files;
    public final Map<String, Long> transactions;
    public final String description;

    private DeltaSnapshot(String tableDir, long version, List<LakeFile> files, Map<String, Long> transactions,
                          String description) {
        this.tableDir = tableDir;
        this.version = version;
        this.files = files;
        this.transactions = transactions;
        this.description = description;
    }

    /** The app transaction's version (a tiered partition's lake end), or null when the table has none. */
    public Long transactionVersion(String appId) {
        return transactions.get(appId);
    }

    /** The table at its newest version (version -1 and nothing in it when there is no table yet). */
    public static DeltaSnapshot latest(String tableDir) {
        File logDir = new File(tableDir, LOG_DIR);
        String[] names = logDir.list();
        if (names == null) return new DeltaSnapshot(tableDir, -1, List.of(), Map.of(), null);
        TreeMap<Long, String> commits = new TreeMap<>();
        TreeMap<Long, Map<Integer, String>> checkpoints = new TreeMap<>();
        TreeMap<Long, Integer> parts = new TreeMap<>();
        for (String name : names) {
            Matcher m = COMMIT.matcher(name);
            if (m.matches()) {
                commits.put(Long.parseLong(m.group(1)), name);
                continue;
            }
            m = CHECKPOINT.matcher(name);
            if (m.matches()) {
                long v = Long.parseLong(m.group(1));
                int part = m.group(2) == null ? 1 : Integer.parseInt(m.group(2));
                int of = m.group(3) == null ? 1 : Integer.parseInt(m.group(3));
                checkpoints.computeIfAbsent(v, k -> new TreeMap<>()).put(part, name);
                parts.merge(v, of, (a, b) -> a.equals(b) ? a : -1); // parts of different writers: not complete
            }
        }
        if (commits.isEmpty() && checkpoints.isEmpty()) return new DeltaSnapshot(tableDir, -1, List.of(), Map.of(), null);
        long version = Math.max(commits.isEmpty() ? -1 : commits.lastKey(), checkpoints.isEmpty() ? -1 : checkpoints.lastKey());
        return replay(tableDir, version, commits, checkpoints, parts);
    }

    private static DeltaSnapshot replay(String tableDir, long version, TreeMap<Long, String> commits,
                                        TreeMap<Long, Map<Integer, String>> checkpoints, TreeMap<Long, Integer> parts) {
        File logDir = new File(tableDir, LOG_DIR);
        DeltaActions actions = new DeltaActions(tableDir);
        long from = 0;
        for (Long v : checkpoints.descendingKeySet()) {
            Map<Integer, String> found = checkpoints.get(v);
            int of = parts.get(v);
            if (v > version || of < 1 || found.size() != of) continue; // an incomplete multi-part checkpoint
            List<String> paths = new ArrayList<>();
            for (String name : found.values()) paths.add(new File(logDir, name).getPath());
            DeltaCheckpoint.read(paths, actions);
            from = v + 1;
            break;
        }
        for (long v = from; v <= version; v++) {
            String name = commits.get(v);
            if (name == null) {
                throw lakeError(tableDir, "its Delta log has no commit file for version " + v + " (it has "
                    + (commits.isEmpty() ? "none" : commits.firstKey() + ".." + commits.lastKey())
                    + (from > 0 ? ", after the checkpoint at " + (from - 1) : " and no usable checkpoint")
                    + "): the log is damaged or being cleaned up; restore the table or read it with reader=python");
            }
            readCommit(new File(logDir, name), actions);
        }
        actions.check();
        return new DeltaSnapshot(tableDir, version, Collections.unmodifiableList(actions.files()),
            Collections.unmodifiableMap(actions.transactions), actions.description);
    }

    private static void readCommit(File file, DeltaActions actions) {
        try (BufferedReader in = Files.newBufferedReader(file.toPath(), StandardCharsets.UTF_8)) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) continue;
                JsonNode action = JSON.readTree(line);
                if (action.has("add")) {
                    JsonNode add = action.get("add");
                    if (add.hasNonNull("deletionVector")) actions.deletionVector(add.path("path").asText());
                    actions.add(add.path("path").asText(), strings(add.path("partitionValues")),
                        add.hasNonNull("stats") ? add.get("stats").asText() : null);
                } else if (action.has("remove")) {
                    actions.remove(action.get("remove").path("path").asText());
                } else if (action.has("txn")) {
                    actions.txn(action.get("txn").path("appId").asText(), action.get("txn").path("version").asLong());
                } else if (action.has("metaData")) {
                    JsonNode meta = action.get("metaData");
                    List<String> columns = new ArrayList<>();
                    for (JsonNode c : meta.path("partitionColumns")) columns.add(c.asText());
                    actions.metaData(meta.hasNonNull("description") ? meta.get("description").asText() : null, columns,
                        strings(meta.path("configuration")));
                } else if (action.has("protocol")) {
                    JsonNode protocol = action.get("protocol");
                    List<String> features = new ArrayList<>();
                    for (JsonNode f : protocol.path("readerFeatures")) features.add(f.asText());
                    actions.protocol(protocol.path("minReaderVersion").asInt(), features);
                }
            }
        } catch (IOException e) {
            throw new KStreamException(KStreamException.Kind.KStreamError, "cannot read the Delta commit " + file
                + ": " + e, e);
        }
    }

    private static Map<String, String> strings(JsonNode object) {
        Map<String, String> out = new LinkedHashMap<>();
        object.properties().forEach(e -> out.put(e.getKey(), e.getValue().isNull() ? null : e.getValue().asText()));
        return out;
    }

    static KStreamException lakeError(String tableDir, String problem) {
        return new KStreamException(KStreamException.Kind.KStreamError, "the tier table " + tableDir + ": " + problem);
    }

    /** The absolute local path of a data file an add action names (relative and URL-encoded, or a file: URI). */
    static String resolve(String tableDir, String path) {
        try {
            URI uri = new URI(path);
            if (uri.getScheme() == null) return Paths.get(tableDir).resolve(uri.getPath()).normalize().toString();
            if (!uri.getScheme().equals("file")) {
                throw lakeError(tableDir, "a commit names the data file " + path + ", which is not on the local file "
                    + "system; the JVM reader reads local tables only: use reader=python");
            }
            return Paths.get(uri).toString();
        } catch (URISyntaxException | IllegalArgumentException e) {
            throw lakeError(tableDir, "a commit names the data file " + path + ", which is not a valid path URI: " + e);
        }
    }

    /**
     * An add action's statistics: {min offset, max offset, max timestamp in microseconds}, the
     * offsets UNKNOWN and the timestamp NO_TIMESTAMP when absent. Delta writes a timestamp
     * statistic as an ISO-8601 instant (milliseconds; kstream's tierer rounds a maximum up).
     */
    static long[] offsetStats(String stats) {
        long[] out = {LakeFile.UNKNOWN, LakeFile.UNKNOWN, LakeFile.NO_TIMESTAMP};
        if (stats == null || stats.isEmpty()) return out;
        try {
            JsonNode node = JSON.readTree(stats);
            JsonNode min = node.path("minValues").path("offset");
            JsonNode max = node.path("maxValues").path("offset");
            if (min.isIntegralNumber() && max.isIntegralNumber()) {
                out[0] = min.asLong();
                out[1] = max.asLong();
            }
            JsonNode latest = node.path("maxValues").path("timestamp");
            if (latest.isTextual()) out[2] = micros(latest.asText());
        } catch (IOException e) {
            // unreadable statistics prune nothing: the file is read and its rows filtered
        }
        return out;
    }

    /** An ISO-8601 instant as microseconds since the epoch; NO_TIMESTAMP when it is not one. */
    static long micros(String text) {
        try {
            java.time.Instant at = java.time.Instant.parse(text);
            return Math.addExact(Math.multiplyExact(at.getEpochSecond(), 1_000_000L), at.getNano() / 1000);
        } catch (java.time.format.DateTimeParseException | ArithmeticException e) {
            return LakeFile.NO_TIMESTAMP; // unknown: the file is read, never skipped
        }
    }

    /** Replayed actions: the live files, the highest version per app id, the latest metadata and protocol. */
    static final class DeltaActions {
        private final String tableDir;
        private final Map<String, LakeFile> live = new LinkedHashMap<>();
        final Map<String, Long> transactions = new TreeMap<>();
        String description;
        List<String> partitionColumns;
        Map<String, String> configuration = Map.of();
        int minReaderVersion = 1;
        List<String> readerFeatures = List.of();

        DeltaActions(String tableDir) {
            this.tableDir = tableDir;
        }

        void add(String path, Map<String, String> partitionValues, String stats) {
            String value = partitionValues.get(PARTITION_COLUMN);
            int partition;
            try {
                partition = Integer.parseInt(value);
            } catch (NumberFormatException e) {
                throw lakeError(tableDir, "the data file " + path + " has partition value " + PARTITION_COLUMN + "="
                    + value + ", not a kstream partition number");
            }
            long[] offsets = offsetStats(stats);
            live.put(path, new LakeFile(resolve(tableDir, path), partition, offsets[0], offsets[1], offsets[2]));
        }

        void remove(String path) {
            live.remove(path);
        }

        void deletionVector(String path) {
            throw lakeError(tableDir, "the data file " + path + " has a deletion vector, which the JVM reader does not "
                + "apply (a kstream tier table is append-only); use reader=python");
        }

        void txn(String appId, long version) {
            transactions.merge(appId, version, Math::max);
        }

        void metaData(String description, List<String> partitionColumns, Map<String, String> configuration) {
            this.description = description;
            this.partitionColumns = partitionColumns;
            this.configuration = configuration;
        }

        void protocol(int minReaderVersion, List<String> readerFeatures) {
            this.minReaderVersion = minReaderVersion;
            this.readerFeatures = readerFeatures;
        }

        List<LakeFile> files() {
            return new ArrayList<>(live.values());
        }

        /** The table is one the JVM reader reads right, or a KStreamError says why not. */
        void check() {
            String mapping = configuration.getOrDefault("delta.columnMapping.mode", "none");
            List<String> unread = new ArrayList<>();
            for (String f : readerFeatures) if (!HARMLESS_READER_FEATURES.contains(f)) unread.add(f);
            if (minReaderVersion > 3 || !unread.isEmpty() || (mapping != null && !mapping.equals("none"))) {
                throw lakeError(tableDir, "it needs Delta reader version " + minReaderVersion
                    + (unread.isEmpty() ? "" : " with reader features " + unread)
                    + (mapping == null || mapping.equals("none") ? "" : " (column mapping " + mapping + ")")
                    + ", which the JVM reader does not read; use reader=python");
            }
            if (partitionColumns == null || !partitionColumns.equals(List.of(PARTITION_COLUMN))) {
                throw lakeError(tableDir, "it is partitioned by " + partitionColumns + ", not by ['" + PARTITION_COLUMN
                    + "'] as kstream's tierer makes it: not a kstream tier table");
            }
        }
    }
}

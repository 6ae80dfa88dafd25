package io.kstream.spark.write;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.Format;
import io.kstream.spark.format.MetadataSnapshot;
import io.kstream.spark.options.ReaderOptions;
import java.io.File;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Which writer serves a {@code format("kstream")} write: option {@code writer} = jvm, python or
 * auto (the default). auto takes the JVM writer ({@link JvmBatchWrite} for a batch write,
 * {@link JvmStreamingWrite} for a streaming one) unless it needs something only the Python sink does; python always hands the write to the Python
 * sink; jvm refuses such a write with a ConfigError naming option 'writer' and what is missing.
 *
 * <p>Only the Python sink does (docs/JVM_WRITER.md "Choosing the writer"):
 * <ul>
 * <li>typed topics (a declared Arrow schema);</li>
 * <li>topics with replication factor &gt; 1 (the Java appender writes the leader only);</li>
 * <li>topics that do not exist yet (the Python producer creates them under the cluster's
 *     auto.create.topics.enable; under writer=jvm a missing topic is TopicNotFoundError), and
 *     so rows routed by their topic column on a cluster with auto.create.topics.enable;</li>
 * <li>a cluster without metadata-snapshot.json (made by a kstream older than the JVM reader);</li>
 * <li>a cluster whose cluster.properties sets a topic default the append path uses
 *     ({@link #CLUSTER_TOPIC_DEFAULTS}: the snapshot holds each topic's own config only).</li>
 * </ul>
 * With option {@code topic} these are checked for that topic; rows routed by their {@code topic}
 * column may go to any topic, so auto takes the JVM writer only when every topic of the cluster
 * is one it writes.
 */
public final class WriterChoice {
    public static final String OPTION = "writer";

    public enum Writer { JVM, PYTHON }

    /**
     * Cluster-wide defaults of topic settings the append path uses (Python's
     * TOPIC_DEFAULTS_FROM_CLUSTER, src/kstream/log/storage/log_config.py): metadata-snapshot.json
     * holds a topic's own config only, so the JVM writer does not see them yet.
     */
    static final List<String> CLUSTER_TOPIC_DEFAULTS = List.of("log.flush.interval.messages", "log.flush.interval.ms",
        "log.index.interval.bytes", "log.message.timestamp.type", "log.roll.ms", "log.segment.bytes",
        "message.max.bytes", "min.insync.replicas");

    private WriterChoice() {}

    /** The option's value: auto, jvm or python (ConfigError otherwise). */
    public static String asked(Map<String, String> options) {
        Map<String, String> lower = ReaderOptions.lowered(options);
        String asked = lower.getOrDefault(OPTION, "auto").trim().toLowerCase(Locale.ROOT);
        if (!asked.equals("auto") && !asked.equals("jvm") && !asked.equals("python")) {
            throw KStreamException.config("option 'writer': '" + lower.get(OPTION) + "' is not jvm, python or auto");
        }
        return asked;
    }

    /** The writer of a batch write with these options. */
    public static Writer batch(Map<String, String> options) {
        return choose(options);
    }

    /**
     * The writer of a streaming write (micro-batches) with these options: the same rule as a
     * batch write's (the JVM writer's {@link JvmStreamingWrite} commits on the same (sink, batch)
     * rows under the same sink id as the Python sink, so either may serve a query's next run).
     */
    public static Writer streaming(Map<String, String> options) {
        return choose(options);
    }

    private static Writer choose(Map<String, String> options) {
        String asked = asked(options);
        if (asked.equals("python")) return Writer.PYTHON;
        List<String> unsupported = unsupported(ReaderOptions.lowered(options), asked.equals("jvm"));
        if (unsupported.isEmpty()) return Writer.JVM;
        if (asked.equals("jvm")) {
            throw KStreamException.config("option 'writer' is jvm, but the JVM writer does not write "
                + String.join(", ", unsupported) + "; use writer=python or writer=auto (docs/JVM_WRITER.md)");
        }
        return Writer.PYTHON;
    }

    /**
     * What of this write only the Python sink does. {@code forcedJvm}: a missing topic is left to the
     * JVM writer's own TopicNotFoundError (as the Python sink's without auto-creation).
     */
    static List<String> unsupported(Map<String, String> lower, boolean forcedJvm) {
        List<String> out = new ArrayList<>();
        String cluster = ReaderOptions.clusterPath(lower);
        if (!new File(cluster, Format.METADATA_SNAPSHOT).isFile()) {
            out.add("a cluster without " + Format.METADATA_SNAPSHOT + " (" + cluster + ": open it once with this"
                + " kstream's Python side, which writes the file)");
            return out;
        }
        Map<String, String> properties = clusterProperties(cluster);
        for (String name : CLUSTER_TOPIC_DEFAULTS) {
            if (properties.containsKey(name)) {
                out.add("a cluster whose cluster.properties sets the topic default " + name + " (the JVM writer reads"
                    + " topic settings from metadata-snapshot.json, which holds each topic's own only)");
                return out;
            }
        }
        MetadataSnapshot snapshot = MetadataSnapshot.read(cluster);
        String topic = lower.get("topic");
        if (topic != null) {
            topic = topic.strip();
            MetadataSnapshot.TopicInfo info = snapshot.topics.get(topic);
            if (info == null) {
                if (!forcedJvm) out.add("a topic that does not exist yet ('" + topic + "')");
            } else {
                String why = notWritable(info);
                if (why != null) out.add(why);
            }
            return out;
        }
        if (!forcedJvm && "true".equalsIgnoreCase(properties.get("auto.create.topics.enable"))) {
            out.add("rows routed by their 'topic' column on a cluster with auto.create.topics.enable (the Python"
                + " sink creates a missing topic; the JVM writer raises TopicNotFoundError)");
            return out;
        }
        Collection<MetadataSnapshot.TopicInfo> all = snapshot.topics.values();
        for (MetadataSnapshot.TopicInfo info : all) {
            String why = notWritable(info);
            if (why != null) {
                out.add("rows routed by their 'topic' column on a cluster with " + why
                    + " (give option 'topic' to write one topic the JVM writer writes)");
                break;
            }
        }
        return out;
    }

    /** The cluster's cluster.properties (none: empty, the defaults). */
    static Map<String, String> clusterProperties(String cluster) {
        Map<String, String> out = new java.util.HashMap<>();
        java.nio.file.Path properties = java.nio.file.Path.of(cluster, "cluster.properties");
        try {
            for (String line : java.nio.file.Files.readAllLines(properties, java.nio.charset.StandardCharsets.UTF_8)) {
                String trimmed = line.strip();
                int eq = trimmed.indexOf('=');
                if (trimmed.startsWith("#") || eq < 0) continue;
                out.put(trimmed.substring(0, eq).strip(), trimmed.substring(eq + 1).strip());
            }
        } catch (java.io.IOException e) {
            return out;
        }
        return out;
    }

    /** Why the JVM writer cannot write this topic, or null. */
    public static String notWritable(MetadataSnapshot.TopicInfo info) {
        if (info.typed()) return "typed topic '" + info.name + "' (a declared Arrow schema)";
        for (MetadataSnapshot.PartitionInfo p : info.partitions) {
            if (p.replicas.size() > 1) {
                return "topic '" + info.name + "' with replication factor " + p.replicas.size()
                    + " (followers are written by the Python sink only)";
            }
        }
        return null;
    }
}

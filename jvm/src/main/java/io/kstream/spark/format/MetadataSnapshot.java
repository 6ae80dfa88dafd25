package io.kstream.spark.format;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kstream.spark.error.KStreamException;
import java.io.File;
import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * {@code <cluster>/metadata-snapshot.json}: placement, topic configs and schemas, written by
 * the Python side inside every SQLite transaction that changes them (never behind SQLite).
 * The JVM reader plans from it alone. Immutable once read; a relative log dir path is
 * relative to the cluster dir.
 */
public final class MetadataSnapshot {
    /** One partition's placement. */
    public static final class PartitionInfo {
        public final List<Integer> replicas;
        public final int leader;
        public final int leaderEpoch;
        public final List<Integer> isr;

        PartitionInfo(List<Integer> replicas, int leader, int leaderEpoch, List<Integer> isr) {
            this.replicas = replicas;
            this.leader = leader;
            this.leaderEpoch = leaderEpoch;
            this.isr = isr;
        }
    }

    /** One topic: its id, config overrides, schema versions (IPC schema messages) and partitions. */
    public static final class TopicInfo {
        public final String name;
        public final String topicId;
        public final Map<String, String> config;
        public final List<byte[]> schemas;
        public final List<PartitionInfo> partitions;

        TopicInfo(String name, String topicId, Map<String, String> config, List<byte[]> schemas,
                  List<PartitionInfo> partitions) {
            this.name = name;
            this.topicId = topicId;
            this.config = config;
            this.schemas = schemas;
            this.partitions = partitions;
        }

        public boolean typed() {
            return !schemas.isEmpty();
        }
    }

    public final String clusterDir;
    public final long metadataVersion;
    public final Map<Integer, String> logDirs; // online log dirs by id, absolute paths
    public final Map<String, TopicInfo> topics; // sorted by name

    private MetadataSnapshot(String clusterDir, long metadataVersion, Map<Integer, String> logDirs,
                             Map<String, TopicInfo> topics) {
        this.clusterDir = clusterDir;
        this.metadataVersion = metadataVersion;
        this.logDirs = logDirs;
        this.topics = topics;
    }

    public static MetadataSnapshot read(String clusterDir) {
        File file = new File(clusterDir, Format.METADATA_SNAPSHOT);
        JsonNode root;
        try {
            root = new ObjectMapper().readTree(file);
        } catch (NoSuchFileException | java.io.FileNotFoundException e) {
            throw new KStreamException(KStreamException.Kind.KStreamError, "no " + file + ": the JVM reader plans "
                + "from it; open the cluster once with this kstream's Python side (it writes the file), or use "
                + "option reader=python", e);
        } catch (IOException e) {
            throw new KStreamException(KStreamException.Kind.KStreamError, "cannot read " + file + ": " + e, e);
        }
        int version = root.path("format_version").asInt(-1);
        if (version != Format.SNAPSHOT_FORMAT_VERSION) {
            throw new KStreamException(KStreamException.Kind.KStreamError, file + " has format_version " + version
                + "; this JVM reader reads version " + Format.SNAPSHOT_FORMAT_VERSION);
        }
        Map<Integer, String> logDirs = new HashMap<>();
        for (JsonNode dir : root.path("log_dirs")) {
            if (!dir.path("online").asBoolean(true)) continue;
            File path = new File(dir.path("path").asText());
            if (!path.isAbsolute()) path = new File(clusterDir, path.getPath());
            logDirs.put(dir.path("id").asInt(), path.getAbsolutePath());
        }
        Map<String, TopicInfo> topics = new TreeMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = root.path("topics").properties().iterator();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            JsonNode t = e.getValue();
            Map<String, String> config = new LinkedHashMap<>();
            t.path("config").properties().forEach(c -> config.put(c.getKey(), c.getValue().asText()));
            List<byte[]> schemas = new ArrayList<>();
            for (JsonNode s : t.path("schemas")) schemas.add(Base64.getDecoder().decode(s.asText()));
            List<PartitionInfo> partitions = new ArrayList<>();
            for (JsonNode p : t.path("partitions")) {
                partitions.add(new PartitionInfo(ints(p.path("replicas")), p.path("leader").asInt(),
                    p.path("leader_epoch").asInt(), ints(p.path("isr"))));
            }
            topics.put(e.getKey(), new TopicInfo(e.getKey(), t.path("topic_id").asText(), config,
                Collections.unmodifiableList(schemas), Collections.unmodifiableList(partitions)));
        }
        return new MetadataSnapshot(clusterDir, root.path("metadata_version").asLong(), logDirs, topics);
    }

    private static List<Integer> ints(JsonNode array) {
        List<Integer> out = new ArrayList<>();
        for (JsonNode n : array) out.add(n.asInt());
        return out;
    }

    public TopicInfo topic(String name) {
        TopicInfo t = topics.get(name);
        if (t == null) {
            throw new KStreamException(KStreamException.Kind.TopicNotFoundError, "topic '" + name
                + "' does not exist; existing topics: " + (topics.isEmpty() ? "none" : String.join(", ", topics.keySet())));
        }
        return t;
    }

    /** Each replica's dir by log dir id (replicas on offline log dirs are left out). */
    public Map<Integer, String> replicaDirs(String topic, int partition) {
        Map<Integer, String> out = new HashMap<>();
        for (int replica : topic(topic).partitions.get(partition).replicas) {
            String dir = logDirs.get(replica);
            if (dir != null) out.put(replica, dir + File.separator + Format.replicaDirName(topic, partition));
        }
        return out;
    }

    /** The leader replica's dir. */
    public String leaderDir(String topic, int partition) {
        PartitionInfo p = topic(topic).partitions.get(partition);
        String dir = replicaDirs(topic, partition).get(p.leader);
        if (dir == null) {
            throw new KStreamException(KStreamException.Kind.KStreamError, topic + "-" + partition
                + ": the leader's log dir " + p.leader + " is offline");
        }
        return dir;
    }

    public String lockPath(String topic, int partition) {
        return clusterDir + File.separator + Format.LOCKS_DIR + File.separator
            + Format.lockFileName(topic, partition, topic(topic).topicId);
    }

    /** The high watermark of a partition (see {@link HighWatermark}). */
    public long highWatermark(String topic, int partition) throws IOException {
        PartitionInfo p = topic(topic).partitions.get(partition);
        return HighWatermark.of(lockPath(topic, partition), replicaDirs(topic, partition), p.isr, p.leader);
    }
}

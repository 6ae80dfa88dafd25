package io.kstream.spark.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** metadata-snapshot.json as the Python cluster wrote it: topics, ids, partitions, log dirs. */
class MetadataSnapshotVectorTest {
    @Test
    void topicsPartitionsAndReplicaDirs() {
        MetadataSnapshot snapshot = MetadataSnapshot.read(SharedVectors.cluster());
        JsonNode topics = SharedVectors.manifest().path("topics");
        assertEquals(topics.size(), snapshot.topics.size());
        for (Iterator<Map.Entry<String, JsonNode>> it = topics.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> topic = it.next();
            MetadataSnapshot.TopicInfo info = snapshot.topic(topic.getKey());
            assertEquals(topic.getValue().path("topic_id").asText(), info.topicId);
            assertEquals(topic.getValue().path("partitions").asInt(), info.partitions.size());
            for (int partition = 0; partition < info.partitions.size(); partition++) {
                String replica = topic.getKey() + "-" + partition;
                assertEquals(Path.of(SharedVectors.replicaDir(replica)).toAbsolutePath().normalize(),
                    Path.of(snapshot.leaderDir(topic.getKey(), partition)).toAbsolutePath().normalize(), replica);
                assertTrue(Path.of(snapshot.lockPath(topic.getKey(), partition)).getFileName().toString()
                    .equals(Format.lockFileName(topic.getKey(), partition, info.topicId)), replica);
            }
        }
    }
}

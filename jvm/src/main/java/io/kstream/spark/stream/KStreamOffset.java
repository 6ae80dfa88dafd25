package io.kstream.spark.stream;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kstream.spark.error.KStreamException;
import io.kstream.spark.read.TopicPartition;
import java.util.Collections;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.sql.connector.read.streaming.Offset;

/**
 * A stream position: each partition's next offset, serialized as the Spark Kafka connector
 * (and kstream's Python reader) writes it, {@code {"topic":{"0":23,"1":5}}}, so a checkpoint
 * reads the same whichever reader wrote it. Immutable.
 */
public final class KStreamOffset extends Offset {
    private static final ObjectMapper JSON = new ObjectMapper();

    public final Map<TopicPartition, Long> offsets;

    public KStreamOffset(Map<TopicPartition, Long> offsets) {
        this.offsets = Collections.unmodifiableMap(new TreeMap<>(offsets));
    }

    @Override
    public String json() {
        ObjectNode root = JSON.createObjectNode();
        for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
            ObjectNode topic = root.has(e.getKey().topic) ? (ObjectNode) root.get(e.getKey().topic)
                : root.putObject(e.getKey().topic);
            topic.put(Integer.toString(e.getKey().partition), e.getValue());
        }
        return root.toString();
    }

    public static KStreamOffset fromJson(String json) {
        try {
            Map<TopicPartition, Long> out = new TreeMap<>();
            Iterator<Map.Entry<String, JsonNode>> topics = JSON.readTree(json).properties().iterator();
            while (topics.hasNext()) {
                Map.Entry<String, JsonNode> t = topics.next();
                Iterator<Map.Entry<String, JsonNode>> ps = t.getValue().properties().iterator();
                while (ps.hasNext()) {
                    Map.Entry<String, JsonNode> p = ps.next();
                    out.put(new TopicPartition(t.getKey(), Integer.parseInt(p.getKey())), p.getValue().asLong());
                }
            }
            return new KStreamOffset(out);
        } catch (Exception e) {
            throw KStreamException.config("stream offset '" + json + "' is not JSON like {\"topic\":{\"0\":23}}: " + e);
        }
    }
}

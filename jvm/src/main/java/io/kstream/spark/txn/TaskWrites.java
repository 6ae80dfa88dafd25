package io.kstream.spark.txn;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import io.kstream.spark.read.TopicPartition;
import java.util.ArrayList;
import java.util.List;

/**
 * What one task attempt wrote (its commit message to the driver): its producer id, the
 * partitions it wrote, how many records. Python's {@code TaskWrites}; in sink_batches.writes each
 * is {@code [producer_id, [[topic, partition], ...], records]}.
 */
public final class TaskWrites implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    private static final ObjectMapper JSON = new ObjectMapper();

    public final long producerId;
    public final List<TopicPartition> partitions;
    public final long records;

    public TaskWrites(long producerId, List<TopicPartition> partitions, long records) {
        this.producerId = producerId;
        this.partitions = List.copyOf(partitions);
        this.records = records;
    }

    /** sink_batches.writes of a decision. */
    public static String toJson(List<TaskWrites> writes) {
        ArrayNode all = JSON.createArrayNode();
        for (TaskWrites w : writes) {
            ArrayNode one = all.addArray();
            one.add(w.producerId);
            one.add(partitionsJson(w.partitions));
            one.add(w.records);
        }
        return all.toString();
    }

    static ArrayNode partitionsJson(List<TopicPartition> partitions) {
        ArrayNode out = JSON.createArrayNode();
        for (TopicPartition p : partitions) out.addArray().add(p.topic).add(p.partition);
        return out;
    }

    public static List<TaskWrites> fromJson(String text) {
        List<TaskWrites> out = new ArrayList<>();
        for (JsonNode w : parse(text)) out.add(new TaskWrites(w.get(0).asLong(), partitionsFrom(w.get(1)), w.get(2).asLong()));
        return out;
    }

    static List<TopicPartition> partitionsFrom(JsonNode array) {
        List<TopicPartition> out = new ArrayList<>();
        for (JsonNode p : array) out.add(new TopicPartition(p.get(0).asText(), p.get(1).asInt()));
        return out;
    }

    static JsonNode parse(String text) {
        try {
            return JSON.readTree(text);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("not JSON in the sink tables: " + text, e);
        }
    }

    @Override
    public String toString() {
        return "TaskWrites(" + producerId + ", " + partitions + ", " + records + ")";
    }
}

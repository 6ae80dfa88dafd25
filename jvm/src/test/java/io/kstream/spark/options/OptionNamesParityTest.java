package io.kstream.spark.options;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import io.kstream.spark.format.SharedVectors;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * One option table for both readers: the names a JVM read takes and the kafka.* keys it refuses
 * (with the same reason) equal Python's kstream.config.data_source_options, as the vectors carry them.
 */
class OptionNamesParityTest {
    @Test
    void readerOptionNamesEqualPythons() {
        TreeSet<String> python = new TreeSet<>();
        for (JsonNode name : SharedVectors.manifest().path("options").path("reader")) python.add(name.asText());
        assertEquals(python, new TreeSet<>(OptionNames.readerOptions()));
    }

    @Test
    void refusedKafkaKeysAndReasonsEqualPythons() {
        TreeMap<String, String> python = new TreeMap<>();
        JsonNode refused = SharedVectors.manifest().path("options").path("refused");
        for (Iterator<Map.Entry<String, JsonNode>> it = refused.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> entry = it.next();
            python.put(entry.getKey(), entry.getValue().asText());
        }
        assertEquals(python, new TreeMap<>(OptionNames.refused()));
    }
}

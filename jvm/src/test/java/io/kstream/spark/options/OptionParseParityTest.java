package io.kstream.spark.options;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.SharedVectors;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Options are parsed in both languages (kstream.source.read_options and {@link ReaderOptions}): each
 * case of the vectors (tests/jvm/vectors.py, with what Python made of it) is refused by both, or
 * accepted by both with the same meaning, field by field; where the case carries Python's message,
 * Java's says the same words.
 */
class OptionParseParityTest {
    // Compared as JSON text with sorted keys: 10 is 10 whether an Integer or a Long.
    private static final ObjectMapper JSON =
        new ObjectMapper().configure(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS, true);

    private static Map<String, Object> fields(ReaderOptions parsed) {
        Map<String, Object> out = new TreeMap<>();
        out.put("subscribe", parsed.subscribe == null ? List.of() : parsed.subscribe);
        out.put("subscribePattern", parsed.subscribePattern);
        out.put("assign", parsed.assign == null ? null : new TreeMap<>(parsed.assign));
        out.put("startingOffsets", parsed.startingOffsets == null ? null : parsed.startingOffsets.word);
        out.put("endingOffsets", parsed.endingOffsets == null ? null : parsed.endingOffsets.word);
        out.put("maxOffsetsPerTrigger", parsed.maxOffsetsPerTrigger);
        out.put("minOffsetsPerTrigger", parsed.minOffsetsPerTrigger);
        out.put("maxTriggerDelayMs", parsed.maxTriggerDelayMs);
        out.put("includeHeaders", parsed.includeHeaders);
        out.put("failOnDataLoss", parsed.failOnDataLoss);
        out.put("readCommitted", parsed.readCommitted);
        out.put("columns", parsed.columns);
        out.put("verifyChecksums", parsed.verifyChecksums);
        out.put("latestPerKey", parsed.latestPerKey);
        out.put("includeTombstones", parsed.includeTombstones);
        return out;
    }

    private static String json(Object value) {
        try {
            return JSON.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void bothReadersParseEveryCaseAlike() {
        JsonNode cases = SharedVectors.manifest().path("options").path("parse");
        assertTrue(cases.size() > 0, "the vectors hold option cases");
        List<String> differences = new ArrayList<>();
        for (JsonNode c : cases) {
            Map<String, String> given = new LinkedHashMap<>();
            for (Iterator<Map.Entry<String, JsonNode>> it = c.path("options").fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> option = it.next();
                given.put(option.getKey(), option.getValue().asText());
            }
            Boolean streaming = c.path("streaming").isNull() ? null : c.path("streaming").asBoolean();
            Map<String, String> options = given; // both parsers lower-case the names themselves
            ReaderOptions parsed = null;
            String error = null;
            try {
                OptionNames.check(options);
                parsed = ReaderOptions.parse(options, streaming);
            } catch (KStreamException e) {
                error = e.getMessage();
            }
            String what = given + " streaming=" + streaming;
            if (c.path("error").asBoolean()) {
                if (error == null) {
                    differences.add(what + ": Python refuses it, Java accepts it");
                } else if (c.has("message") && !error.equals("ConfigError: " + c.path("message").asText())) {
                    differences.add(what + ": both refuse it, but Python says '" + c.path("message").asText()
                        + "' and Java '" + error + "'");
                }
                continue;
            }
            if (error != null) {
                differences.add(what + ": Python accepts it, Java refuses it: " + error);
                continue;
            }
            String expected = json(JSON.convertValue(c.path("parsed"), Map.class));
            String actual = json(fields(parsed));
            if (!expected.equals(actual)) differences.add(what + ": Python " + expected + ", Java " + actual);
        }
        if (!differences.isEmpty()) fail(String.join("\n", differences));
    }
}

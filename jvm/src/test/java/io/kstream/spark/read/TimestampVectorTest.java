package io.kstream.spark.read;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.kstream.spark.format.SharedVectors;
import io.kstream.spark.options.ReaderOptions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The one table of offset-for-timestamp cases (tests/log/timestamp_cases.py: control frames,
 * aborted and open transactions, retention gaps, segments with nothing visible, an empty log,
 * equal and out-of-order timestamps, LogAppendTime frames), each written by Python as a topic of
 * the vectors' timestamps cluster with what Python's kstream.log.offset_for_timestamp must answer per
 * isolation level. The planner (startingOffsetsByTimestamp) and {@link TimestampLookup} must
 * answer the same: offset and timestamp.
 */
class TimestampVectorTest {
    @Test
    void everyLookupOfTheTableUnderBothIsolationLevels() {
        JsonNode rows = SharedVectors.manifest().path("timestamps");
        assertTrue(rows.size() >= 50, "the table's lookups are in the manifest: " + rows.size());
        List<String> wrong = new ArrayList<>();
        for (JsonNode row : rows) {
            String topic = row.path("topic").asText();
            String isolation = row.path("isolation").asText();
            long target = row.path("target").asLong();
            ReaderOptions options = ReaderOptions.parse(Map.of("cluster", SharedVectors.timestampsCluster(), "subscribe", topic,
                "isolation.level", isolation), false);
            PartitionPlanner planner = new PartitionPlanner(options);
            TopicPartition tp = new TopicPartition(topic, row.path("partition").asInt());
            TimestampLookup.Found found = TimestampLookup.find(planner.bounds(tp), target, true);
            String got = found == null ? "-1@-1" : found.offset + "@" + found.timestampMs;
            String expected = row.path("offset").asLong() + "@" + row.path("timestamp").asLong();
            long planned = planner.offsetForTimestamp(tp, target);
            if (!got.equals(expected) || planned != row.path("offset").asLong()) {
                wrong.add(row.path("case").asText() + " target " + target + " " + isolation + ": expected " + expected
                    + ", TimestampLookup " + got + ", planner " + planned + " (" + row.path("why").asText() + ")");
            }
        }
        assertEquals(List.of(), wrong);
    }
}

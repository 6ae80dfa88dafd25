package io.kstream.spark.format;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.Iterator;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The sparse offset and time indexes of every segment of the vectors, as format.py's dtypes read them. */
class IndexVectorTest {
    @Test
    void everyOffsetIndexEntryIsFoundByLookup() throws IOException {
        int checked = 0;
        JsonNode replicas = SharedVectors.manifest().path("replicas");
        for (Iterator<Map.Entry<String, JsonNode>> it = replicas.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> replica = it.next();
            String dir = SharedVectors.replicaDir(replica.getKey());
            for (Iterator<Map.Entry<String, JsonNode>> segments = replica.getValue().path("offset_index").fields();
                    segments.hasNext(); ) {
                Map.Entry<String, JsonNode> segment = segments.next();
                long base = Long.parseLong(segment.getKey());
                SparseIndex index = SparseIndex.offsets(dir, base);
                long[] previous = {base, 0};
                for (JsonNode entry : segment.getValue()) {
                    long[] expected = {entry.get(0).asLong(), entry.get(1).asLong()};
                    String what = replica.getKey() + " entry " + entry;
                    assertArrayEquals(expected, index.lookup(expected[0]), what);
                    // an offset between two entries starts at the earlier one
                    assertArrayEquals(previous, index.lookup(expected[0] - 1), what + ", offset before it");
                    previous = expected;
                    checked++;
                }
                assertArrayEquals(previous, index.lastEntry(), replica.getKey() + " segment " + base);
                assertArrayEquals(previous, index.lookup(Long.MAX_VALUE), replica.getKey() + " segment " + base);
            }
        }
        assertTrue(checked > 0, "the vectors hold index entries");
    }

    @Test
    void everyTimeIndexEntryStartsTheScanForLaterTimestamps() throws IOException {
        int checked = 0;
        JsonNode replicas = SharedVectors.manifest().path("replicas");
        for (Iterator<Map.Entry<String, JsonNode>> it = replicas.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> replica = it.next();
            String dir = SharedVectors.replicaDir(replica.getKey());
            for (Iterator<Map.Entry<String, JsonNode>> segments = replica.getValue().path("time_index").fields();
                    segments.hasNext(); ) {
                Map.Entry<String, JsonNode> segment = segments.next();
                long base = Long.parseLong(segment.getKey());
                SparseIndex index = SparseIndex.times(dir, base);
                JsonNode entries = segment.getValue();
                if (entries.size() > 0) {
                    assertEquals(base, index.startFor(entries.get(0).get(0).asLong()), "no entry below the first");
                }
                for (JsonNode entry : entries) {
                    // entries grow in timestamp: the last one below ts + 1 is this one
                    assertEquals(entry.get(1).asLong(), index.startFor(entry.get(0).asLong() + 1),
                        replica.getKey() + " time entry " + entry);
                    checked++;
                }
            }
        }
        assertTrue(checked > 0, "the vectors hold time index entries");
    }
}

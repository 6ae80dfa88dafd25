package io.kstream.spark.format;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import org.junit.jupiter.api.Test;

/** The HW in a lock file: valid, torn (value and complement disagree), short; and the cluster's. */
class HighWatermarkVectorTest {
    @Test
    void handMadeLockFiles() throws IOException {
        for (String name : new String[] {"hw-valid.lock", "hw-torn.lock", "hw-short.lock"}) {
            JsonNode expected = SharedVectors.manifest().path("files").path(name);
            Long stored = HighWatermark.stored(SharedVectors.file(name));
            assertEquals(expected.isNull() ? null : expected.asLong(), stored, name);
        }
    }

    @Test
    void theClusterPublishedEveryWrittenRecord() throws IOException {
        MetadataSnapshot snapshot = MetadataSnapshot.read(SharedVectors.cluster());
        JsonNode replicas = SharedVectors.manifest().path("replicas");
        for (String replica : new String[] {"codecs-0", "codecs-1", "codecs-2", "txn-0"}) {
            int dash = replica.lastIndexOf('-');
            long hw = snapshot.highWatermark(replica.substring(0, dash), Integer.parseInt(replica.substring(dash + 1)));
            assertEquals(replicas.path(replica).path("log_end_offset").asLong(), hw, replica);
        }
    }
}

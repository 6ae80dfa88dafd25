package io.kstream.spark.format;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.Iterator;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Recovery points of the vectors' replicas and the hand-made ones (newer slot, torn slot, old layout). */
class RecoveryPointVectorTest {
    private static void assertPoint(JsonNode expected, RecoveryPoint point, String what) {
        if (expected.isNull()) {
            assertEquals(RecoveryPoint.State.UNREADABLE, point.state, what);
            return;
        }
        assertEquals(RecoveryPoint.State.PRESENT, point.state, what);
        assertEquals(expected.get(0).asLong(), point.segmentBase, what);
        assertEquals(expected.get(1).asLong(), point.position, what);
        assertEquals(expected.get(2).asLong(), point.nextOffset, what);
    }

    @Test
    void replicasRecoveryPoints() throws IOException {
        JsonNode replicas = SharedVectors.manifest().path("replicas");
        for (Iterator<Map.Entry<String, JsonNode>> it = replicas.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> replica = it.next();
            assertPoint(replica.getValue().path("recovery_point"),
                RecoveryPoint.read(SharedVectors.replicaDir(replica.getKey())), replica.getKey());
        }
    }

    @Test
    void handMadeRecoveryPoints() throws IOException {
        for (String name : new String[] {"rp-newer-wins", "rp-torn-newer", "rp-old-layout"}) {
            assertPoint(SharedVectors.manifest().path("files").path(name), RecoveryPoint.read(SharedVectors.file(name)),
                name);
        }
    }

    @Test
    void aMissingFileIsMissing() throws IOException {
        assertEquals(RecoveryPoint.State.MISSING, RecoveryPoint.read(SharedVectors.file("txn-torn")).state);
    }
}

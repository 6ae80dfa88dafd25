package io.kstream.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kstream.spark.error.KStreamException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Partitioner against Kafka's own UtilsTest.testMurmur2 values; tests/jvm/test_partitioner_conformance.py
 *  compares it with Python's partitioner (and Kafka's client jar when the Kafka peer is there). */
class PartitionerTest {
    @Test
    void murmur2IsKafkasUtilsMurmur2() {
        Map<String, Integer> kafka = Map.of(
            "21", -973932308,
            "foobar", -790332482,
            "a-little-bit-long-string", -985981536,
            "a-little-bit-longer-string", -1486304829,
            "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971,
            "abc", 479470107);
        for (Map.Entry<String, Integer> c : kafka.entrySet()) {
            assertEquals(c.getValue(), Partitioner.murmur2(c.getKey().getBytes(StandardCharsets.UTF_8)), c.getKey());
        }
        // toPositive clears the sign bit: 1357151166 % 10
        assertEquals(6, Partitioner.partitionForKey("foobar".getBytes(StandardCharsets.UTF_8), 10));
    }

    @Test
    void unkeyedRowsStickThenMoveToAnotherPartition() {
        Partitioner partitioner = new Partitioner(Partitioner.MURMUR2_RANDOM, new Random(7));
        int first = partitioner.unkeyed("t", 5);
        assertEquals(first, partitioner.partition("t", null, 5));
        for (int i = 0; i < 50; i++) {
            int now = partitioner.unkeyed("t", 5);
            partitioner.batchSent("t", 5, now);
            int next = partitioner.unkeyed("t", 5);
            assertNotEquals(now, next);
            assertTrue(next >= 0 && next < 5);
        }
        Partitioner one = new Partitioner(Partitioner.MURMUR2_RANDOM, new Random(7));
        one.batchSent("t", 1, one.unkeyed("t", 1));
        assertEquals(0, one.unkeyed("t", 1));
    }

    @Test
    void murmur2PutsUnkeyedRowsOnTheEmptyKeysPartition() {
        Partitioner partitioner = new Partitioner(Partitioner.MURMUR2, new Random(7));
        int empty = Partitioner.partitionForKey(new byte[0], 12);
        for (int i = 0; i < 5; i++) {
            assertEquals(empty, partitioner.partition("t", null, 12));
            partitioner.batchSent("t", 12, empty);
        }
        assertEquals(Partitioner.partitionForKey(new byte[0], 12), partitioner.partition("t", new byte[0], 12));
    }

    @Test
    void anUnknownPartitionerIsAConfigError() {
        KStreamException error = assertThrows(KStreamException.class, () -> new Partitioner("consistent_random", new Random()));
        assertEquals(KStreamException.Kind.ConfigError, error.kind);
        assertTrue(error.getMessage().contains("partitioner=consistent_random"), error.getMessage());
    }
}

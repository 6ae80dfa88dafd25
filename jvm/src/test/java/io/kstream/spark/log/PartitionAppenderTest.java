package io.kstream.spark.log;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.Format;
import io.kstream.spark.format.FrameEncoder;
import io.kstream.spark.format.HighWatermark;
import io.kstream.spark.format.LockFiles;
import io.kstream.spark.format.LogReader;
import io.kstream.spark.format.RecoveryPoint;
import io.kstream.spark.format.SegmentFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * PartitionAppender within one JVM: what it refuses, and two appenders on two threads keeping
 * offsets contiguous. Its conformance with Python's writer is tests/jvm/test_appender_conformance.py.
 */
class PartitionAppenderTest {
    @TempDir Path dir;

    @AfterEach
    void nothingLeftOpen() {
        assertEquals(0, LockFiles.openCount(), "a lock file's channel left open");
    }

    private String replicaDir() throws IOException {
        return Files.createDirectories(dir.resolve("logs").resolve("t-0")).toString();
    }

    private String lockPath() {
        return dir.resolve("locks").resolve("t-0-abc.lock").toString();
    }

    private static byte[] frame(int rows, int attributes, long producerId) throws IOException {
        Schema schema = new Schema(List.of(new Field("value", FieldType.nullable(new ArrowType.Int(64, true)), null)));
        try (BufferAllocator allocator = new RootAllocator();
             VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
            root.allocateNew();
            BigIntVector values = (BigIntVector) root.getVector("value");
            for (int i = 0; i < rows; i++) values.setSafe(i, i);
            root.setRowCount(rows);
            long now = System.currentTimeMillis();
            return FrameEncoder.frame(FrameEncoder.payload(root, "none"), "none", attributes, 0, rows, 0, producerId,
                (short) -1, -1, now, now);
        }
    }

    private PartitionAppender appender(String acks) throws IOException {
        return new PartitionAppender(replicaDir(), lockPath(), 1, 2, PartitionAppender.Config.of(Map.of(), acks));
    }

    @Test
    void refusesReplicatedTopicsRatherThanWritingOnlyTheLeader() throws IOException {
        KStreamException e = assertThrows(KStreamException.class, () -> new PartitionAppender(replicaDir(), lockPath(), 3,
            0, PartitionAppender.Config.of(Map.of(), "all")));
        assertTrue(e.getMessage().contains("replication factor 1 only, not 3") && e.getMessage().contains("writer=python"),
            e.getMessage());
    }

    @Test
    void refusesAnUnmeetableMinInsyncReplicas() {
        KStreamException e = assertThrows(KStreamException.class, () -> new PartitionAppender(replicaDir(), lockPath(), 1,
            0, PartitionAppender.Config.of(Map.of("min.insync.replicas", "2"), "all")));
        assertTrue(e.getMessage().contains("min.insync.replicas=2"), e.getMessage());
    }

    @Test
    void refusesTransactionalFramesAndProducerIdsWritingNothing() throws IOException {
        try (PartitionAppender appender = appender("all")) {
            for (byte[] bad : List.of(frame(2, Format.TRANSACTIONAL, 7), frame(2, 0, 7), frame(1, Format.CONTROL, 7))) {
                KStreamException e = assertThrows(KStreamException.class, () -> appender.append(List.of(bad)));
                assertTrue(e.getMessage().contains("non-transactional frames without a producer id only"), e.getMessage());
            }
            assertEquals(0, appender.logEndOffset());
        }
    }

    @Test
    void refusesFramesOverMessageMaxBytes() throws IOException {
        byte[] big = frame(1000, 0, Format.NO_PRODUCER_ID);
        PartitionAppender.Config config = PartitionAppender.Config.of(Map.of("message.max.bytes", "1000"), "1");
        try (PartitionAppender appender = new PartitionAppender(replicaDir(), lockPath(), 1, 0, config)) {
            KStreamException e = assertThrows(KStreamException.class, () -> appender.append(List.of(big)));
            assertTrue(e.getMessage().contains("message.max.bytes (1000)"), e.getMessage());
        }
    }

    @Test
    void refusesBadConfig() {
        assertThrows(KStreamException.class, () -> PartitionAppender.Config.of(Map.of("segment.bytes", "0"), "all"));
        assertThrows(KStreamException.class, () -> PartitionAppender.Config.of(Map.of(), "2"));
        assertThrows(KStreamException.class,
            () -> PartitionAppender.Config.of(Map.of("message.timestamp.type", "Now"), "all"));
    }

    @Test
    void twoThreadsAppendContiguouslyAndPublishTheHighWatermark() throws Exception {
        byte[] three = frame(3, 0, Format.NO_PRODUCER_ID);
        List<CompletableFuture<List<Long>>> writers = new ArrayList<>();
        for (int t = 0; t < 2; t++) {
            writers.add(CompletableFuture.supplyAsync(() -> {
                List<Long> bases = new ArrayList<>();
                try (PartitionAppender appender = appender("all")) {
                    for (int i = 0; i < 50; i++) bases.add(appender.append(List.of(three.clone())).baseOffsets[0]);
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
                return bases;
            }));
        }
        List<Long> all = new ArrayList<>();
        for (CompletableFuture<List<Long>> w : writers) all.addAll(w.get());
        long[] sorted = all.stream().mapToLong(Long::longValue).sorted().toArray();
        long[] expected = new long[100];
        for (int i = 0; i < 100; i++) expected[i] = 3L * i;
        assertArrayEquals(expected, sorted);
        assertEquals(300L, HighWatermark.stored(lockPath()));
        try (LogReader reader = new LogReader(replicaDir(), true)) {
            assertEquals(300, reader.logEndOffset());
        }
    }

    @Test
    void rollsASegmentOlderThanSegmentMsAndMovesTheRecoveryPoint() throws Exception {
        PartitionAppender.Config config = PartitionAppender.Config.of(Map.of("segment.ms", "50"), "all");
        try (PartitionAppender appender = new PartitionAppender(replicaDir(), lockPath(), 1, 0, config)) {
            appender.append(List.of(frame(2, 0, Format.NO_PRODUCER_ID), frame(2, 0, Format.NO_PRODUCER_ID)));
            assertArrayEquals(new long[] {0}, SegmentFiles.bases(replicaDir()));
            Thread.sleep(120);
            PartitionAppender.Result result = appender.append(List.of(frame(3, 0, Format.NO_PRODUCER_ID)));
            assertEquals(4, result.baseOffsets[0]);
            assertArrayEquals(new long[] {0, 4}, SegmentFiles.bases(replicaDir()));
        }
        RecoveryPoint point = RecoveryPoint.read(replicaDir());
        assertEquals(4, point.segmentBase);
        assertEquals(7, point.nextOffset);
        assertEquals(Files.size(Path.of(SegmentFiles.path(replicaDir(), 4, Format.LOG_SUFFIX))),
            point.position);
        assertTrue(Files.exists(Path.of(SegmentFiles.path(replicaDir(), 4, Format.TXN_INDEX_SUFFIX))));
    }
}

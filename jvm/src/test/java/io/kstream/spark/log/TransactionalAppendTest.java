package io.kstream.spark.log;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.Channels;
import io.kstream.spark.format.Format;
import io.kstream.spark.format.FrameEncoder;
import io.kstream.spark.format.LockFiles;
import io.kstream.spark.format.SegmentFiles;
import io.kstream.spark.format.TxnIndex;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
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
 * PartitionAppender's transactional path within one JVM: the guard runs under the lock with the
 * log end before anything is written (and may write nothing), each transactional frame gets its
 * .txnindex entry, a writer's missing entries are added by the next appender, and what the plain
 * path and the transactional path accept. Against Python: tests/jvm/test_sink_txn_conformance.py.
 */
class TransactionalAppendTest {
    private static final long PRODUCER = 42;

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

    private PartitionAppender appender() throws IOException {
        return new PartitionAppender(replicaDir(), lockPath(), 1, 0, PartitionAppender.Config.of(Map.of(), "all"));
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
                (short) 0, -1, now, now);
        }
    }

    private List<long[]> entries() throws IOException {
        List<long[]> out = new ArrayList<>();
        TxnIndex index = TxnIndex.read(replicaDir(), 0, Long.MAX_VALUE);
        assertTrue(index.whole, "a torn or missing .txnindex");
        for (TxnIndex.Entry e : index.entries) out.add(new long[] {e.kind, e.producerId, e.offset});
        return out;
    }

    @Test
    void theGuardSeesTheLogEndUnderTheLockAndEachFrameGetsItsEntry() throws IOException {
        List<Long> seen = new ArrayList<>();
        try (PartitionAppender a = appender()) {
            a.append(List.of(frame(3, 0, Format.NO_PRODUCER_ID)));
            PartitionAppender.Result r = a.appendTransactional(
                List.of(frame(2, Format.TRANSACTIONAL, PRODUCER), frame(4, Format.TRANSACTIONAL, PRODUCER)),
                logEnd -> seen.add(logEnd));
            assertArrayEquals(new long[] {3, 5}, r.baseOffsets);
            assertEquals(List.of(3L), seen);
            assertEquals(9, a.logEndOffset());
        }
        List<long[]> got = entries();
        assertEquals(2, got.size());
        assertArrayEquals(new long[] {Format.TXN_DATA, PRODUCER, 3}, got.get(0));
        assertArrayEquals(new long[] {Format.TXN_DATA, PRODUCER, 5}, got.get(1));
    }

    @Test
    void anAppendInterruptedUnderTheLockFinishesAndKeepsTheInterrupt() throws Exception {
        // Spark interrupts a cancelled task's thread at any moment; here right after the guard
        // recorded the transaction's first offset. Interruptible channels would close before the
        // frame is written and leave the recorded transaction with no frame (the driver's marker
        // then lands at its first offset); the appender's channels are uninterruptible instead.
        assumeTrue(Channels.uninterruptible(),
            "no --add-opens java.base/sun.nio.ch: channels stay interruptible");
        CompletableFuture<Object[]> done = new CompletableFuture<>();
        Thread task = new Thread(() -> {
            try (PartitionAppender a = appender()) {
                PartitionAppender.Result r = a.appendTransactional(List.of(frame(2, Format.TRANSACTIONAL, PRODUCER)),
                    logEnd -> {
                        Thread.currentThread().interrupt();
                        return true;
                    });
                done.complete(new Object[] {r.baseOffsets[0], r.endOffset, Thread.interrupted()});
            } catch (Throwable e) {
                done.completeExceptionally(e);
            }
        });
        task.start();
        Object[] got = done.get(60, TimeUnit.SECONDS);
        task.join();
        assertEquals(0L, got[0]);
        assertEquals(2L, got[1]);
        assertEquals(Boolean.TRUE, got[2], "the interrupt is kept for the task's next wait");
        List<long[]> entries = entries();
        assertEquals(1, entries.size());
        assertArrayEquals(new long[] {Format.TXN_DATA, PRODUCER, 0}, entries.get(0));
        try (PartitionAppender b = appender()) {
            assertEquals(2, b.logEndOffset());
        }
    }

    @Test
    void aGuardThatRefusesOrFindsNothingToEndWritesNothing() throws IOException {
        try (PartitionAppender a = appender()) {
            a.appendTransactional(List.of(frame(2, Format.TRANSACTIONAL, PRODUCER)), logEnd -> true);
            byte[] marker = frame(1, Format.TRANSACTIONAL | Format.CONTROL, PRODUCER);
            assertNull(a.appendMarker(marker, true, logEnd -> false));
            KStreamException fenced = new KStreamException(KStreamException.Kind.FencedError, "zombie");
            assertThrows(KStreamException.class, () -> a.appendTransactional(
                List.of(frame(2, Format.TRANSACTIONAL, PRODUCER)), logEnd -> {
                    throw fenced;
                }));
            assertEquals(2, a.logEndOffset());
            PartitionAppender.Result r = a.appendMarker(marker, false, logEnd -> true);
            assertEquals(2, r.baseOffsets[0]);
        }
        List<long[]> got = entries();
        assertEquals(2, got.size());
        assertArrayEquals(new long[] {Format.TXN_ABORT, PRODUCER, 2}, got.get(1));
    }

    @Test
    void aRunOfMarkersChecksEachGuardBeforeItsMarkerAndSkipsTheRefusedOnes() throws IOException {
        // A sink commit's markers of one partition as one run (one fsync set): each marker is
        // written only if its own guard, run under the lock right before it, says so; the rest
        // are what one appendMarker call per marker would have written.
        long other = PRODUCER + 1;
        long third = PRODUCER + 2;
        List<Long> seen = new ArrayList<>();
        try (PartitionAppender a = appender()) {
            a.appendTransactional(List.of(frame(2, Format.TRANSACTIONAL, PRODUCER)), logEnd -> true);
            a.appendTransactional(List.of(frame(3, Format.TRANSACTIONAL, other)), logEnd -> true);
            a.appendTransactional(List.of(frame(1, Format.TRANSACTIONAL, third)), logEnd -> true);
            List<byte[]> markers = List.of(frame(1, Format.TRANSACTIONAL | Format.CONTROL, PRODUCER),
                frame(1, Format.TRANSACTIONAL | Format.CONTROL, other), frame(1, Format.TRANSACTIONAL | Format.CONTROL, third));
            PartitionAppender.Result r = a.appendMarkers(markers, true, List.of(
                logEnd -> seen.add(logEnd), logEnd -> !seen.add(logEnd), logEnd -> seen.add(logEnd)));
            assertArrayEquals(new long[] {6, -1, 7}, r.baseOffsets);
            assertEquals(List.of(6L, 7L, 7L), seen);  // each guard saw the log end its marker would get
            assertEquals(8, r.endOffset);
            assertEquals(8L, io.kstream.spark.format.HighWatermark.stored(lockPath()));  // acks=all: synced, published
            assertNull(a.appendMarkers(markers.subList(0, 1), false, List.of(logEnd -> false)));  // nothing to end
            assertThrows(IllegalArgumentException.class, () -> a.appendMarkers(markers, true, List.of(logEnd -> true)));
            assertEquals(8, a.logEndOffset());
        }
        List<long[]> got = entries();
        assertEquals(5, got.size());
        assertArrayEquals(new long[] {Format.TXN_COMMIT, PRODUCER, 6}, got.get(3));
        assertArrayEquals(new long[] {Format.TXN_COMMIT, third, 7}, got.get(4));
        io.kstream.spark.format.RecoveryPoint point = io.kstream.spark.format.RecoveryPoint.read(replicaDir());
        assertEquals(io.kstream.spark.format.RecoveryPoint.State.PRESENT, point.state);
        assertEquals(8, point.nextOffset);
    }

    @Test
    void eachPathTakesOnlyItsOwnFrames() throws IOException {
        try (PartitionAppender a = appender()) {
            assertThrows(KStreamException.class, () -> a.append(List.of(frame(1, Format.TRANSACTIONAL, PRODUCER))));
            IllegalArgumentException plain = assertThrows(IllegalArgumentException.class,
                () -> a.appendTransactional(List.of(frame(1, 0, Format.NO_PRODUCER_ID)), logEnd -> true));
            assertTrue(plain.getMessage().contains("transactional data frame"), plain.getMessage());
            assertThrows(IllegalArgumentException.class, () -> a.appendTransactional(
                List.of(frame(1, Format.TRANSACTIONAL | Format.CONTROL, PRODUCER)), logEnd -> true));
            assertThrows(IllegalArgumentException.class, () -> a.appendMarker(
                frame(1, Format.TRANSACTIONAL, PRODUCER), true, logEnd -> true));
            assertEquals(0, a.logEndOffset());
        }
    }

    @Test
    void entriesAKilledWriterLeftOutAreAddedBeforeTheNextOne() throws IOException {
        try (PartitionAppender a = appender()) {
            a.appendTransactional(List.of(frame(2, Format.TRANSACTIONAL, PRODUCER)), logEnd -> true);
            a.appendTransactional(List.of(frame(2, Format.TRANSACTIONAL, PRODUCER + 1)), logEnd -> true);
        }
        // A writer killed between its second frame and its entry, half way through the entry.
        Path index = Path.of(SegmentFiles.path(replicaDir(), 0, Format.TXN_INDEX_SUFFIX));
        try (FileChannel c = FileChannel.open(index, StandardOpenOption.WRITE)) {
            c.truncate(Format.TXN_INDEX_ENTRY_SIZE + 10);
        }
        try (PartitionAppender a = appender()) {
            a.appendTransactional(List.of(frame(1, Format.TRANSACTIONAL, PRODUCER + 2)), logEnd -> true);
        }
        List<long[]> got = entries();
        assertEquals(3, got.size());
        assertArrayEquals(new long[] {Format.TXN_DATA, PRODUCER + 1, 2}, got.get(1));
        assertArrayEquals(new long[] {Format.TXN_DATA, PRODUCER + 2, 4}, got.get(2));
    }

    @Test
    void aMarkerLeftWithoutItsEntryIsLeftToAPythonWriter() throws IOException {
        try (PartitionAppender a = appender()) {
            a.appendTransactional(List.of(frame(2, Format.TRANSACTIONAL, PRODUCER)), logEnd -> true);
            a.appendMarker(frame(1, Format.TRANSACTIONAL | Format.CONTROL, PRODUCER), true, logEnd -> true);
        }
        Path index = Path.of(SegmentFiles.path(replicaDir(), 0, Format.TXN_INDEX_SUFFIX));
        try (FileChannel c = FileChannel.open(index, StandardOpenOption.WRITE)) {
            c.truncate(Format.TXN_INDEX_ENTRY_SIZE);
        }
        try (PartitionAppender a = appender()) {
            KStreamException e = assertThrows(KStreamException.class, a::logEndOffset);
            assertTrue(e.getMessage().contains("Python writer"), e.getMessage());
        }
        assertEquals(Format.TXN_INDEX_ENTRY_SIZE, Files.size(index));  // nothing changed
    }
}

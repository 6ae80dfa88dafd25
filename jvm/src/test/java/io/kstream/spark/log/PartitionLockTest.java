package io.kstream.spark.log;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.Format;
import io.kstream.spark.format.HighWatermark;
import io.kstream.spark.format.Channels;
import io.kstream.spark.format.LockFiles;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** PartitionLock within one JVM, and against a second JVM (LockProbe, a raw FileChannel.lock). */
class PartitionLockTest {
    private static final Path PROBE = Path.of("src", "test", "java", "io", "kstream", "spark", "log", "LockProbe.java");
    private static final long WAIT_S = 60;

    @TempDir Path dir;

    @AfterEach
    void nothingLeftOpen() {
        assertEquals(0, LockFiles.openCount(), "a lock file's channel left open");
    }

    private String lockPath() {
        return dir.resolve("locks").resolve("t-0-abc.lock").toString();
    }

    @Test
    void createsTheFileAndItsDirAndReleases() throws IOException {
        try (PartitionLock lock = PartitionLock.acquire(lockPath(), 1000)) {
            assertEquals(0, lock.generation());
            assertTrue(Files.exists(Path.of(lockPath())));
        }
        try (PartitionLock again = PartitionLock.acquire(lockPath(), 0)) {
            assertEquals(0, again.generation());
        }
    }

    @Test
    void anotherThreadTimesOutNamingTheFile() throws Exception {
        try (PartitionLock lock = PartitionLock.acquire(lockPath(), 1000)) {
            CompletableFuture<Throwable> other = CompletableFuture.supplyAsync(() -> {
                try (PartitionLock second = PartitionLock.acquire(lockPath(), 100)) {
                    return null;
                } catch (Throwable e) {
                    return e;
                }
            });
            Throwable error = other.get(WAIT_S, TimeUnit.SECONDS);
            assertTrue(error instanceof KStreamException, String.valueOf(error));
            assertTrue(error.getMessage().contains(lockPath()), error.getMessage());
            assertTrue(error.getMessage().contains("another thread of this JVM"), error.getMessage());
        }
    }

    @Test
    void anotherThreadWaitsAndGetsItOnRelease() throws Exception {
        CountDownLatch took = new CountDownLatch(1);
        CompletableFuture<Void> other;
        try (PartitionLock lock = PartitionLock.acquire(lockPath(), 1000)) {
            other = CompletableFuture.runAsync(() -> {
                try (PartitionLock second = PartitionLock.acquire(lockPath(), WAIT_S * 1000)) {
                    took.countDown();
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            });
            assertFalse(took.await(300, TimeUnit.MILLISECONDS), "a second thread got a held lock");
        }
        assertTrue(took.await(WAIT_S, TimeUnit.SECONDS));
        other.get(WAIT_S, TimeUnit.SECONDS);
    }

    @Test
    void theSameThreadTwiceIsAnError() throws IOException {
        try (PartitionLock lock = PartitionLock.acquire(lockPath(), 1000)) {
            assertThrows(IllegalStateException.class, () -> PartitionLock.acquire(lockPath(), 0));
        }
    }

    @Test
    void aDeletedTopicFencesTheTakerAndLeavesTheLockFree() throws IOException {
        try (PartitionLock lock = PartitionLock.acquire(lockPath(), 1000)) {
            lock.markDeleted();
        }
        KStreamException error = assertThrows(KStreamException.class, () -> PartitionLock.acquire(lockPath(), 1000));
        assertEquals(KStreamException.Kind.TopicNotFoundError, error.kind);
        assertTrue(error.getMessage().contains(lockPath()), error.getMessage());
        // nothing held after the refusal: a probe in another JVM gets the file lock at once
        assertEquals("acquired", probeTry());
    }

    @Test
    void generationAndHighWatermarkAreWhatPythonReads() throws IOException {
        try (PartitionLock lock = PartitionLock.acquire(lockPath(), 1000)) {
            lock.bumpGeneration();
            lock.bumpGeneration();
            lock.writeHighWatermark(42);
            assertEquals(42L, HighWatermark.stored(lockPath()));
        }
        try (PartitionLock lock = PartitionLock.acquire(lockPath(), 1000)) {
            assertEquals(2, lock.generation());
        }
        byte[] raw = Files.readAllBytes(Path.of(lockPath()));
        assertEquals(Format.LOCK_HIGH_WATERMARK_POSITION + Format.LOCK_HIGH_WATERMARK_SIZE, raw.length);
        assertEquals(2, raw[Format.LOCK_GENERATION_POSITION]);
        assertEquals(42, raw[Format.LOCK_HIGH_WATERMARK_POSITION]);
        assertEquals((byte) ~42, raw[Format.LOCK_HIGH_WATERMARK_POSITION + 8]);
    }

    @Test
    void aReaderOfThisJvmDoesNotReleaseAHeldLock() throws IOException {
        try (PartitionLock lock = PartitionLock.acquire(lockPath(), 1000)) {
            lock.writeHighWatermark(7);
            for (int i = 0; i < 3; i++) assertEquals(7L, HighWatermark.stored(lockPath()));
            // Had the reader opened and closed a channel of its own, the JVM's POSIX lock would be gone.
            assertEquals("busy", probeTry());
        }
        assertEquals("acquired", probeTry());
    }

    @Test
    void anInterruptedReaderDoesNotCloseTheSharedChannel() throws Exception {
        assumeTrue(Channels.uninterruptible(), "no --add-opens java.base/sun.nio.ch: channels stay interruptible");
        try (PartitionLock lock = PartitionLock.acquire(lockPath(), 1000)) {
            lock.writeHighWatermark(9);
            CompletableFuture<Long> read = new CompletableFuture<>();
            Thread reader = new Thread(() -> {
                Thread.currentThread().interrupt();  // as Spark interrupts a cancelled task's thread
                try {
                    read.complete(HighWatermark.stored(lockPath()));
                } catch (Throwable e) {
                    read.completeExceptionally(e);
                }
            });
            reader.start();
            assertEquals(9L, read.get(WAIT_S, TimeUnit.SECONDS));
            reader.join();
            lock.writeHighWatermark(10);  // the channel is open and the lock ours
            assertEquals("busy", probeTry());
        }
    }

    @Test
    void anotherJvmsHolderTimesUsOutWithItsPid() throws Exception {
        Files.createDirectories(Path.of(lockPath()).getParent());
        Process holder = new ProcessBuilder(java(), PROBE.toString(), "hold", lockPath())
            .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8));
            String held = out.readLine();
            assertEquals("held " + holder.pid(), held);
            KStreamException error = assertThrows(KStreamException.class, () -> PartitionLock.acquire(lockPath(), 200));
            assertTrue(error.getMessage().contains(lockPath()), error.getMessage());
            assertTrue(error.getMessage().contains("POSIX by pid " + holder.pid()), error.getMessage());
            assertTrue(error.getMessage().contains("after 200 ms"), error.getMessage());
        } finally {
            holder.getOutputStream().close();
            assertTrue(holder.waitFor(WAIT_S, TimeUnit.SECONDS));
        }
        try (PartitionLock lock = PartitionLock.acquire(lockPath(), 1000)) {
            assertEquals(0, lock.generation());
        }
    }

    @Test
    void procLocksLinesNameTheHoldersOfOneInodeOnly() {
        long dev = (0xfeL << 8);  // major 0xfe, minor 0
        List<String> lines = List.of(
            "1: FLOCK  ADVISORY  WRITE 9737 fe:00:9986095 0 EOF",
            "2: OFDLCK ADVISORY  WRITE -1 fe:00:9986095 0 EOF",
            "2: -> OFDLCK ADVISORY  WRITE -1 fe:00:9986095 0 EOF",
            "3: POSIX  ADVISORY  WRITE 6655 fe:00:10002853 120 120",
            "4: POSIX  ADVISORY  WRITE 6655 fe:01:9986095 0 EOF");
        List<String> holders = LockHolders.holders(lines, dev, 9986095);
        assertEquals(2, holders.size(), holders.toString());
        assertTrue(holders.get(0).startsWith("FLOCK by pid 9737"), holders.get(0));
        assertTrue(holders.get(1).startsWith("OFDLCK (no pid"), holders.get(1));
        // glibc's makedev(0x103, 0x12345): the split parts of both numbers
        long big = (0x12345L & 0xff) | ((0x103L & 0xfff) << 8) | ((0x12345L & ~0xffL) << 12);
        assertEquals(0x103, LockHolders.major(big));
        assertEquals(0x12345, LockHolders.minor(big));
    }

    private String probeTry() throws IOException {
        Process probe = new ProcessBuilder(java(), PROBE.toString(), "try", lockPath())
            .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try {
            String line = new String(probe.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            assertTrue(probe.waitFor(WAIT_S, TimeUnit.SECONDS));
            assertEquals(0, probe.exitValue());
            return line;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }

    private static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }
}

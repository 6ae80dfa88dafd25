package io.kstream.spark.log;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.Format;
import io.kstream.spark.format.LockFiles;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The write lock of one partition, as the Java writer takes it: excludes the Python writers
 * (flock + OFD lock, src/kstream/log/storage/file_lock.py), other JVMs, and the other threads of
 * this JVM. docs/FORMAT.md, "The lock file", describes the lock kinds and the file's fields.
 *
 * <p>Taking it: this JVM's lock of the file first (a fair {@link java.util.concurrent.locks.ReentrantLock}:
 * a POSIX lock does not exclude threads of one process, and {@code FileChannel.lock} from a second
 * thread throws), then {@code FileChannel.tryLock()} on the JVM's one channel of the file
 * ({@link LockFiles}), retried with a growing pause until the timeout; never the blocking
 * {@code lock()}, so a wait ends on time and a thread interrupt ends it cleanly. Then, as Python's
 * {@code PartitionLock}, a deleted topic's mark fences the taker (TopicNotFoundError) and the
 * generation is read. Released by {@link #close}, or by the kernel when the JVM dies.
 *
 * <p>A holder is one thread: {@link #close} on the thread that took it. Not reentrant across
 * files in any order: take one partition's lock at a time, as the Python writers do.
 */
public final class PartitionLock implements AutoCloseable {
    static final long FIRST_PAUSE_MS = 1;
    static final long LONGEST_PAUSE_MS = 50;

    private final LockFiles.Entry entry;
    private final FileLock fileLock;
    private long generation;
    private boolean closed;

    private PartitionLock(LockFiles.Entry entry, FileLock fileLock, long generation) {
        this.entry = entry;
        this.fileLock = fileLock;
        this.generation = generation;
    }

    /**
     * Take the lock of {@code lockPath} (created, with its dir, if missing), waiting at most
     * {@code timeoutMs}.
     *
     * @throws KStreamException KStreamError naming the file and its holder when the wait timed out
     *     or was interrupted; TopicNotFoundError when the topic was deleted
     */
    public static PartitionLock acquire(String lockPath, long timeoutMs) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        LockFiles.Entry entry = LockFiles.open(Path.of(lockPath), true);
        boolean threadLocked = false;
        FileLock fileLock = null;
        try {
            if (entry.threadLock().isHeldByCurrentThread()) {
                throw new IllegalStateException("this thread already holds the partition lock " + lockPath
                    + "; it is not reentrant: release it first");
            }
            try {
                threadLocked = entry.threadLock().tryLock(Math.max(0, deadline - System.nanoTime()),
                    TimeUnit.NANOSECONDS);
                if (!threadLocked) {
                    throw timedOut(lockPath, timeoutMs, "another thread of this JVM (pid "
                        + ProcessHandle.current().pid() + ") holds it");
                }
                fileLock = lockFile(entry, lockPath, timeoutMs, deadline);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new KStreamException(KStreamException.Kind.KStreamError,
                    "interrupted while waiting for the partition lock " + lockPath, e);
            }
            PartitionLock lock = new PartitionLock(entry, fileLock, 0);
            lock.checkNotDeleted(lockPath);
            lock.generation = lock.readGeneration();
            return lock;
        } catch (IOException | RuntimeException e) {
            try {
                if (fileLock != null) fileLock.release();
            } finally {
                if (threadLocked) entry.threadLock().unlock();
                entry.release();
            }
            throw e;
        }
    }

    private static FileLock lockFile(LockFiles.Entry entry, String lockPath, long timeoutMs, long deadline)
            throws IOException, InterruptedException {
        long pauseMs = FIRST_PAUSE_MS;
        while (true) {
            FileLock lock;
            try {
                lock = entry.channel().tryLock();
            } catch (OverlappingFileLockException e) {
                throw new KStreamException(KStreamException.Kind.KStreamError, "this JVM already locks "
                    + lockPath + " outside PartitionLock (a FileChannel opened elsewhere); take partition"
                    + " locks only through io.kstream.spark.log.PartitionLock", e);
            }
            if (lock != null) return lock;
            long leftNs = deadline - System.nanoTime();
            if (leftNs <= 0) throw timedOut(lockPath, timeoutMs, LockHolders.describe(Path.of(lockPath)));
            TimeUnit.MILLISECONDS.sleep(Math.min(pauseMs, Math.max(1, TimeUnit.NANOSECONDS.toMillis(leftNs))));
            pauseMs = Math.min(LONGEST_PAUSE_MS, pauseMs * 2);
        }
    }

    private static KStreamException timedOut(String lockPath, long timeoutMs, String holder) {
        return new KStreamException(KStreamException.Kind.KStreamError, "the partition lock " + lockPath
            + " is still held after " + timeoutMs + " ms; holder: " + holder + ". A writer holds it only"
            + " while it appends: a holder that stays is stopped or stuck (kill it: the kernel releases"
            + " its lock), else give the write a longer timeout");
    }

    private void checkNotDeleted(String lockPath) throws IOException {
        ByteBuffer mark = ByteBuffer.allocate(Format.LOCK_DELETED_MARK.length());
        read(mark, Format.LOCK_DELETED_POSITION);
        if (!mark.hasRemaining()
                && new String(mark.array(), StandardCharsets.US_ASCII).equals(Format.LOCK_DELETED_MARK)) {
            throw new KStreamException(KStreamException.Kind.TopicNotFoundError,
                "the partition behind " + lockPath + " was deleted; re-read the topic's metadata");
        }
    }

    /** Reads as much of {@code into} as the file holds from {@code position} (a short file: less). */
    private void read(ByteBuffer into, long position) throws IOException {
        while (into.hasRemaining()) {
            if (entry.channel().read(into, position + into.position()) < 0) return;
        }
    }

    private long readGeneration() throws IOException {
        ByteBuffer raw = ByteBuffer.allocate(Format.LOCK_GENERATION_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        read(raw, Format.LOCK_GENERATION_POSITION);
        return raw.hasRemaining() ? 0 : raw.getLong(0);
    }

    private void write(ByteBuffer data, long position) throws IOException {
        checkHeld();
        while (data.hasRemaining()) entry.channel().write(data, position + data.position());
    }

    private void checkHeld() {
        if (closed) throw new IllegalStateException("the partition lock " + entry.path() + " was released");
        if (!fileLock.isValid()) {  // the channel was closed under us: the lock is gone
            throw new KStreamException(KStreamException.Kind.KStreamError, "the partition lock " + entry.path()
                + " was lost (its channel closed, e.g. by a thread interrupt); nothing more may be written");
        }
    }

    /** The generation stored when the lock was taken (plus this holder's bumps). */
    public long generation() {
        return generation;
    }

    /** Tell the other holders that segment files changed (a roll or a replaced file). */
    public void bumpGeneration() throws IOException {
        ByteBuffer raw = ByteBuffer.allocate(Format.LOCK_GENERATION_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        raw.putLong(0, generation + 1);
        write(raw, Format.LOCK_GENERATION_POSITION);
        generation++;
    }

    /** Publish the high watermark: the value and its bitwise complement, in one positional write. */
    public void writeHighWatermark(long offset) throws IOException {
        if (offset < 0) throw new IllegalArgumentException("a high watermark is >= 0, not " + offset);
        ByteBuffer raw = ByteBuffer.allocate(Format.LOCK_HIGH_WATERMARK_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        raw.putLong(0, offset).putLong(8, ~offset);
        write(raw, Format.LOCK_HIGH_WATERMARK_POSITION);
    }

    /** Fence every holder of this lock for good (the topic was deleted). */
    public void markDeleted() throws IOException {
        write(ByteBuffer.wrap(Format.LOCK_DELETED_MARK.getBytes(StandardCharsets.US_ASCII)),
            Format.LOCK_DELETED_POSITION);
    }

    /** Release the file lock, then this JVM's, then the channel (closed if nobody else uses it). */
    @Override
    public void close() throws IOException {
        if (closed) return;
        closed = true;
        try {
            if (fileLock.isValid()) fileLock.release();
        } finally {
            entry.threadLock().unlock();
            entry.release();
        }
    }
}

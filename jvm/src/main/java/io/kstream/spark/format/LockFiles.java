package io.kstream.spark.format;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One open channel per lock file for the whole JVM, shared by every thread that locks the file
 * or reads its state.
 *
 * <p>Why: Java's {@code FileChannel.lock} takes a POSIX record lock, which belongs to the
 * process, and closing <em>any</em> descriptor of the file in the process drops it. A reader that
 * opened the lock file for the high watermark and closed it again would silently release a
 * writer's lock held by another thread. So every use of a lock file in this JVM goes through
 * {@link #open}/{@link Entry#release}: the channel is closed only when nobody uses it. The
 * channel is also made uninterruptible when the JDK lets us ({@link Channels}): an interrupted
 * NIO operation closes its channel, and Spark interrupts the threads of cancelled tasks. Thread
 * safe.
 */
public final class LockFiles {
    private static final Map<Path, Entry> OPEN = new HashMap<>();

    private LockFiles() {}

    /** A lock file's shared channel, with the lock that orders this JVM's threads before the file lock. */
    public static final class Entry {
        final Path path;
        final FileChannel channel;
        final boolean writable;
        /** Taken before the file lock: POSIX locks do not exclude threads of one process. */
        final ReentrantLock threadLock = new ReentrantLock(true);
        private int users;

        private Entry(Path path, FileChannel channel, boolean writable) {
            this.path = path;
            this.channel = channel;
            this.writable = writable;
        }

        public FileChannel channel() {
            return channel;
        }

        /** The file, as this JVM keys it (absolute, normalized). */
        public Path path() {
            return path;
        }

        /** This JVM's lock of the file, taken before the file's own lock by each thread. */
        public ReentrantLock threadLock() {
            return threadLock;
        }

        /** Stop using the channel; the last user closes it. */
        public void release() throws IOException {
            synchronized (OPEN) {
                if (--users > 0) return;
                OPEN.remove(path);
            }
            channel.close();
        }
    }

    /**
     * The shared channel of {@code path}, counted as one more user until {@link Entry#release}.
     *
     * @param create a writer creates the file (and its dir); a reader never does, and gets null
     *     when the file does not exist
     */
    public static Entry open(Path path, boolean create) throws IOException {
        Path key = path.toAbsolutePath().normalize();
        synchronized (OPEN) {
            Entry entry = OPEN.get(key);
            if (entry == null || (create && !entry.writable)) {
                if (entry != null) {  // a reader's read-only channel: a writer needs one it can lock
                    throw new IOException("lock file " + key + " is open read-only in this JVM (not writable"
                        + " when it was opened?); a writer needs it read-write: check the file's permissions");
                }
                entry = openNew(key, create);
                if (entry == null) return null;
                OPEN.put(key, entry);
            }
            entry.users++;
            return entry;
        }
    }

    /** How many lock files this JVM has open now (for tests: none may leak). */
    public static int openCount() {
        synchronized (OPEN) {
            return OPEN.size();
        }
    }

    private static Entry openNew(Path key, boolean create) throws IOException {
        FileChannel channel;
        boolean writable = true;
        try {
            if (create) {
                Path dir = key.getParent();
                if (dir != null) Files.createDirectories(dir);
                channel = Channels.open(key, StandardOpenOption.READ, StandardOpenOption.WRITE,
                    StandardOpenOption.CREATE);
            } else if (Files.isWritable(key)) {
                channel = Channels.open(key, StandardOpenOption.READ, StandardOpenOption.WRITE);
            } else {
                channel = Channels.open(key, StandardOpenOption.READ);
                writable = false;
            }
        } catch (NoSuchFileException e) {
            if (create) throw e;
            return null;
        }
        return new Entry(key, channel, writable);
    }
}

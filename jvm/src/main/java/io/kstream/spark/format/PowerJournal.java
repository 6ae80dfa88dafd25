package io.kstream.spark.format;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The Java side of the chaos harness's power-cut journal (test-only; off unless
 * {@code KSTREAM_POWER_JOURNAL} names a directory): before every fsync the Java writer makes
 * ({@link Fsync}), the file's content or the directory's listing is recorded, byte for byte as
 * Python's {@code kstream.log.storage.faults.record} records it: {@code files/<key>} holds the
 * file's content at that moment, {@code dirs/<key>} the JSON {@code {"path": ..., "entries":
 * {name: [key, is_dir]}}} in directory order; each written as {@code <target>.<pid>.tmp}, then
 * renamed, under the journal's {@code .lock} (a POSIX record lock, which Python's OFD lock
 * excludes, plus a JVM-wide mutex: POSIX locks do not exclude threads of one process).
 * tests/chaos/power_cut.py builds the tree a power loss could leave from it.
 *
 * <p>The key is Python's {@code inode_key}: {@code dev-ino-generation}. Java reads dev and ino
 * ({@code unix:} attributes) but cannot make the {@code FS_IOC_GETVERSION} ioctl that gives the
 * inode generation; {@code lsattr -v} (e2fsprogs) makes it, so the recorder runs it, once per
 * record (a directory's entries in one call). The cost: a process spawn per recorded fsync
 * (about 2-5 ms here), acceptable for chaos rounds and nothing outside them. Where lsattr or the
 * file system cannot say, the generation is 0, as Python's fallback. lsattr opens by path (it
 * refuses /proc/self/fd links), so a file's key is taken from the fd (its inode) and the
 * generation from its path only when the path still names that inode; when it does not (the file
 * was renamed over or unlinked before this fsync) the record is skipped and said on stderr: the
 * cut then treats that fsync as not done, a harsher cut, never a milder one.
 */
public final class PowerJournal {
    public static final String ENV = "KSTREAM_POWER_JOURNAL";
    private static final String JOURNAL = System.getenv(ENV);
    private static final ReentrantLock IN_JVM = new ReentrantLock();
    private static final long LSATTR_TIMEOUT_S = 30;
    private static final long PID = ProcessHandle.current().pid();

    private PowerJournal() {}

    /** Whether fsyncs are recorded (KSTREAM_POWER_JOURNAL set). */
    public static boolean enabled() {
        return JOURNAL != null && !JOURNAL.isEmpty();
    }

    /** Record the content of the file open as {@code channel} (at {@code path}) as durable now. */
    public static void recordFile(FileChannel channel, Path path) throws IOException {
        Path proc = Path.of("/proc/self/fd/" + fd(channel));
        long dev = ((Number) Files.getAttribute(proc, "unix:dev")).longValue();
        long ino = ((Number) Files.getAttribute(proc, "unix:ino")).longValue();
        if (!sameInode(path, dev, ino)) {
            System.err.println("kstream: power journal: " + path + " no longer names the inode fsynced; not recorded");
            return;
        }
        Long generation = generations(List.of(path)).get(path.toString());
        String key = dev + "-" + ino + "-" + (generation == null ? 0 : generation);
        write(key, false, () -> Files.readAllBytes(proc));
    }

    /** Record the entries of {@code directory} (name -> inode key, is a directory) as durable now. */
    public static void recordDirectory(Path directory) throws IOException {
        Path real = directory.toRealPath();
        long dev = ((Number) Files.getAttribute(real, "unix:dev")).longValue();
        long ino = ((Number) Files.getAttribute(real, "unix:ino")).longValue();
        Long own = generations(List.of(real)).get(real.toString());
        String key = dev + "-" + ino + "-" + (own == null ? 0 : own);
        write(key, true, () -> listing(real));
    }

    private interface Content {
        byte[] read() throws IOException;
    }

    private static void write(String key, boolean isDir, Content content) throws IOException {
        Path journal = Path.of(JOURNAL);
        Path target = journal.resolve(isDir ? "dirs" : "files").resolve(key);
        IN_JVM.lock();
        try (FileChannel lock = FileChannel.open(journal.resolve(".lock"), StandardOpenOption.CREATE,
                StandardOpenOption.READ, StandardOpenOption.WRITE);
             FileLock held = lock.lock()) {
            // Read under the lock, so records of one inode land in the order of the reads (as Python).
            byte[] data = content.read();
            Path tmp = Path.of(target + "." + PID + ".tmp");
            Files.write(tmp, data);
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            IN_JVM.unlock();
        }
    }

    private static boolean sameInode(Path path, long dev, long ino) {
        try {
            return ((Number) Files.getAttribute(path, "unix:dev", LinkOption.NOFOLLOW_LINKS)).longValue() == dev
                && ((Number) Files.getAttribute(path, "unix:ino", LinkOption.NOFOLLOW_LINKS)).longValue() == ino;
        } catch (IOException e) {
            return false;
        }
    }

    /** Python's {@code _listing}: entries in directory order; symlinks and entries gone meanwhile left out. */
    static byte[] listing(Path directory) throws IOException {
        List<Path> names = new ArrayList<>();
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(directory)) {
            for (Path entry : stream) names.add(entry);
        }
        Map<String, long[]> inodes = new HashMap<>();
        List<Path> files = new ArrayList<>();
        for (Path entry : names) {
            long[] inode = inode(entry);
            if (inode != null) {
                inodes.put(entry.toString(), inode);
                files.add(entry);
            }
        }
        Map<String, Long> generations = generations(files);
        Map<String, String> entries = new LinkedHashMap<>();
        for (Path entry : files) {
            long[] before = inodes.get(entry.toString());
            long[] after = inode(entry);
            // replaced while lsattr ran: its generation may be the new inode's; gone: left out, as Python
            if (after == null || after[0] != before[0] || after[1] != before[1]) continue;
            Long generation = generations.get(entry.toString());
            String key = before[0] + "-" + before[1] + "-" + (generation == null ? 0 : generation);
            entries.put(entry.getFileName().toString(), "[" + json(key) + ", " + (before[2] == 1 ? "true" : "false") + "]");
        }
        StringBuilder out = new StringBuilder("{\"path\": ").append(json(directory.toString())).append(", \"entries\": {");
        boolean first = true;
        for (Map.Entry<String, String> e : entries.entrySet()) {
            if (!first) out.append(", ");
            first = false;
            out.append(json(e.getKey())).append(": ").append(e.getValue());
        }
        return out.append("}}").toString().getBytes(StandardCharsets.US_ASCII);
    }

    /** (dev, ino, is a directory) of an entry, not following a symlink; null for a symlink or a gone entry. */
    private static long[] inode(Path entry) {
        try {
            if (Files.isSymbolicLink(entry)) return null;
            long dev = ((Number) Files.getAttribute(entry, "unix:dev", LinkOption.NOFOLLOW_LINKS)).longValue();
            long ino = ((Number) Files.getAttribute(entry, "unix:ino", LinkOption.NOFOLLOW_LINKS)).longValue();
            return new long[] {dev, ino, Files.isDirectory(entry, LinkOption.NOFOLLOW_LINKS) ? 1 : 0};
        } catch (IOException e) {
            return null;
        }
    }

    /** The inode generation of each path, by {@code lsattr -v -d} (one spawn); absent where it cannot say. */
    static Map<String, Long> generations(List<Path> paths) throws IOException {
        Map<String, Long> out = new HashMap<>();
        if (paths.isEmpty()) return out;
        List<String> command = new ArrayList<>(List.of("lsattr", "-v", "-d"));
        for (Path p : paths) command.add(p.toString());
        Process process;
        try {
            process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        } catch (IOException e) {
            return out;  // no lsattr: generation 0, as Python's fallback when the ioctl fails
        }
        byte[] stdout = process.getInputStream().readAllBytes();
        try {
            if (!process.waitFor(LSATTR_TIMEOUT_S, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IOException("lsattr did not finish in " + LSATTR_TIMEOUT_S + " s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted waiting for lsattr", e);
        }
        for (String line : new String(stdout, StandardCharsets.UTF_8).split("\n")) {
            String[] parts = line.trim().split("\\s+", 3);
            if (parts.length != 3) continue;
            try {
                out.put(parts[2], Long.parseUnsignedLong(parts[0]) & 0xFFFFFFFFL);
            } catch (NumberFormatException e) {
                // not a version line
            }
        }
        return out;
    }

    /** Python's json.dumps of a string (ensure_ascii). */
    static String json(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                case '\b': b.append("\\b"); break;
                case '\f': b.append("\\f"); break;
                default:
                    if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
            }
        }
        return b.append('"').toString();
    }

    // -- the fd of a channel (sun.nio.ch, which Spark's launcher and the harness open) ---------

    private static final Field CHANNEL_FD = field("sun.nio.ch.FileChannelImpl", "fd");
    private static final Method FD_VAL = method("sun.nio.ch.IOUtil", "fdVal", java.io.FileDescriptor.class);

    private static int fd(FileChannel channel) throws IOException {
        if (CHANNEL_FD == null || FD_VAL == null) {
            throw new IOException("the power journal needs --add-opens=java.base/sun.nio.ch=ALL-UNNAMED (the fd"
                + " of a channel names the inode fsynced)");
        }
        try {
            return (int) FD_VAL.invoke(null, CHANNEL_FD.get(channel));
        } catch (ReflectiveOperationException e) {
            throw new IOException("cannot read the fd of " + channel, e);
        }
    }

    private static Field field(String cls, String name) {
        try {
            Field f = Class.forName(cls).getDeclaredField(name);
            f.setAccessible(true);
            return f;
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    private static Method method(String cls, String name, Class<?>... types) {
        try {
            Method m = Class.forName(cls).getDeclaredMethod(name, types);
            m.setAccessible(true);
            return m;
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }
}

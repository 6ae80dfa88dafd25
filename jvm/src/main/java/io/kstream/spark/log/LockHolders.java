package io.kstream.spark.log;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Who holds a lock file, for error messages: the lines of {@code /proc/locks} (Linux) on the
 * file's inode. A Python writer shows as a FLOCK with its pid and an OFDLCK (the kernel gives no
 * pid for it), a JVM writer as a POSIX lock with its pid; each pid is named with the start of its
 * command line. A diagnostic only: the answer may be stale at once.
 */
public final class LockHolders {
    private static final Path PROC_LOCKS = Path.of("/proc/locks");
    private static final int COMMAND_CHARS = 120;
    private static final int MOST_HOLDERS = 8;

    private LockHolders() {}

    /** One line naming the holders of {@code path}, or why they are unknown. */
    public static String describe(Path path) {
        try {
            long dev = (Long) Files.getAttribute(path, "unix:dev");
            long inode = (Long) Files.getAttribute(path, "unix:ino");
            List<String> holders = holders(Files.readAllLines(PROC_LOCKS, StandardCharsets.US_ASCII), dev, inode);
            return holders.isEmpty() ? "none now (it was released meanwhile)" : String.join("; ", holders);
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return "unknown (" + PROC_LOCKS + " or the file's inode unreadable: " + e + ")";
        }
    }

    /** The holders among {@code /proc/locks} lines (waiters, the "->" lines, left out). */
    static List<String> holders(List<String> procLocks, long dev, long inode) {
        // /proc/locks names the file as MAJOR:MINOR:INODE, major and minor in hex.
        String file = String.format("%02x:%02x:%d", major(dev), minor(dev), inode);
        List<String> out = new ArrayList<>();
        for (String line : procLocks) {
            String[] f = line.trim().split("\\s+");
            // "1: POSIX  ADVISORY  WRITE 9778 fe:00:9986095 0 EOF"
            if (f.length < 6 || f[1].equals("->") || !f[5].equals(file)) continue;
            if (out.size() == MOST_HOLDERS) {
                out.add("...");
                break;
            }
            String kind = f[1];
            String pid = f[4];
            out.add(pid.equals("-1") ? kind + " (no pid: an OFD lock, a Python writer's)"
                : kind + " by pid " + pid + " (" + command(pid) + ")");
        }
        return out;
    }

    private static String command(String pid) {
        try {
            byte[] raw = Files.readAllBytes(Path.of("/proc", pid, "cmdline"));
            String text = new String(raw, StandardCharsets.UTF_8).replace('\0', ' ').trim();
            return text.length() > COMMAND_CHARS ? text.substring(0, COMMAND_CHARS) + "..." : text;
        } catch (IOException e) {
            return "command line unreadable";
        }
    }

    /** glibc's gnu_dev_major / gnu_dev_minor of a dev_t. */
    static long major(long dev) {
        return ((dev >>> 8) & 0xfff) | ((dev >>> 32) & 0xfffff000L);
    }

    static long minor(long dev) {
        return (dev & 0xff) | ((dev >>> 12) & 0xffffff00L);
    }
}

package io.kstream.spark.log;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A child JVM for tests/log/test_lock_kinds.py: takes a lock file the way Java does
 * ({@code FileChannel.lock()}, a POSIX record lock), so Python's lock can be shown to exclude it
 * and to be excluded by it. Run in source-file mode ({@code java LockProbe.java ...}), no build.
 *
 * <pre>
 *   hold PATH   lock, print "held PID", keep the lock until stdin closes, then release
 *   try PATH    print "acquired" (and release) or "busy", without waiting
 * </pre>
 */
public final class LockProbe {
    private LockProbe() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 2) throw new IllegalArgumentException("usage: LockProbe hold|try PATH");
        Path path = Path.of(args[1]);
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE,
                StandardOpenOption.CREATE)) {
            if (args[0].equals("hold")) {
                FileLock lock = channel.lock();
                System.out.println("held " + ProcessHandle.current().pid());
                System.out.flush();
                while (System.in.read() >= 0) { /* until the test closes our stdin */ }
                lock.release();
            } else if (args[0].equals("try")) {
                FileLock lock = channel.tryLock();
                System.out.println(lock == null ? "busy" : "acquired");
                if (lock != null) lock.release();
            } else {
                throw new IllegalArgumentException("unknown mode " + args[0] + "; give hold or try");
            }
        }
    }
}

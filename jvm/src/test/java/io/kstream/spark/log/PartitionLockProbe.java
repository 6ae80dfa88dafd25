package io.kstream.spark.log;

import io.kstream.spark.error.KStreamException;
import java.io.IOException;

/**
 * A child JVM for tests/log/test_lock_kinds.py and {@link PartitionLockTest}: takes a partition
 * lock through {@link PartitionLock} (the Java writer's way). Run in source-file mode with the
 * kstream jar on the class path ({@code java -cp kstream-spark.jar PartitionLockProbe.java ...}).
 *
 * <pre>
 *   hold PATH         take it, print "held PID", keep it until stdin closes, then release
 *   try PATH TIMEOUT  print "acquired" (and release) or "busy: " and the error, waiting TIMEOUT ms
 * </pre>
 */
public final class PartitionLockProbe {
    private PartitionLockProbe() {}

    public static void main(String[] args) throws IOException {
        if (args.length < 2) throw new IllegalArgumentException("usage: PartitionLockProbe hold|try PATH [TIMEOUT_MS]");
        if (args[0].equals("hold")) {
            try (PartitionLock lock = PartitionLock.acquire(args[1], 60_000)) {
                System.out.println("held " + ProcessHandle.current().pid());
                System.out.flush();
                while (System.in.read() >= 0) { /* until the test closes our stdin */ }
            }
        } else if (args[0].equals("try")) {
            try (PartitionLock lock = PartitionLock.acquire(args[1], Long.parseLong(args[2]))) {
                System.out.println("acquired");
            } catch (KStreamException e) {
                System.out.println("busy: " + e.getMessage());
            }
        } else {
            throw new IllegalArgumentException("unknown mode " + args[0] + "; give hold or try");
        }
    }
}

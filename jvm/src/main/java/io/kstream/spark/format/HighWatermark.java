package io.kstream.spark.format;

import io.kstream.spark.error.KStreamException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A partition's high watermark as a reader that takes no lock sees it: the value published in
 * the lock file (i64 and its bitwise complement, re-read when torn), checked against the
 * in-sync replicas' logs with Python's rule (Partition.high_watermark /
 * _rebuilt_high_watermark): a stored value that is missing, below the least durable log end
 * of the ISR or past the leader's log end is replaced by that least durable end. The lock file
 * is never fsynced by design; this rule is what makes reading it safe. Before it uses the
 * recovery points it fdatasyncs them (read-only channels) and reads them again, as Python does.
 * Writes nothing.
 */
public final class HighWatermark {
    private static final int TORN_READS = 100;
    private static final int SAME_BAD_READS = 3;

    private HighWatermark() {}

    /** The published value, or null when none is stored (never written, lost, or zeroed). */
    public static Long stored(String lockPath) throws IOException {
        // Through the JVM's one channel of the lock file (LockFiles): closing a channel of our own
        // would release a Java writer's POSIX lock on it, held by another thread of this JVM.
        LockFiles.Entry entry = LockFiles.open(Path.of(lockPath), false);
        if (entry == null) return null;
        try {
            FileChannel channel = entry.channel();
            ByteBuffer last = null;
            int sameBad = 0;
            for (int i = 0; i < TORN_READS; i++) {
                ByteBuffer raw = ByteBuffer.allocate(Format.LOCK_HIGH_WATERMARK_SIZE).order(ByteOrder.LITTLE_ENDIAN);
                while (raw.hasRemaining()) {
                    if (channel.read(raw, Format.LOCK_HIGH_WATERMARK_POSITION + raw.position()) < 0) return null;
                }
                long value = raw.getLong(0);
                long check = raw.getLong(8);
                if (check == ~value && value >= 0) return value;
                raw.rewind();
                sameBad = raw.equals(last) ? sameBad + 1 : 1;
                last = raw;
                if (sameBad >= SAME_BAD_READS) return null;
            }
            throw new IOException("high watermark in " + lockPath + " keeps changing under a reader");
        } finally {
            entry.release();
        }
    }

    /**
     * The high watermark readers may read to (0 when nothing is written).
     *
     * @param replicaDirs the partition's replica dirs by log dir id (absent: offline log dir)
     */
    public static long of(String lockPath, Map<Integer, String> replicaDirs, List<Integer> isr, int leader)
            throws IOException {
        return of(lockPath, replicaDirs, isr, leader, false);
    }

    private static long of(String lockPath, Map<Integer, String> replicaDirs, List<Integer> isr, int leader,
                           boolean synced) throws IOException {
        Long stored = stored(lockPath);
        Map<Integer, Long> ends = new HashMap<>();
        Map<Integer, Long> durable = new HashMap<>();
        for (int replica : isr) {
            String dir = replicaDirs.get(replica);
            if (dir == null || !new java.io.File(dir).isDirectory()) continue; // a failed disk holds nothing
            RecoveryPoint point = RecoveryPoint.read(dir);
            Long fsynced = point.state == RecoveryPoint.State.PRESENT ? point.nextOffset : null;
            long end;
            try (LogReader reader = new LogReader(dir, false)) {
                end = reader.logEndOffset();
            } catch (KStreamException e) {
                if (fsynced == null) continue;
                end = fsynced; // a bad frame in the tail, past what was fsynced
            }
            ends.put(replica, end);
            if (point.state == RecoveryPoint.State.MISSING) durable.put(replica, 0L);
            else durable.put(replica, fsynced != null ? Math.min(fsynced, end) : end);
        }
        Long leaderEnd = ends.get(leader);
        if (leaderEnd == null) return stored == null ? 0 : stored;
        long floor = durable.values().stream().mapToLong(Long::longValue).min().orElse(0);
        if (stored != null && floor <= stored && stored <= leaderEnd) return stored;
        if (!synced) {
            // As Python's rule: make the recovery points durable before using them (a writer killed
            // between overwriting a slot and fdatasyncing it leaves a point only the page cache holds).
            if (syncRecoveryPoints(replicaDirs, durable.keySet())) return of(lockPath, replicaDirs, isr, leader, true);
            if (stored != null && stored <= leaderEnd) return stored;
        }
        return floor != 0 || stored != null ? floor : 0;
    }

    /** fdatasync the replicas' recovery-point files through read-only channels; false if one failed. */
    private static boolean syncRecoveryPoints(Map<Integer, String> replicaDirs, Iterable<Integer> replicas) {
        for (int replica : replicas) {
            Path path = Path.of(replicaDirs.get(replica), Format.RECOVERY_POINT_FILE);
            try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
                Fsync.force(channel, path, false);
            } catch (NoSuchFileException e) {
                // nothing flushed yet: nothing to make durable
            } catch (IOException e) {
                return false;
            }
        }
        return true;
    }
}

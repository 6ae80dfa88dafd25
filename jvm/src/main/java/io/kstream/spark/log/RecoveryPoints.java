package io.kstream.spark.log;

import io.kstream.spark.format.Channels;
import io.kstream.spark.format.Format;
import io.kstream.spark.format.Fsync;
import io.kstream.spark.format.RecoveryPoint;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * The recovery point file as the Java writer writes it: Python's RecoveryPointFile
 * (src/kstream/log/storage/recovery_point.py; layout in docs/FORMAT.md "The recovery point").
 * Two checksummed slots; a new point goes into the older slot in place and is fdatasynced, so a
 * torn write leaves the previous point; a missing or damaged file is created whole (.tmp, fsync,
 * rename, fsync the directory). It only moves forward. Caller holds the partition lock.
 */
final class RecoveryPoints {
    private RecoveryPoints() {}

    static byte[] slot(long sequence, long base, long position, long next) {
        ByteBuffer b = ByteBuffer.allocate(Format.RECOVERY_POINT_SLOT_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        b.putShort(Format.RP_POS_MAGIC, (short) Format.RECOVERY_POINT_MAGIC);
        b.put(Format.RP_POS_VERSION, (byte) Format.RECOVERY_POINT_VERSION);
        b.putLong(Format.RP_POS_SEQUENCE, sequence);
        b.putLong(Format.RP_POS_SEGMENT_BASE, base);
        b.putLong(Format.RP_POS_POSITION, position);
        b.putLong(Format.RP_POS_NEXT_OFFSET, next);
        b.putInt(Format.RP_POS_CRC, Format.crc32c(b, 0, Format.RP_POS_CRC));
        return b.array();
    }

    /**
     * Make (base, position, next) the durable recovery point. When the file is there already at or
     * past it, nothing is written but the file is still fdatasynced: the point found may be another
     * writer's, written and not yet synced (a Python writer stages it under the partition lock and
     * syncs it outside; either may be killed in between), and a power cut would then leave a point
     * below what this writer is about to acknowledge (docs/FORMAT.md, "The recovery point").
     */
    static void advance(String dir, long base, long position, long next) throws IOException {
        Path path = Path.of(dir, Format.RECOVERY_POINT_FILE);
        RecoveryPoint current = RecoveryPoint.read(dir);
        if (current.state == RecoveryPoint.State.PRESENT) {
            if (current.segmentBase > base || (current.segmentBase == base && current.position >= position)) {
                try (FileChannel c = Channels.open(path, StandardOpenOption.READ)) {
                    Fsync.force(c, path, false);
                }
                return;
            }
            long sequence = current.sequence + 1;
            try (FileChannel c = Channels.open(path, StandardOpenOption.WRITE)) {
                ByteBuffer raw = ByteBuffer.wrap(slot(sequence, base, position, next));
                long at = Long.remainderUnsigned(sequence, 2) * Format.RECOVERY_POINT_SLOT_BYTES;
                while (raw.hasRemaining()) c.write(raw, at + raw.position());
                Fsync.force(c, path, false);
            }
            return;
        }
        Path tmp = Path.of(path + PartitionAppender.TMP_SUFFIX);
        byte[] file = new byte[Format.RECOVERY_POINT_FILE_BYTES];
        System.arraycopy(slot(0, base, position, next), 0, file, 0, Format.RECOVERY_POINT_SLOT_SIZE);
        try (FileChannel c = Channels.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer raw = ByteBuffer.wrap(file);
            while (raw.hasRemaining()) c.write(raw);
            Fsync.force(c, tmp, true);
        }
        Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE);
        Fsync.directory(dir);
    }
}

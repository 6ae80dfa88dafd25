package io.kstream.spark.format;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * A replica's recovery point (docs/FORMAT.md "The recovery point"): how far its log is known
 * fsynced. Two checksummed slots; the valid one with the higher sequence wins. {@link #read}
 * tells a missing file (nothing flushed yet) from an unreadable one (damaged).
 */
public final class RecoveryPoint {
    public enum State { PRESENT, MISSING, UNREADABLE }

    public final State state;
    /** The slot's sequence (the higher valid slot wins; a writer puts the next point in the other). */
    public final long sequence;
    public final long segmentBase;
    public final long position;
    public final long nextOffset;

    private RecoveryPoint(State state, long sequence, long segmentBase, long position, long nextOffset) {
        this.state = state;
        this.sequence = sequence;
        this.segmentBase = segmentBase;
        this.position = position;
        this.nextOffset = nextOffset;
    }

    public static RecoveryPoint read(String replicaDir) throws IOException {
        byte[] raw;
        try {
            raw = Files.readAllBytes(Path.of(replicaDir, Format.RECOVERY_POINT_FILE));
        } catch (NoSuchFileException e) {
            return new RecoveryPoint(State.MISSING, -1, 0, 0, 0);
        }
        RecoveryPoint best = new RecoveryPoint(State.UNREADABLE, -1, 0, 0, 0);
        if (raw.length != Format.RECOVERY_POINT_FILE_BYTES) return best;
        ByteBuffer b = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN);
        for (int slot = 0; slot < Format.RECOVERY_POINT_FILE_BYTES; slot += Format.RECOVERY_POINT_SLOT_BYTES) {
            if (Short.toUnsignedInt(b.getShort(slot + Format.RP_POS_MAGIC)) != Format.RECOVERY_POINT_MAGIC
                    || Byte.toUnsignedInt(b.get(slot + Format.RP_POS_VERSION)) != Format.RECOVERY_POINT_VERSION
                    || Format.crc32c(b, slot, slot + Format.RP_POS_CRC) != b.getInt(slot + Format.RP_POS_CRC)) {
                continue;
            }
            long sequence = b.getLong(slot + Format.RP_POS_SEQUENCE);
            long base = b.getLong(slot + Format.RP_POS_SEGMENT_BASE);
            long position = b.getLong(slot + Format.RP_POS_POSITION);
            long next = b.getLong(slot + Format.RP_POS_NEXT_OFFSET);
            if (!(0 <= base && base <= next && position >= 0)) continue;
            if (best.state != State.PRESENT || Long.compareUnsigned(sequence, best.sequence) > 0) {
                best = new RecoveryPoint(State.PRESENT, sequence, base, position, next);
            }
        }
        return best;
    }
}

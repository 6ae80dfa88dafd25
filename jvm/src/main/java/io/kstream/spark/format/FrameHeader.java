package io.kstream.spark.format;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The decoded fixed header of one frame (layout in {@link Format}), and the check that makes
 * it valid: magic, a version this reader knows (1, or 2 for the log cleaner's frames), header
 * CRC-32C, no attribute bit its version does not define, a sane length and record count, and a
 * schema message inside the payload. A version 2 frame's {@code baseOffset} and
 * {@code recordCount} are its span: {@link #nextOffset} holds for every frame. Immutable;
 * decoding does not check (see {@link #problem}).
 */
public final class FrameHeader {
    public final int length;
    public final int headerCrc;
    public final int magic;
    public final int version;
    public final int attributes;
    public final long baseOffset;
    public final int recordCount;
    public final int leaderEpoch;
    public final long producerId;
    public final long minTimestamp;
    public final long maxTimestamp;
    public final long schemaLength;
    public final int payloadCrc;

    private FrameHeader(ByteBuffer b, int at) {
        length = b.getInt(at + Format.POS_LENGTH);
        headerCrc = b.getInt(at + Format.POS_HEADER_CRC);
        magic = Short.toUnsignedInt(b.getShort(at + Format.POS_MAGIC));
        version = Byte.toUnsignedInt(b.get(at + Format.POS_VERSION));
        attributes = Byte.toUnsignedInt(b.get(at + Format.POS_ATTRIBUTES));
        baseOffset = b.getLong(at + Format.POS_BASE_OFFSET);
        recordCount = b.getInt(at + Format.POS_RECORD_COUNT);
        leaderEpoch = b.getInt(at + Format.POS_LEADER_EPOCH);
        producerId = b.getLong(at + Format.POS_PRODUCER_ID);
        minTimestamp = b.getLong(at + Format.POS_MIN_TIMESTAMP);
        maxTimestamp = b.getLong(at + Format.POS_MAX_TIMESTAMP);
        schemaLength = Integer.toUnsignedLong(b.getInt(at + Format.POS_SCHEMA_LENGTH));
        payloadCrc = b.getInt(at + Format.POS_PAYLOAD_CRC);
    }

    /** Decode the header at absolute position {@code at} of {@code buffer} (no checks). */
    public static FrameHeader read(ByteBuffer buffer, int at) {
        ByteBuffer b = buffer.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        return new FrameHeader(b, at);
    }

    /** Why the header at {@code at} is not valid, or null when it is. */
    public String problem(ByteBuffer buffer, int at) {
        if (magic != Format.MAGIC) return String.format("bad magic 0x%04x", magic);
        if (version != Format.FORMAT_VERSION && version != Format.SPARSE_FRAME_VERSION) {
            return "unknown frame version " + version + " (this kstream jar reads " + Format.FORMAT_VERSION + ", "
                + Format.SPARSE_FRAME_VERSION + ": a newer kstream wrote it? use its jar)";
        }
        if (Format.crc32c(buffer, at + Format.CRC_START, at + Format.HEADER_SIZE) != headerCrc) {
            return "header checksum mismatch";
        }
        int known = version == Format.SPARSE_FRAME_VERSION ? Format.KNOWN_ATTRIBUTES_V2 : Format.KNOWN_ATTRIBUTES_V1;
        int unknown = attributes & ~known;
        if (unknown != 0) {
            return String.format("unknown attribute bits 0x%02x for frame version %d (a newer kstream wrote it?); "
                + "not reading it", unknown, version);
        }
        if ((version == Format.SPARSE_FRAME_VERSION) != isSparse()) {
            return String.format("frame version %d with attributes 0x%02x", version, attributes);
        }
        if (length < Format.HEADER_SIZE - Format.LENGTH_SIZE || recordCount < 1) {
            return "bad length " + length + " or record count " + recordCount;
        }
        if (schemaLength > payloadSize()) return "schema length " + schemaLength + " beyond payload " + payloadSize();
        return null;
    }

    /** Bytes of the whole frame on disk, header included. */
    public long frameSize() {
        return Format.LENGTH_SIZE + Integer.toUnsignedLong(length);
    }

    public long payloadSize() {
        return frameSize() - Format.HEADER_SIZE;
    }

    public long nextOffset() {
        return baseOffset + recordCount;
    }

    public boolean isControl() {
        return (attributes & Format.CONTROL) != 0;
    }

    public boolean isTransactional() {
        return (attributes & Format.TRANSACTIONAL) != 0;
    }

    /** Rewritten by the log cleaner (version 2): rows carry offset deltas, some offsets have no record. */
    public boolean isSparse() {
        return (attributes & Format.SPARSE) != 0;
    }

    /** A cleaner's filler: holds the offsets of a frame it removed whole, and no record (no payload). */
    public boolean isFiller() {
        return isSparse() && length == Format.HEADER_SIZE - Format.LENGTH_SIZE;
    }

    /** Whether decoding the payload can give records (not a transaction marker, not a filler). */
    public boolean holdsRecords() {
        return !isControl() && !isFiller();
    }

    public boolean logAppendTime() {
        return (attributes & Format.LOG_APPEND_TIME) != 0;
    }
}

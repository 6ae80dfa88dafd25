package io.kstream.spark.format;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The decoded fixed header of one frame (layout in {@link Format}), and the check that makes
 * it valid: magic, version, header CRC-32C, a sane length and record count, and a schema
 * message inside the payload. Immutable; decoding does not check (see {@link #problem}).
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
        if (version != Format.FORMAT_VERSION) return "unknown format version " + version;
        if (Format.crc32c(buffer, at + Format.CRC_START, at + Format.HEADER_SIZE) != headerCrc) {
            return "header checksum mismatch";
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

    public boolean logAppendTime() {
        return (attributes & Format.LOG_APPEND_TIME) != 0;
    }
}

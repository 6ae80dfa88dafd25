package io.kstream.spark.format;

import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * The on-disk format, version 1 (frames of version 1 and 2): every constant, byte layout and file name the JVM reader
 * uses, mirroring {@code src/kstream/log/storage/format.py} (the one Python owner) and docs/FORMAT.md.
 * Nothing else in the JVM code spells a position, size, magic number or suffix. All integers
 * on disk are little-endian. If format.py changes a layout, this class changes with it.
 */
public final class Format {
    private Format() {}

    /** Of every frame but the log cleaner's, and of the cluster. */
    public static final int FORMAT_VERSION = 1;
    /** A frame the log cleaner rewrote: attribute SPARSE set (docs/FORMAT.md, "Cleaned frames"). */
    public static final int SPARSE_FRAME_VERSION = 2;
    public static final int MAGIC = 0x4B53; // "KS"

    // -- frame header (68 bytes): field positions from the frame's first byte --
    public static final int HEADER_SIZE = 68;
    public static final int LENGTH_SIZE = 4;
    /** header_crc covers header bytes [CRC_START, HEADER_SIZE), which include payload_crc. */
    public static final int CRC_START = 8;
    public static final int POS_LENGTH = 0;
    public static final int POS_HEADER_CRC = 4;
    public static final int POS_MAGIC = 8;
    public static final int POS_VERSION = 10;
    public static final int POS_ATTRIBUTES = 11;
    public static final int POS_BASE_OFFSET = 12;
    public static final int POS_RECORD_COUNT = 20;
    public static final int POS_LEADER_EPOCH = 24;
    public static final int POS_PRODUCER_ID = 28;
    public static final int POS_PRODUCER_EPOCH = 36;
    public static final int POS_BASE_SEQUENCE = 40;
    public static final int POS_MIN_TIMESTAMP = 44;
    public static final int POS_MAX_TIMESTAMP = 52;
    public static final int POS_SCHEMA_LENGTH = 60;
    public static final int POS_PAYLOAD_CRC = 64;

    // -- attributes --
    public static final int CODEC_MASK = 0x07;
    public static final int CODEC_NONE = 0;
    public static final int CODEC_LZ4 = 1;
    public static final int CODEC_ZSTD = 2;
    public static final int LOG_APPEND_TIME = 0x08;
    public static final int TRANSACTIONAL = 0x10;
    public static final int CONTROL = 0x20;
    /** Frame version 2 only: the cleaner removed records; rows carry their offsets, some offsets have none. */
    public static final int SPARSE = 0x40;
    /** The attribute bits frame version 1 defines; a frame with any other bit set is refused. */
    public static final int KNOWN_ATTRIBUTES_V1 = 0x3F;
    /** The attribute bits frame version 2 defines. */
    public static final int KNOWN_ATTRIBUTES_V2 = 0x7F;
    /** A sparse frame's payload column (uint32, not null): each row's offset minus the frame's base offset. */
    public static final String OFFSET_DELTA_COLUMN = "__kstream_offset_delta";
    public static final long NO_PRODUCER_ID = -1;

    // -- sparse indexes --
    /** .index entry: (relative offset u32, position u32). */
    public static final int OFFSET_INDEX_ENTRY_SIZE = 8;
    /** .timeindex entry: (timestamp i64, relative offset u32). */
    public static final int TIME_INDEX_ENTRY_SIZE = 12;

    // -- file and directory names (base offsets zero-padded to 20 digits) --
    public static final String LOG_SUFFIX = ".log";
    public static final String OFFSET_INDEX_SUFFIX = ".index";
    public static final String TIME_INDEX_SUFFIX = ".timeindex";
    public static final String TXN_INDEX_SUFFIX = ".txnindex";
    public static final String RECOVERY_POINT_FILE = "recovery-point";
    /** Python's format.CLEANER_CHECKPOINT_FILE: the offset the last clean ended at, as ASCII text. */
    public static final String CLEANER_CHECKPOINT_FILE = "cleaner-offset-checkpoint";
    public static final String LOCKS_DIR = "locks";
    public static final String LOCK_SUFFIX = ".lock";
    public static final String METADATA_SNAPSHOT = "metadata-snapshot.json";
    public static final int SNAPSHOT_FORMAT_VERSION = 1;
    public static final int LOCK_TOPIC_ID_CHARS = 12;

    // -- recovery point: two slots of 40 bytes at positions 0 and 512 of a 1024-byte file --
    public static final int RECOVERY_POINT_MAGIC = 0x5052; // "RP"
    public static final int RECOVERY_POINT_VERSION = 1;
    public static final int RECOVERY_POINT_SLOT_SIZE = 40;
    public static final int RECOVERY_POINT_SLOT_BYTES = 512;
    public static final int RECOVERY_POINT_FILE_BYTES = 2 * RECOVERY_POINT_SLOT_BYTES;
    public static final int RP_POS_MAGIC = 0;
    public static final int RP_POS_VERSION = 2;
    public static final int RP_POS_SEQUENCE = 4;
    public static final int RP_POS_SEGMENT_BASE = 12;
    public static final int RP_POS_POSITION = 20;
    public static final int RP_POS_NEXT_OFFSET = 28;
    public static final int RP_POS_CRC = 36;

    // -- lock file: high watermark i64 and its bitwise complement at position 16 --
    public static final int LOCK_HIGH_WATERMARK_POSITION = 16;
    public static final int LOCK_HIGH_WATERMARK_SIZE = 16;
    /** Byte 0 holds this once the topic is deleted: a writer that takes the lock is fenced. */
    public static final String LOCK_DELETED_MARK = "X";
    public static final int LOCK_DELETED_POSITION = 0;
    /** u64, bumped whenever segment files or the partition's metadata change other than by appending. */
    public static final int LOCK_GENERATION_POSITION = 8;
    public static final int LOCK_GENERATION_SIZE = 8;

    // -- .txnindex: 24-byte entries (kind u8, 3 reserved, producer id i64, offset i64, crc u32) --
    public static final int TXN_DATA = 1;
    public static final int TXN_COMMIT = 2;
    public static final int TXN_ABORT = 3;
    public static final int TXN_INDEX_ENTRY_SIZE = 24;
    public static final int TXN_POS_KIND = 0;
    public static final int TXN_POS_PRODUCER_ID = 4;
    public static final int TXN_POS_OFFSET = 12;
    /** The entry's CRC-32C covers bytes [0, TXN_POS_CRC). */
    public static final int TXN_POS_CRC = 20;
    /** A control frame's payload: one row whose value column holds one of these. */
    public static final String CONTROL_COMMIT = "COMMIT";
    public static final String CONTROL_ABORT = "ABORT";

    public static String segmentFileName(long baseOffset, String suffix) {
        return String.format("%020d%s", baseOffset, suffix);
    }

    /** The base offset of a segment log file name, or -1 if it is not one. */
    public static long parseSegmentFileName(String name) {
        if (!name.endsWith(LOG_SUFFIX)) return -1;
        String stem = name.substring(0, name.length() - LOG_SUFFIX.length());
        if (stem.length() != 20) return -1;
        for (int i = 0; i < stem.length(); i++) if (!Character.isDigit(stem.charAt(i))) return -1;
        return Long.parseLong(stem);
    }

    public static String replicaDirName(String topic, int partition) {
        return topic + "-" + partition;
    }

    public static String lockFileName(String topic, int partition, String topicId) {
        String id = topicId.length() > LOCK_TOPIC_ID_CHARS ? topicId.substring(0, LOCK_TOPIC_ID_CHARS) : topicId;
        return topic + "-" + partition + "-" + id + LOCK_SUFFIX;
    }

    /** CRC-32C of buffer bytes [from, to) (absolute positions; the buffer's state is untouched). */
    public static int crc32c(ByteBuffer buffer, int from, int to) {
        CRC32C crc = new CRC32C();
        crc.update(buffer.duplicate().limit(to).position(from));
        return (int) crc.getValue();
    }
}

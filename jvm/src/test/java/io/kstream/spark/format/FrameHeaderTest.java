package io.kstream.spark.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

/**
 * Which frame versions and attribute bits a header may carry (docs/FORMAT.md, "A frame" and
 * "Cleaned frames"): version 1 without the sparse bit, version 2 with it; any other version, or a
 * bit the version does not define, is refused with words that say so (never misread).
 */
class FrameHeaderTest {
    /** A sealed header-only frame (a filler's shape) of this version and attributes. */
    private static ByteBuffer header(int version, int attributes) {
        ByteBuffer b = ByteBuffer.allocate(Format.HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(Format.POS_LENGTH, Format.HEADER_SIZE - Format.LENGTH_SIZE);
        b.putShort(Format.POS_MAGIC, (short) Format.MAGIC);
        b.put(Format.POS_VERSION, (byte) version);
        b.put(Format.POS_ATTRIBUTES, (byte) attributes);
        b.putLong(Format.POS_BASE_OFFSET, 40);
        b.putInt(Format.POS_RECORD_COUNT, 3);
        b.putInt(Format.POS_HEADER_CRC, Format.crc32c(b, Format.CRC_START, Format.HEADER_SIZE));
        return b;
    }

    private static String problem(int version, int attributes) {
        ByteBuffer b = header(version, attributes);
        return FrameHeader.read(b, 0).problem(b, 0);
    }

    @Test
    void versionOneAndTheCleanersVersionTwoAreRead() {
        assertNull(problem(Format.FORMAT_VERSION, Format.TRANSACTIONAL | Format.CODEC_LZ4));
        assertNull(problem(Format.SPARSE_FRAME_VERSION, Format.SPARSE));
        assertNull(problem(Format.SPARSE_FRAME_VERSION, Format.SPARSE | Format.TRANSACTIONAL | Format.CODEC_ZSTD));
        ByteBuffer filler = header(Format.SPARSE_FRAME_VERSION, Format.SPARSE);
        FrameHeader h = FrameHeader.read(filler, 0);
        assertTrue(h.isFiller());
        assertFalse(h.holdsRecords());
        assertEquals(43, h.nextOffset()); // a filler holds its span
        assertFalse(FrameHeader.read(header(Format.FORMAT_VERSION, 0), 0).isFiller());
    }

    @Test
    void unknownVersionsAndAttributeBitsAreRefused() {
        assertTrue(problem(3, 0).startsWith("unknown frame version 3"), problem(3, 0));
        assertTrue(problem(0, 0).startsWith("unknown frame version 0"), problem(0, 0));
        assertEquals("unknown attribute bits 0x40 for frame version 1 (a newer kstream wrote it?); not reading it",
            problem(Format.FORMAT_VERSION, Format.SPARSE));
        assertEquals("unknown attribute bits 0x80 for frame version 2 (a newer kstream wrote it?); not reading it",
            problem(Format.SPARSE_FRAME_VERSION, Format.SPARSE | 0x80));
        assertEquals("frame version 2 with attributes 0x10", problem(Format.SPARSE_FRAME_VERSION, Format.TRANSACTIONAL));
    }
}

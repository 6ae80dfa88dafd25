package io.kstream.spark.format;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/** File names and the checksum helper: self-contained, runs in every build. */
class FormatTest {
    @Test
    void segmentNamesArePaddedTo20DigitsAndParseBack() {
        assertEquals("00000000000000000042.log", Format.segmentFileName(42, Format.LOG_SUFFIX));
        assertEquals(42, Format.parseSegmentFileName("00000000000000000042.log"));
        assertEquals(Long.MAX_VALUE, Format.parseSegmentFileName(Format.segmentFileName(Long.MAX_VALUE, ".log")));
        assertEquals(-1, Format.parseSegmentFileName("00000000000000000042.index"));
        assertEquals(-1, Format.parseSegmentFileName("0000000000000000042.log"));
        assertEquals(-1, Format.parseSegmentFileName("0000000000000000004x.log"));
    }

    @Test
    void lockNamesKeepTwelveCharactersOfTheTopicId() {
        assertEquals("t-3-0123456789ab.lock", Format.lockFileName("t", 3, "0123456789abcdef"));
        assertEquals("t-3-abc.lock", Format.lockFileName("t", 3, "abc"));
        assertEquals("t-3", Format.replicaDirName("t", 3));
    }

    @Test
    void crc32cIsCastagnoliOverTheRangeOnly() {
        // The check value of CRC-32C ("123456789" -> 0xE3069283), inside a larger buffer.
        ByteBuffer buffer = ByteBuffer.wrap("xx123456789yy".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        assertEquals(0xE3069283, Format.crc32c(buffer, 2, 11));
        assertEquals(0, buffer.position());
    }
}

package io.kstream.spark.format;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kstream.spark.error.KStreamException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.Test;

/** Java frames read back by the Java reader (tests/jvm/test_frame_encoder_conformance.py reads them in Python). */
class FrameEncoderTest {
    @Test
    void everyCodecRoundTripsThroughTheJavaReader() throws Exception {
        try (BufferAllocator allocator = new RootAllocator();
             VectorSchemaRoot root = VectorSchemaRoot.create(FrameEncoderProbe.schema(), allocator)) {
            for (String codec : new String[] {"none", "lz4", "zstd"}) {
                for (int[] rows : new int[][] {{0, 1}, {1, 17}, {18, 300}}) {  // row 0: no key, an empty value
                    FrameEncoderProbe.fill(root, rows[0], rows[1]);
                    FrameEncoder.Payload payload = FrameEncoder.payload(root, codec);
                    byte[] bytes = FrameEncoder.frame(payload, codec, Format.TRANSACTIONAL, 40, rows[1], 3, 77,
                        (short) 2, 18, 5, 9);
                    // direct, as a mapped segment is: the decoder reads uncompressed buffers in place
                    ByteBuffer frame = ByteBuffer.allocateDirect(bytes.length).put(bytes).flip().order(ByteOrder.LITTLE_ENDIAN);
                    FrameHeader header = FrameHeader.read(frame, 0);
                    assertNull(header.problem(frame, 0), codec);
                    assertEquals(bytes.length, header.frameSize());
                    assertEquals(FrameEncoder.codecBits(codec) | Format.TRANSACTIONAL, header.attributes);
                    assertEquals(40, header.baseOffset);
                    assertEquals(rows[1], header.recordCount);
                    CRC32C crc = new CRC32C();
                    crc.update(bytes, Format.HEADER_SIZE, bytes.length - Format.HEADER_SIZE);
                    assertEquals((int) crc.getValue(), header.payloadCrc);
                    ByteBuffer body = frame.slice(Format.HEADER_SIZE, bytes.length - Format.HEADER_SIZE);
                    try (VectorSchemaRoot back = new PayloadDecoder(allocator).decode(new Frame(header, "mem", 0, body), null)) {
                        assertEquals(root.getSchema(), back.getSchema(), codec);
                        assertTrue(root.equals(back), codec + ": other values after the round trip");
                    }
                }
            }
        }
    }

    @Test
    void aFrameEncodedInOneBufferIsTheFrameOfItsPayload() throws Exception {
        // FrameEncoder.frame(root, ...) (the JVM writer's: IPC written after the header's room)
        // must give the very bytes of frame(payload(root), ...), the path the conformance suites read.
        try (BufferAllocator allocator = new RootAllocator();
             VectorSchemaRoot root = VectorSchemaRoot.create(FrameEncoderProbe.schema(), allocator)) {
            for (String codec : new String[] {"none", "lz4", "zstd"}) {
                for (int[] rows : new int[][] {{0, 1}, {1, 17}, {18, 300}, {0, 5000}}) {
                    FrameEncoderProbe.fill(root, rows[0], rows[1]);
                    byte[] expected = FrameEncoder.frame(FrameEncoder.payload(root, codec), codec, Format.TRANSACTIONAL,
                        40, rows[1], 3, 77, (short) 2, -1, 5, 9);
                    byte[] got = FrameEncoder.frame(root, codec, Format.TRANSACTIONAL, 40, rows[1], 3, 77, (short) 2,
                        -1, 5, 9);
                    assertArrayEquals(expected, got, codec + " " + rows[1] + " rows");
                }
            }
            assertThrows(IllegalArgumentException.class,
                () -> FrameEncoder.frame(root, "none", Format.CODEC_LZ4, 0, 1, 0, -1, (short) -1, -1, 0, 0));
        }
    }

    @Test
    void sealingAgainAfterPatchingTheOffsetKeepsTheFrameValid() throws Exception {
        try (BufferAllocator allocator = new RootAllocator();
             VectorSchemaRoot root = VectorSchemaRoot.create(FrameEncoderProbe.schema(), allocator)) {
            FrameEncoderProbe.fill(root, 0, 5);
            byte[] bytes = FrameEncoder.frame(FrameEncoder.payload(root, "none"), "none", 0, 0, 5, 0, -1, (short) -1,
                -1, 0, 0);
            ByteBuffer frame = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
            frame.putLong(Format.POS_BASE_OFFSET, 1234);
            assertEquals("header checksum mismatch", FrameHeader.read(frame, 0).problem(frame, 0));
            FrameEncoder.seal(frame, 0);
            assertNull(FrameHeader.read(frame, 0).problem(frame, 0));
            assertEquals(1234, FrameHeader.read(frame, 0).baseOffset);
        }
    }

    @Test
    void anUnknownCodecIsAConfigError() {
        KStreamException error = assertThrows(KStreamException.class, () -> FrameEncoder.codecBits("snappy"));
        assertEquals(KStreamException.Kind.ConfigError, error.kind);
    }
}

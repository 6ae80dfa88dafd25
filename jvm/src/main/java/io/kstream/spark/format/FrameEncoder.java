package io.kstream.spark.format;

import io.kstream.spark.error.KStreamException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.util.zip.CRC32C;
import org.apache.arrow.compression.CommonsCompressionFactory;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.compression.CompressionCodec;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.apache.arrow.vector.compression.NoCompressionCodec;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.ipc.message.IpcOption;

/**
 * Encodes frames as docs/FORMAT.md "A frame" lays them out, for the Java writer: the payload is
 * the Arrow IPC stream of one record batch (schema message, record-batch message, no
 * end-of-stream marker), its buffers compressed with the frame's codec (none, lz4 frame, zstd:
 * Arrow IPC buffer compression through arrow-compression, empty buffers left as pyarrow leaves
 * them, see {@link EmptyBuffersAsIs}); the
 * header carries {@code payload_crc} (CRC-32C of the payload) and is sealed by
 * {@code header_crc} (CRC-32C of header bytes 8..67). Appends nothing: the writer fills in
 * {@code base_offset} and {@code leader_epoch} at append time, as Python's log does
 * ({@link #header} again, or {@link #seal} after patching them).
 *
 * <p>Not byte-identical to Python's frames for the same rows: Arrow Java's and Arrow C++'s
 * flatbuffer builders lay out the schema and record-batch messages differently (same meaning,
 * other bytes), so payload bytes and CRCs differ; both decode to the same records
 * (tests/jvm/test_frame_encoder_conformance.py). Stateless, thread safe.
 */
public final class FrameEncoder {
    /** Room for the schema and record-batch messages beside the buffers, when sizing a payload. */
    static final int PAYLOAD_SLACK_BYTES = 64 << 10;
    /** The most a payload's output is sized for up front (larger ones grow as they are written). */
    static final int MAX_PRESIZE_BYTES = 256 << 20;

    private FrameEncoder() {}

    /** An encoded payload: its bytes, the schema message's length at its start, and its CRC-32C. */
    public static final class Payload {
        public final byte[] bytes;
        public final int schemaLength;
        public final int crc;

        Payload(byte[] bytes, int schemaLength) {
            this.bytes = bytes;
            this.schemaLength = schemaLength;
            CRC32C crc32c = new CRC32C();
            crc32c.update(bytes);
            this.crc = (int) crc32c.getValue();
        }
    }

    /** The codec bits of the attributes byte for a codec name (none, lz4, zstd). */
    public static int codecBits(String codec) {
        switch (codec) {
            case "none": return Format.CODEC_NONE;
            case "lz4": return Format.CODEC_LZ4;
            case "zstd": return Format.CODEC_ZSTD;
            default: throw KStreamException.config("compression.type=" + codec + " is not one of none, lz4, zstd");
        }
    }

    /** The payload of {@code root}'s rows (the caller keeps and closes the root). */
    public static Payload payload(VectorSchemaRoot root, String codec) throws IOException {
        int bits = codecBits(codec);
        CompressionUtil.CodecType type = bits == Format.CODEC_LZ4 ? CompressionUtil.CodecType.LZ4_FRAME
            : bits == Format.CODEC_ZSTD ? CompressionUtil.CodecType.ZSTD : CompressionUtil.CodecType.NO_COMPRESSION;
        // Sized for the uncompressed buffers up front: growing by doubling copied a 4 MB frame's
        // payload about twice more (issue 22's profile of the batch write).
        long buffers = PAYLOAD_SLACK_BYTES;
        for (org.apache.arrow.vector.FieldVector vector : root.getFieldVectors()) buffers += vector.getBufferSize();
        ByteArrayOutputStream out = new ByteArrayOutputStream((int) Math.min(buffers, MAX_PRESIZE_BYTES));
        ArrowStreamWriter writer = type == CompressionUtil.CodecType.NO_COMPRESSION
            ? new ArrowStreamWriter(root, null, Channels.newChannel(out), IpcOption.DEFAULT,
                NoCompressionCodec.Factory.INSTANCE, type)
            : new ArrowStreamWriter(root, null, Channels.newChannel(out), IpcOption.DEFAULT,
                EmptyBuffersAsIs.FACTORY, type);
        writer.start();
        long schemaLength = writer.bytesWritten();
        writer.writeBatch();
        // No end(): the frame stores no end-of-stream marker. Nothing else of the writer needs closing
        // (close() would write that marker); the root stays the caller's.
        return new Payload(out.toByteArray(), Math.toIntExact(schemaLength));
    }

    /**
     * A whole frame of {@code root}'s rows (header sealed, then the payload), encoded in one
     * buffer: the same bytes as {@link #frame}({@link #payload}(root, codec), ...), without the
     * payload's own array and its copy into the frame (two copies of a 4 MB frame, issue 22's
     * ETL profile). The Arrow IPC stream is written straight after the header's room.
     */
    public static byte[] frame(VectorSchemaRoot root, String codec, int attributes, long baseOffset, int recordCount,
                               int leaderEpoch, long producerId, short producerEpoch, int baseSequence,
                               long minTimestamp, long maxTimestamp) throws IOException {
        if (recordCount < 1) throw new IllegalArgumentException("a frame holds >= 1 records, not " + recordCount);
        if ((attributes & Format.CODEC_MASK) != 0) {
            throw new IllegalArgumentException("attributes carry codec bits already: " + attributes);
        }
        int bits = codecBits(codec);
        CompressionUtil.CodecType type = bits == Format.CODEC_LZ4 ? CompressionUtil.CodecType.LZ4_FRAME
            : bits == Format.CODEC_ZSTD ? CompressionUtil.CodecType.ZSTD : CompressionUtil.CodecType.NO_COMPRESSION;
        long buffers = PAYLOAD_SLACK_BYTES;
        for (org.apache.arrow.vector.FieldVector vector : root.getFieldVectors()) buffers += vector.getBufferSize();
        ArrayChannel out = new ArrayChannel((int) Math.min(Format.HEADER_SIZE + buffers, MAX_PRESIZE_BYTES));
        out.skip(Format.HEADER_SIZE);
        ArrowStreamWriter writer = type == CompressionUtil.CodecType.NO_COMPRESSION
            ? new ArrowStreamWriter(root, null, out, IpcOption.DEFAULT, NoCompressionCodec.Factory.INSTANCE, type)
            : new ArrowStreamWriter(root, null, out, IpcOption.DEFAULT, EmptyBuffersAsIs.FACTORY, type);
        writer.start();
        long schemaLength = writer.bytesWritten();
        writer.writeBatch();
        // No end(), as in payload(): no end-of-stream marker; the root stays the caller's.
        byte[] raw = out.toArray();
        int payloadBytes = raw.length - Format.HEADER_SIZE;
        CRC32C crc = new CRC32C();
        crc.update(raw, Format.HEADER_SIZE, payloadBytes);
        ByteBuffer b = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN);
        putHeader(b, payloadBytes, attributes | bits, baseOffset, recordCount, leaderEpoch, producerId,
                  producerEpoch, baseSequence, minTimestamp, maxTimestamp, Math.toIntExact(schemaLength),
                  (int) crc.getValue());
        return raw;
    }

    /**
     * A channel into one growable array (Arrow's writer hands it its buffers whole: one copy each,
     * no 8 KB staging as {@code Channels.newChannel(OutputStream)} does). Not thread-safe.
     */
    private static final class ArrayChannel implements java.nio.channels.WritableByteChannel {
        private byte[] buffer;
        private int size;

        ArrayChannel(int capacity) {
            buffer = new byte[Math.max(capacity, Format.HEADER_SIZE)];
        }

        void skip(int bytes) {
            size += bytes;  // zeros: the header's room
        }

        @Override
        public int write(ByteBuffer src) {
            int n = src.remaining();
            if (size + (long) n > Integer.MAX_VALUE - 8) throw new IllegalStateException("a frame past 2 GiB");
            if (size + n > buffer.length) {
                buffer = java.util.Arrays.copyOf(buffer, (int) Math.min(Integer.MAX_VALUE - 8,
                    Math.max((long) buffer.length * 2, (long) size + n)));
            }
            src.get(buffer, size, n);
            size += n;
            return n;
        }

        /** The bytes written, in an array of exactly that length. */
        byte[] toArray() {
            return size == buffer.length ? buffer : java.util.Arrays.copyOf(buffer, size);
        }

        @Override
        public boolean isOpen() {
            return true;
        }

        @Override
        public void close() {}
    }

    /**
     * Arrow Java's codecs with Arrow C++'s rule for empty buffers: stored as they are (0 bytes, no
     * length prefix). Arrow Java alone writes an empty buffer as an 8-byte prefix of length 0 and no
     * compressed bytes, which pyarrow's lz4 reader refuses ("Lz4 compressed input contains less
     * than one frame"); every Arrow reader, Java's VectorLoader included, takes a 0-byte buffer of
     * a compressed batch as empty.
     */
    private static final class EmptyBuffersAsIs implements CompressionCodec {
        static final CompressionCodec.Factory FACTORY = new CompressionCodec.Factory() {
            @Override
            public CompressionCodec createCodec(CompressionUtil.CodecType type) {
                return new EmptyBuffersAsIs(CommonsCompressionFactory.INSTANCE.createCodec(type));
            }

            @Override
            public CompressionCodec createCodec(CompressionUtil.CodecType type, int compressionLevel) {
                return new EmptyBuffersAsIs(CommonsCompressionFactory.INSTANCE.createCodec(type, compressionLevel));
            }
        };

        private final CompressionCodec codec;

        EmptyBuffersAsIs(CompressionCodec codec) {
            this.codec = codec;
        }

        @Override
        public ArrowBuf compress(BufferAllocator allocator, ArrowBuf uncompressed) {
            // compress() takes over the buffer and returns one the caller owns: an empty one as itself
            return uncompressed.writerIndex() == 0 ? uncompressed : codec.compress(allocator, uncompressed);
        }

        @Override
        public ArrowBuf decompress(BufferAllocator allocator, ArrowBuf compressed) {
            return codec.decompress(allocator, compressed);
        }

        @Override
        public CompressionUtil.CodecType getCodecType() {
            return codec.getCodecType();
        }
    }

    /**
     * A whole frame: header (sealed) then payload.
     *
     * @param attributes the attributes byte without the codec bits (LogAppendTime, transactional,
     *     control); the codec bits are the payload's
     */
    public static byte[] frame(Payload payload, String codec, int attributes, long baseOffset, int recordCount,
                               int leaderEpoch, long producerId, short producerEpoch, int baseSequence,
                               long minTimestamp, long maxTimestamp) {
        if (recordCount < 1) throw new IllegalArgumentException("a frame holds >= 1 records, not " + recordCount);
        if ((attributes & Format.CODEC_MASK) != 0) {
            throw new IllegalArgumentException("attributes carry codec bits already: " + attributes);
        }
        ByteBuffer b = ByteBuffer.allocate(Format.HEADER_SIZE + payload.bytes.length).order(ByteOrder.LITTLE_ENDIAN);
        b.position(Format.HEADER_SIZE);
        b.put(payload.bytes);
        putHeader(b, payload.bytes.length, attributes | codecBits(codec), baseOffset, recordCount, leaderEpoch,
                  producerId, producerEpoch, baseSequence, minTimestamp, maxTimestamp, payload.schemaLength,
                  payload.crc);
        return b.array();
    }

    /** The header of the frame at the start of {@code b} (little-endian) before its payload of
     *  {@code payloadBytes}, sealed. */
    private static void putHeader(ByteBuffer b, int payloadBytes, int attributes, long baseOffset, int recordCount,
                                  int leaderEpoch, long producerId, short producerEpoch, int baseSequence,
                                  long minTimestamp, long maxTimestamp, int schemaLength, int payloadCrc) {
        b.putInt(Format.POS_LENGTH, Format.HEADER_SIZE - Format.LENGTH_SIZE + payloadBytes);
        b.putShort(Format.POS_MAGIC, (short) Format.MAGIC);
        b.put(Format.POS_VERSION, (byte) Format.FORMAT_VERSION);
        b.put(Format.POS_ATTRIBUTES, (byte) attributes);
        b.putLong(Format.POS_BASE_OFFSET, baseOffset);
        b.putInt(Format.POS_RECORD_COUNT, recordCount);
        b.putInt(Format.POS_LEADER_EPOCH, leaderEpoch);
        b.putLong(Format.POS_PRODUCER_ID, producerId);
        b.putShort(Format.POS_PRODUCER_EPOCH, producerEpoch);
        // reserved (2 bytes at 38) stays zero
        b.putInt(Format.POS_BASE_SEQUENCE, baseSequence);
        b.putLong(Format.POS_MIN_TIMESTAMP, minTimestamp);
        b.putLong(Format.POS_MAX_TIMESTAMP, maxTimestamp);
        b.putInt(Format.POS_SCHEMA_LENGTH, schemaLength);
        b.putInt(Format.POS_PAYLOAD_CRC, payloadCrc);
        seal(b, 0);
    }

    /** (Re)compute the header CRC of the frame at {@code at}, after base_offset or leader_epoch changed. */
    public static void seal(ByteBuffer frame, int at) {
        ByteBuffer b = frame.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(at + Format.POS_HEADER_CRC, Format.crc32c(b, at + Format.CRC_START, at + Format.HEADER_SIZE));
    }
}

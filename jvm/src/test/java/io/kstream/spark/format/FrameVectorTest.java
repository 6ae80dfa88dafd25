package io.kstream.spark.format;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.junit.jupiter.api.Test;

/**
 * Frames of every codec (none, lz4, zstd) and of a transactional partition, written by kstream's
 * Python producer: {@link LogReader} walks exactly the frames format.py walked (checksums
 * verified), and {@link PayloadDecoder} decodes each one's records (key, value, timestamp,
 * headers) to what was produced.
 */
class FrameVectorTest {
    private static List<Frame> walk(String replica) {
        List<Frame> frames = new ArrayList<>();
        try (LogReader reader = new LogReader(SharedVectors.replicaDir(replica), true)) {
            reader.seek(0);
            for (Frame frame = reader.next(Long.MAX_VALUE); frame != null; frame = reader.next(Long.MAX_VALUE)) {
                frames.add(frame);
            }
            assertEquals(SharedVectors.manifest().path("replicas").path(replica).path("log_end_offset").asLong(),
                reader.logEndOffset(), replica + " log end offset");
        }
        return frames;
    }

    private static void assertFramesAsWritten(String replica, List<Frame> frames) {
        JsonNode expected = SharedVectors.manifest().path("replicas").path(replica).path("frames");
        assertEquals(expected.size(), frames.size(), replica + " frame count");
        for (int i = 0; i < frames.size(); i++) {
            FrameHeader header = frames.get(i).header;
            JsonNode frame = expected.get(i);
            String what = replica + " frame " + i;
            assertEquals(frame.path("base_offset").asLong(), header.baseOffset, what);
            assertEquals(frame.path("record_count").asInt(), header.recordCount, what);
            assertEquals(frame.path("attributes").asInt(), header.attributes, what);
            assertEquals(frame.path("producer_id").asLong(), header.producerId, what);
            assertEquals(frame.path("leader_epoch").asInt(), header.leaderEpoch, what);
            assertEquals(frame.path("min_timestamp").asLong(), header.minTimestamp, what);
            assertEquals(frame.path("max_timestamp").asLong(), header.maxTimestamp, what);
            assertEquals(frame.path("position").asInt(), frames.get(i).position, what);
            assertEquals(Format.segmentFileName(frame.path("segment_base").asLong(), Format.LOG_SUFFIX),
                java.nio.file.Path.of(frames.get(i).path).getFileName().toString(), what);
        }
    }

    private static byte[] bytes(JsonNode text) {
        return text.isNull() ? null : text.asText().getBytes(StandardCharsets.UTF_8);
    }

    /** The manifest's [[name, value], ...] of a record. */
    private static List<List<String>> expectedHeaders(JsonNode record) {
        List<List<String>> out = new ArrayList<>();
        for (JsonNode header : record.path("headers")) out.add(List.of(header.get(0).asText(), header.get(1).asText()));
        return out;
    }

    /** A row's headers (list of struct key string, value binary; null: none) as [[name, value], ...]. */
    private static List<List<String>> headers(ListVector vector, int row) {
        List<List<String>> out = new ArrayList<>();
        if (vector == null || vector.isNull(row)) return out;
        StructVector items = (StructVector) vector.getDataVector();
        VarCharVector names = (VarCharVector) items.getChild("key");
        VarBinaryVector values = (VarBinaryVector) items.getChild("value");
        for (int i = vector.getElementStartIndex(row); i < vector.getElementEndIndex(row); i++) {
            out.add(List.of(new String(names.get(i), StandardCharsets.UTF_8),
                new String(values.get(i), StandardCharsets.UTF_8)));
        }
        return out;
    }

    @Test
    void everyCodecDecodesToTheProducedRecords() {
        JsonNode codecs = SharedVectors.manifest().path("codecs");
        try (BufferAllocator allocator = SharedAllocator.child("frame-vector-test")) {
            PayloadDecoder decoder = new PayloadDecoder(allocator);
            for (int partition = 0; partition < codecs.size(); partition++) {
                String replica = "codecs-" + partition;
                List<Frame> frames = walk(replica);
                assertFramesAsWritten(replica, frames);
                JsonNode records = SharedVectors.manifest().path("records").path(replica);
                int codec = switch (codecs.get(partition).asText()) {
                    case "none" -> Format.CODEC_NONE;
                    case "lz4" -> Format.CODEC_LZ4;
                    default -> Format.CODEC_ZSTD;
                };
                for (Frame frame : frames) {
                    assertEquals(codec, frame.header.attributes & Format.CODEC_MASK, replica);
                    try (VectorSchemaRoot root = decoder.decode(frame, null)) {
                        assertEquals(frame.header.recordCount, root.getRowCount());
                        VarBinaryVector keys = (VarBinaryVector) root.getVector("key");
                        VarBinaryVector values = (VarBinaryVector) root.getVector("value");
                        BigIntVector timestamps = (BigIntVector) root.getVector("timestamp");
                        ListVector headers = (ListVector) root.getVector("headers");
                        for (int row = 0; row < root.getRowCount(); row++) {
                            JsonNode record = records.get((int) (frame.header.baseOffset + row));
                            String what = replica + " offset " + (frame.header.baseOffset + row);
                            // a frame whose keys are all null may leave the key column out
                            assertArrayEquals(bytes(record.path("key")), keys == null ? null : keys.getObject(row), what);
                            assertArrayEquals(bytes(record.path("value")), values.getObject(row), what);
                            assertEquals(record.path("timestamp").asLong(), timestamps.get(row), what);
                            assertEquals(expectedHeaders(record), headers(headers, row), what + " headers");
                        }
                    }
                }
            }
        }
    }

    @Test
    void transactionalFramesAndMarkersAsWritten() {
        List<Frame> frames = walk("txn-0");
        assertFramesAsWritten("txn-0", frames);
        JsonNode records = SharedVectors.manifest().path("records").path("txn-0");
        try (BufferAllocator allocator = SharedAllocator.child("frame-vector-test")) {
            PayloadDecoder decoder = new PayloadDecoder(allocator);
            for (Frame frame : frames) {
                try (VectorSchemaRoot root = decoder.decode(frame, null)) {
                    VarBinaryVector values = (VarBinaryVector) root.getVector("value");
                    for (int row = 0; row < root.getRowCount(); row++) {
                        JsonNode record = records.get((int) (frame.header.baseOffset + row));
                        assertEquals(record.path("control").asBoolean(), frame.header.isControl());
                        String value = new String(values.getObject(row), StandardCharsets.UTF_8);
                        assertEquals(record.path("value").asText(), value, "txn-0 offset " + record);
                    }
                }
            }
        }
    }
}

package io.kstream.spark.format;

import io.kstream.spark.error.KStreamException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The source position a "positioned" frame carries (docs/FORMAT.md, "Positioned frames"): the
 * Real-time Mode sink's frames say which source records they hold, so a replay of a position the
 * log already has is dropped (docs/TRANSACTIONS.md, "Source-position idempotence").
 *
 * <p>A positioned frame is a plain data frame (not transactional, not control, base_sequence -1)
 * whose {@code producer_id} lies in {@link #FIRST_POSITIONED_PRODUCER_ID}.. (bit 62 set: never an
 * id of the {@code producer_id} counter), derived from its identity (sink id, source topic, source
 * partition), and whose Arrow schema message carries the identity and the first and last source
 * offsets of its records in the schema's custom metadata ({@link #SINK_KEY} ...). Readers ignore
 * both: the producer id has no sequence (Python's producer state checks sequenced frames only),
 * and the record columns are the bytes topic's.
 */
public final class SourcePosition {
    public static final long FIRST_POSITIONED_PRODUCER_ID = 1L << 62;
    public static final String SINK_KEY = "kstream.source.sink";
    public static final String TOPIC_KEY = "kstream.source.topic";
    public static final String PARTITION_KEY = "kstream.source.partition";
    public static final String FIRST_OFFSET_KEY = "kstream.source.first_offset";
    public static final String LAST_OFFSET_KEY = "kstream.source.last_offset";
    /** Longest sink id or source topic name a frame may carry (bytes, UTF-8). */
    public static final int MAX_NAME_BYTES = 1024;

    /** Who wrote a run of positions: a sink reading one source partition. */
    public record Identity(String sinkId, String topic, int partition) {
        public Identity {
            if (sinkId.getBytes(StandardCharsets.UTF_8).length > MAX_NAME_BYTES
                    || topic.getBytes(StandardCharsets.UTF_8).length > MAX_NAME_BYTES) {
                throw KStreamException.config("a source position's sink id and topic are at most " + MAX_NAME_BYTES
                    + " bytes; got '" + sinkId + "', '" + topic + "'");
            }
            if (partition < 0) throw KStreamException.config("source partition must be >= 0, not " + partition);
        }

        /** The frame header's producer id of this identity: bit 62 and a 62-bit FNV-1a hash of it. */
        public long producerId() {
            long hash = 0xcbf29ce484222325L;
            byte[] bytes = (sinkId + "\n" + topic + "\n" + partition).getBytes(StandardCharsets.UTF_8);
            for (byte b : bytes) {
                hash ^= b & 0xff;
                hash *= 0x100000001b3L;
            }
            return FIRST_POSITIONED_PRODUCER_ID | (hash & (FIRST_POSITIONED_PRODUCER_ID - 1));
        }

        /** The schema metadata of a frame of this identity holding source offsets first..last. */
        public Map<String, String> metadata(long firstOffset, long lastOffset) {
            Map<String, String> m = new HashMap<>();
            m.put(SINK_KEY, sinkId);
            m.put(TOPIC_KEY, topic);
            m.put(PARTITION_KEY, Integer.toString(partition));
            m.put(FIRST_OFFSET_KEY, Long.toString(firstOffset));
            m.put(LAST_OFFSET_KEY, Long.toString(lastOffset));
            return m;
        }
    }

    /** What one positioned frame holds: its identity and source offsets first..last. */
    public record Span(Identity identity, long firstOffset, long lastOffset) {}

    private SourcePosition() {}

    public static boolean isPositioned(FrameHeader header) {
        return header.producerId >= FIRST_POSITIONED_PRODUCER_ID
            && (header.attributes & (Format.TRANSACTIONAL | Format.CONTROL)) == 0;
    }

    /**
     * The span a positioned frame carries; a CorruptBatchError when its producer id says
     * positioned and the metadata is missing or does not hash to that id.
     */
    public static Span of(Frame frame, PayloadDecoder decoder) {
        Schema schema = decoder.schema(frame);
        Map<String, String> m = schema.getCustomMetadata();
        try {
            Identity id = new Identity(m.get(SINK_KEY), m.get(TOPIC_KEY), Integer.parseInt(m.get(PARTITION_KEY)));
            Span span = new Span(id, Long.parseLong(m.get(FIRST_OFFSET_KEY)), Long.parseLong(m.get(LAST_OFFSET_KEY)));
            if (id.producerId() != frame.header.producerId || span.firstOffset > span.lastOffset) {
                throw new IllegalArgumentException("producer id " + frame.header.producerId + " is not its identity's "
                    + id.producerId() + ", or offsets " + span.firstOffset + ".." + span.lastOffset);
            }
            return span;
        } catch (RuntimeException e) {
            throw KStreamException.corrupt("a positioned frame without a readable source position (" + e + ")",
                frame.path, frame.position, frame.header.baseOffset);
        }
    }
}

package io.kstream.spark.read;

import io.kstream.spark.error.KStreamException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarBinaryVector;

/**
 * The first pass of a latestPerKey read: the offset of each key's latest visible record in a
 * split, found by walking {@link VisibleFrames} with the key column alone decoded (so aborted
 * transactions, markers and fillers never count). The result is those offsets, sorted: the rows
 * {@link LatestPerKeyReader} keeps. A record without a key is an InvalidRecordError naming its
 * offset, in the words of Python's kstream.source.latest_per_key.keyless_message. Memory: one
 * entry per distinct key (its bytes and its offset).
 */
final class LatestOffsets {
    private LatestOffsets() {}

    /** A key's bytes, compared by content, with the offset of its latest record so far. */
    private static final class Key {
        final byte[] bytes;
        final int hash;
        long offset;

        Key(byte[] bytes, long offset) {
            this.bytes = bytes;
            this.hash = Arrays.hashCode(bytes);
            this.offset = offset;
        }

        @Override
        public boolean equals(Object other) {
            return other instanceof Key k && k.hash == hash && Arrays.equals(k.bytes, bytes);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }

    static String keylessMessage(TopicPartition tp, long offset) {
        return tp + ": the record at offset " + offset + " has no key, so latestPerKey=true cannot tell whose "
            + "latest value it is; read the topic without latestPerKey (and filter keyless records out), or write "
            + "keyed records (a compacted topic refuses keyless ones)";
    }

    /** The sorted offsets of the latest record of each key of {@code split}. */
    static long[] of(OffsetRange split, boolean failOnDataLoss, boolean verifyChecksums, BufferAllocator allocator) {
        Map<Key, Key> latest = new HashMap<>();
        try (VisibleFrames frames = new VisibleFrames(split, java.util.Set.of("key"), failOnDataLoss, verifyChecksums,
                allocator)) {
            while (frames.next()) {
                FieldVector vector = frames.root().getVector("key");
                int n = frames.count();
                for (int r = 0; r < n; r++) {
                    long offset = frames.rowOffset(r);
                    if (!(vector instanceof VarBinaryVector keys) || keys.isNull(r)) {
                        throw new KStreamException(KStreamException.Kind.InvalidRecordError,
                            keylessMessage(split.tp, offset));
                    }
                    Key key = new Key(keys.get(r), offset);
                    Key seen = latest.putIfAbsent(key, key);
                    if (seen != null) seen.offset = offset; // offsets ascend: the later record wins
                }
            }
        }
        long[] offsets = new long[latest.size()];
        int i = 0;
        for (Key key : latest.keySet()) offsets[i++] = key.offset;
        Arrays.sort(offsets);
        return offsets;
    }
}

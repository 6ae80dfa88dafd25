package io.kstream.spark.write;

import io.kstream.spark.error.KStreamException;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;

/**
 * Which partition a row goes to, as the Python writers choose (src/kstream/client/partitioner.py
 * and producer_routing.py): a keyed row to {@code toPositive(murmur2(key)) % numPartitions},
 * bit-identical to Kafka's Java client ({@code org.apache.kafka.common.utils.Utils.murmur2}, its
 * default partitioner), so kstream and Kafka topics agree on key placement; an unkeyed row by the
 * {@code partitioner} option: {@code murmur2_random} (the default) sticks to one random partition
 * per topic and moves to another one at random after each batch sent there (KIP-794, as Python's
 * StickyPartitioner), {@code murmur2} puts them all on the partition of an empty key (librdkafka's
 * murmur2 partitioner). A null key is unkeyed; an empty key is a key. Not thread safe (one per task).
 */
public final class Partitioner {
    public static final String MURMUR2_RANDOM = "murmur2_random";
    public static final String MURMUR2 = "murmur2";
    private static final int SEED = 0x9747b28c;
    private static final int M = 0x5bd1e995;
    private static final int R = 24;

    private final boolean nullKeyHashed;
    private final Random random;
    private final Map<String, Integer> sticky = new HashMap<>();

    /**
     * @param partitioner the {@code partitioner} option: murmur2_random or murmur2
     * @throws KStreamException ConfigError for any other value
     */
    public Partitioner(String partitioner, Random random) {
        if (!partitioner.equals(MURMUR2_RANDOM) && !partitioner.equals(MURMUR2)) {
            throw KStreamException.config("option partitioner=" + partitioner + " is not one of "
                + MURMUR2_RANDOM + ", " + MURMUR2);
        }
        this.nullKeyHashed = partitioner.equals(MURMUR2);
        this.random = random;
    }

    /** Kafka's {@code Utils.murmur2}: a signed 32-bit hash (seed 0x9747b28c). */
    public static int murmur2(byte[] data) {
        int length = data.length;
        int h = SEED ^ length;
        int whole = length & ~3;
        for (int i = 0; i < whole; i += 4) {
            int k = (data[i] & 0xff) | ((data[i + 1] & 0xff) << 8) | ((data[i + 2] & 0xff) << 16)
                | ((data[i + 3] & 0xff) << 24);
            k *= M;
            k ^= k >>> R;
            k *= M;
            h *= M;
            h ^= k;
        }
        switch (length & 3) {
            case 3:
                h ^= (data[whole + 2] & 0xff) << 16;
                // fall through
            case 2:
                h ^= (data[whole + 1] & 0xff) << 8;
                // fall through
            case 1:
                h ^= data[whole] & 0xff;
                h *= M;
                break;
            default:
                break;
        }
        h ^= h >>> 13;
        h *= M;
        h ^= h >>> 15;
        return h;
    }

    /** Kafka's {@code Utils.toPositive}: the sign bit cleared (not {@code Math.abs}). */
    public static int toPositive(int number) {
        return number & 0x7fffffff;
    }

    /** The partition of a keyed row (an empty key included). */
    public static int partitionForKey(byte[] key, int numPartitions) {
        if (numPartitions <= 0) throw new IllegalArgumentException("a topic has >= 1 partitions, not " + numPartitions);
        return toPositive(murmur2(key)) % numPartitions;
    }

    /** The partition of a row: its key's, or the unkeyed partition of {@code topic} when key is null. */
    public int partition(String topic, byte[] key, int numPartitions) {
        return key != null ? partitionForKey(key, numPartitions) : unkeyed(topic, numPartitions);
    }

    /** Where unkeyed rows of {@code topic} go now. */
    public int unkeyed(String topic, int numPartitions) {
        if (nullKeyHashed) return partitionForKey(new byte[0], numPartitions);
        Integer current = sticky.get(topic);
        if (current == null || current >= numPartitions) {
            current = random.nextInt(numPartitions);
            sticky.put(topic, current);
        }
        return current;
    }

    /** A batch of unkeyed rows went to {@code partition}: the sticky partition moves to another one. */
    public void batchSent(String topic, int numPartitions, int partition) {
        if (nullKeyHashed) return;
        Integer current = sticky.get(topic);
        if (current != null && current == partition && numPartitions > 1) {
            int following = random.nextInt(numPartitions - 1);
            sticky.put(topic, following < partition ? following : following + 1);
        }
    }
}

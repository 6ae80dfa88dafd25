package io.kstream.spark.write;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/**
 * A child JVM for tests/jvm/test_partitioner_conformance.py, run in source-file mode with the
 * kstream jar (and, when the Kafka peer's jars are there, kafka-clients) on the class path. Reads
 * lines "HEX_KEY NUM_PARTITIONS" (an empty key is an empty HEX_KEY) and prints for each
 * "MURMUR2 PARTITION", kstream's Partitioner; with kafka-clients also Kafka's own
 * Utils.murmur2 and BuiltInPartitioner.partitionForKey after them.
 */
public final class PartitionerProbe {
    private PartitionerProbe() {}

    public static void main(String[] args) throws Exception {
        Method kafkaMurmur2 = null;
        Method kafkaPartition = null;
        try {
            kafkaMurmur2 = Class.forName("org.apache.kafka.common.utils.Utils").getMethod("murmur2", byte[].class);
            kafkaPartition = Class.forName("org.apache.kafka.clients.producer.internals.BuiltInPartitioner")
                .getMethod("partitionForKey", byte[].class, int.class);
        } catch (ClassNotFoundException e) {
            // no kafka-clients on the class path: kstream's answers only
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        StringBuilder out = new StringBuilder();
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            String[] f = line.split(" ", -1);
            byte[] key = HexFormat.of().parseHex(f[0]);
            int n = Integer.parseInt(f[1]);
            out.append(Partitioner.murmur2(key)).append(' ').append(Partitioner.partitionForKey(key, n));
            if (kafkaMurmur2 != null) {
                out.append(' ').append(kafkaMurmur2.invoke(null, (Object) key))
                    .append(' ').append(kafkaPartition.invoke(null, key, n));
            }
            out.append('\n');
        }
        System.out.print(out);
    }
}

package io.kstream.spark.format;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;

/**
 * The shared test vectors that the Python side writes (tests/jvm/vectors.py): a cluster made by
 * kstream's own producer, hand-made recovery points, lock files and .txnindex files, and
 * manifest.json saying what they hold; a second cluster holds the offset-for-timestamp table's cases. Their directory is the system property
 * {@code kstream.vectors} (tests/jvm/test_shared_vectors.py sets it); without it every test that
 * needs them is skipped, so {@code mvn package} on its own runs only the self-contained tests.
 */
public final class SharedVectors {
    private static JsonNode manifest;

    private SharedVectors() {}

    public static Path dir() {
        String dir = System.getProperty("kstream.vectors", "");
        assumeTrue(!dir.isEmpty(), "no -Dkstream.vectors=DIR: the shared vectors come from tests/jvm");
        return Path.of(dir);
    }

    public static synchronized JsonNode manifest() {
        Path dir = dir();
        if (manifest == null) {
            try {
                manifest = new ObjectMapper().readTree(dir.resolve("manifest.json").toFile());
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read the manifest of the vectors in " + dir, e);
            }
        }
        return manifest;
    }

    public static String cluster() {
        return dir().resolve("cluster").toString();
    }

    /** The second cluster: a topic per case of the offset-for-timestamp table (manifest "timestamps"). */
    public static String timestampsCluster() {
        return dir().resolve("timestamps").toString();
    }

    /** A replica directory of the vectors' cluster, e.g. replicaDir("codecs-1"). */
    public static String replicaDir(String replica) {
        return dir().resolve("cluster").resolve(manifest().path("replicas").path(replica).path("dir").asText())
            .toString();
    }

    public static String file(String name) {
        return dir().resolve("files").resolve(name).toString();
    }
}

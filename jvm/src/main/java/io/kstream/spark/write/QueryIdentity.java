package io.kstream.spark.write;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kstream.spark.error.KStreamException;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.UUID;

/**
 * Which streaming query a sink writes for: the query id Spark keeps in
 * {@code <checkpointLocation>/metadata}, exactly as Python's {@code kstream.sink.query_identity}
 * derives it (the same string, {@code query:<uuid>}), so a query may switch between the Python
 * and the JVM stream writer across a restart and each batch still commits once. A checkpoint
 * without that file, or with one that names no id, is a CheckpointError (never a default).
 */
public final class QueryIdentity {
    /** Spark's StreamExecution: new Path(checkpointRoot, "metadata"). */
    public static final String METADATA_FILE = "metadata";
    /** Spark's file is about 45 bytes; a bigger one is not Spark's. */
    public static final int MAX_METADATA_BYTES = 64 << 10;
    /** Python's SINK_ID_PREFIX. */
    public static final String SINK_ID_PREFIX = "query:";

    private QueryIdentity() {}

    /** The sink id of the streaming query whose checkpoint is {@code checkpointLocation}. */
    public static String sinkId(String checkpointLocation) {
        return SINK_ID_PREFIX + queryId(checkpointLocation);
    }

    /** The query id in the checkpoint's metadata file (lower-case, hyphenated: Python's str(uuid.UUID)). */
    public static String queryId(String checkpointLocation) {
        Path path = metadataPath(checkpointLocation);
        String raw = read(path, checkpointLocation);
        String firstLine = raw.strip().isEmpty() ? raw : raw.lines().findFirst().orElse("");
        try {
            JsonNode value = new ObjectMapper().readTree(firstLine);
            JsonNode id = value == null ? null : value.get("id");
            if (id == null || !id.isTextual()) throw new IllegalArgumentException("no id");
            return parseUuid(id.asText()).toString();
        } catch (IOException | IllegalArgumentException e) {
            throw new KStreamException(KStreamException.Kind.CheckpointError, path + " is not a Spark query's metadata"
                + " (expected one JSON line with the query's UUID as \"id\", got '"
                + raw.substring(0, Math.min(80, raw.length())) + "'): the kstream sink identifies a streaming query by"
                + " it. Use the checkpoint Spark wrote, or a fresh checkpoint location");
        }
    }

    /** A UUID as Python's uuid.UUID(hex) reads the forms Spark could write: hyphenated or 32 hex digits. */
    static UUID parseUuid(String text) {
        String hex = text.strip();
        if (hex.startsWith("urn:")) hex = hex.substring(4);
        if (hex.startsWith("uuid:")) hex = hex.substring(5);
        if (hex.startsWith("{") && hex.endsWith("}")) hex = hex.substring(1, hex.length() - 1);
        hex = hex.replace("-", "");
        if (hex.length() != 32 || !hex.chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
            throw new IllegalArgumentException("not a UUID: " + text);
        }
        return new UUID(Long.parseUnsignedLong(hex.substring(0, 16), 16), Long.parseUnsignedLong(hex.substring(16), 16));
    }

    /**
     * The local path of the checkpoint's metadata file: a plain path (made absolute) or a
     * {@code file:} URI; other file systems are refused (the log is on this machine's disks).
     */
    public static Path metadataPath(String checkpointLocation) {
        String location = checkpointLocation.strip();
        if (location.isEmpty()) {
            throw new KStreamException(KStreamException.Kind.CheckpointError,
                "option 'checkpointLocation' is empty; give the query's checkpoint directory");
        }
        int colon = location.indexOf(':');
        String scheme = colon > 0 && location.substring(0, colon).matches("[A-Za-z][A-Za-z0-9+.-]*")
            ? location.substring(0, colon) : null;
        if (scheme != null && scheme.equalsIgnoreCase("file")) {
            try {
                URI uri = new URI(location);
                String host = uri.getAuthority();
                if (host != null && !host.isEmpty() && !host.equals("localhost")) {
                    throw new KStreamException(KStreamException.Kind.CheckpointError, "checkpoint location '" + location
                        + "' names host '" + host + "'; a file: URI of this machine has none (file:///path)");
                }
                location = uri.getPath();
            } catch (URISyntaxException e) {
                throw new KStreamException(KStreamException.Kind.CheckpointError, "checkpoint location '" + location
                    + "' is not a valid file: URI (" + e.getMessage() + "); give a plain path or file:///path");
            }
        } else if (scheme != null && scheme.length() > 1) {
            throw new KStreamException(KStreamException.Kind.CheckpointError, "checkpoint location '" + location
                + "' is on " + scheme + ":, which the kstream sink cannot read; its exactly-once commits need the query"
                + " id in the checkpoint's metadata file: put the checkpoint on a local path (or file:///...)");
        }
        return Path.of(location).toAbsolutePath().normalize().resolve(METADATA_FILE);
    }

    private static String read(Path path, String checkpointLocation) {
        byte[] raw;
        try (InputStream in = Files.newInputStream(path)) {
            raw = in.readNBytes(MAX_METADATA_BYTES + 1);
        } catch (NoSuchFileException e) {
            throw new KStreamException(KStreamException.Kind.CheckpointError, "the streaming checkpoint '"
                + checkpointLocation + "' has no " + METADATA_FILE + " file (" + path + "); Spark writes it with the"
                + " query's id when the query starts. The kstream sink needs it to write each batch exactly once: start"
                + " the query with this checkpoint location (Spark creates it), or restore the whole checkpoint"
                + " directory");
        } catch (IOException e) {
            throw new KStreamException(KStreamException.Kind.CheckpointError, "cannot read the streaming checkpoint's"
                + " metadata " + path + ": " + e);
        }
        if (raw.length > MAX_METADATA_BYTES) {
            throw new KStreamException(KStreamException.Kind.CheckpointError, path + " is over " + MAX_METADATA_BYTES
                + " bytes: not a Spark query's metadata file");
        }
        return new String(raw, StandardCharsets.UTF_8);
    }
}

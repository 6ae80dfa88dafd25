package io.kstream.spark.format;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * A replica's {@code cleaner-offset-checkpoint} (docs/FORMAT.md, "Cleaned segments"): the offset
 * the last clean of the replica ended at, as ASCII digits and a newline, the JVM's copy of
 * Python's replica_cleaner.read_checkpoint. The cleaner writes it (tmp, fsync, rename, fsync the
 * directory) only after the cleaned segments are swapped in, so every frame wholly below it has
 * been cleaned. A missing or damaged file is -1 ("never cleaned": all dirty).
 */
public final class CleanerCheckpoint {
    private CleanerCheckpoint() {
    }

    /** The offset the last clean ended at, or -1 when none is recorded (missing or damaged). */
    public static long read(String replicaDir) throws IOException {
        byte[] raw;
        try {
            raw = Files.readAllBytes(Path.of(replicaDir, Format.CLEANER_CHECKPOINT_FILE));
        } catch (NoSuchFileException e) {
            return -1;
        }
        String text = new String(raw, StandardCharsets.US_ASCII).strip();
        if (text.isEmpty() || text.length() > 18) return -1;
        for (int i = 0; i < text.length(); i++) if (text.charAt(i) < '0' || text.charAt(i) > '9') return -1;
        return Long.parseLong(text);
    }
}

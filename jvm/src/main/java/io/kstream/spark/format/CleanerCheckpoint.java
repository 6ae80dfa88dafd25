package io.kstream.spark.format;

import io.kstream.spark.error.KStreamException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * A replica's {@code cleaner-offset-checkpoint} (docs/FORMAT.md, "Cleaned segments"): the offset
 * the last clean of the replica ended at, as ASCII digits and a newline, the JVM's copy of
 * Python's cleaner_checkpoint.read_trusted_checkpoint (what a latestPerKey reader trusts). The
 * cleaner writes it (tmp, fsync, rename, fsync the directory) only after the cleaned segments are
 * swapped in, so every frame wholly below it has been cleaned. A missing file is -1 ("never
 * cleaned": all dirty); one that exists but cannot be read, or holds no offset, is a
 * KStreamError naming it (it was damaged or edited: which part the cleaner reduced is unknown),
 * in Python's words.
 */
public final class CleanerCheckpoint {
    /** The most digits an offset written there has (a long's 19th digit could overflow). */
    public static final int MAX_DIGITS = 18;
    /** The most characters of a damaged file's content an error quotes. */
    private static final int QUOTED_CHARS = 40;

    private CleanerCheckpoint() {
    }

    /** The offset the last clean ended at, or -1 when the file is missing (never cleaned). */
    public static long read(String replicaDir) {
        Path path = Path.of(replicaDir, Format.CLEANER_CHECKPOINT_FILE);
        byte[] raw;
        try {
            raw = Files.readAllBytes(path);
        } catch (NoSuchFileException e) {
            return -1;
        } catch (IOException e) {
            throw damaged(path, "cannot be read (" + e + ")");
        }
        String text = new String(raw, StandardCharsets.US_ASCII).strip();
        boolean digits = !text.isEmpty() && text.length() <= MAX_DIGITS;
        for (int i = 0; digits && i < text.length(); i++) digits = text.charAt(i) >= '0' && text.charAt(i) <= '9';
        if (!digits) {
            String quoted = text.length() > QUOTED_CHARS ? text.substring(0, QUOTED_CHARS) + "..." : text;
            throw damaged(path, "holds '" + quoted + "', not an offset");
        }
        return Long.parseLong(text);
    }

    private static KStreamException damaged(Path path, String problem) {
        return new KStreamException(KStreamException.Kind.KStreamError, "the log cleaner's checkpoint " + path + " "
            + problem + ": kstream writes it whole, so it was damaged or edited, and a latestPerKey read cannot tell "
            + "which part of the partition the cleaner reduced; delete it (the partition then counts as never "
            + "cleaned, which is safe: the next clean writes it again) and run the read again");
    }
}

package io.kstream.spark.format;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Every fsync / fdatasync the Java writer makes, as Python's disk layer
 * ({@code kstream.log.storage.disk}: {@code fsync}, {@code fdatasync}, {@code fsync_dir}): with
 * the chaos harness's power-cut journal on ({@code KSTREAM_POWER_JOURNAL}, {@link PowerJournal})
 * what the call makes durable is recorded first; otherwise it is the bare {@link FileChannel#force}.
 * The record is made before the real fsync: a process killed during an fsync counts it as done,
 * which a power loss at that instant also allows.
 */
public final class Fsync {
    private Fsync() {}

    /** {@code channel.force(metadata)} of the file at {@code path} (fsync, or fdatasync when false). */
    public static void force(FileChannel channel, Path path, boolean metadata) throws IOException {
        if (PowerJournal.enabled()) PowerJournal.recordFile(channel, path);
        channel.force(metadata);
    }

    /** fsync a directory: its entries (names created, renamed, removed) are durable after it. */
    public static void directory(String directory) throws IOException {
        Path path = Path.of(directory);
        if (PowerJournal.enabled()) PowerJournal.recordDirectory(path);
        try (FileChannel c = Channels.open(path, StandardOpenOption.READ)) {
            c.force(true);
        }
    }
}

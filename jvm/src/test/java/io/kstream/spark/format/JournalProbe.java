package io.kstream.spark.format;

import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Records files and directories into the power-cut journal named by KSTREAM_POWER_JOURNAL, as the
 * Java writer's fsyncs do ({@link Fsync}), for tests/jvm/test_power_journal.py (which compares
 * the records with Python's {@code faults.record} of the same paths). Run with
 * {@code --add-opens=java.base/sun.nio.ch=ALL-UNNAMED}.
 *
 * <pre>
 * record PATH...     each path: a directory's listing, or a file's content through a channel of it
 * </pre>
 */
public final class JournalProbe {
    private JournalProbe() {}

    public static void main(String[] args) throws Exception {
        if (!args[0].equals("record")) throw new IllegalArgumentException("unknown command " + args[0]);
        if (!PowerJournal.enabled()) throw new IllegalStateException(PowerJournal.ENV + " is not set");
        for (int i = 1; i < args.length; i++) {
            Path path = Path.of(args[i]);
            if (Files.isDirectory(path)) {
                Fsync.directory(args[i]);
            } else {
                try (FileChannel channel = Channels.open(path, StandardOpenOption.READ)) {
                    Fsync.force(channel, path, false);
                }
            }
        }
    }
}

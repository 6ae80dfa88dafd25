package io.kstream.spark.options;

import io.kstream.spark.KStreamProvider;
import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.Format;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Which reader serves a {@code format("kstream")} read: option {@code reader} = jvm, python or
 * auto (the default). auto takes the JVM reader unless the read uses something only the
 * Python reader does (listed here), the cluster has no metadata-snapshot.json yet (made by a
 * kstream older than the JVM reader, and not opened since), or a typed topic has a column type
 * the JVM reader does not convert (KStreamProvider); python always delegates; jvm refuses such a read with a
 * ConfigError naming option 'reader' and the option at fault. Writes never come here: they
 * always go to the Python sink.
 */
public final class ReaderChoice {
    public static final String OPTION = "reader";
    public static final String CHECK_CRCS_OPTION = "check.crcs";
    public static final String GROUP_ID = "group.id";

    /** Options (lower case) only the Python reader implements, and why. */
    private static final String[][] PYTHON_ONLY = {
        {"valueformat", "valueFormat (Avro values)"},
        {"avroschema", "avroSchema (Avro values)"},
        {GROUP_ID, "group.id (consumer-group commits)"},
        {"auto.offset.reset", "auto.offset.reset (startingOffsets=group)"},
        {"auto.commit.interval.ms", "auto.commit.interval.ms (consumer-group commits)"},
        {"maxbytespertrigger", "maxBytesPerTrigger"},
        {"minpartitions", "minPartitions"},
        {"maxrecordsperpartition", "maxRecordsPerPartition"},
    };

    public enum Reader { JVM, PYTHON }

    private ReaderChoice() {}

    /** The reader for these options (JVM or PYTHON); ConfigError for a forced jvm read it cannot do. */
    public static Reader choose(Map<String, String> options) {
        Map<String, String> lower = ReaderOptions.lowered(options);
        String asked = lower.getOrDefault(OPTION, "auto").toLowerCase(Locale.ROOT);
        if (!asked.equals("auto") && !asked.equals("jvm") && !asked.equals("python")) {
            throw KStreamException.config("option 'reader': '" + lower.get(OPTION) + "' is not jvm, python or auto");
        }
        if (asked.equals("python")) return Reader.PYTHON;
        // Both readers refuse latestPerKey with split-cutting options in the same words; checked
        // before those options would send the read to Python (or refuse reader=jvm otherwise).
        ReaderOptions.checkLatestPerKey(lower, null);
        List<String> unsupported = unsupported(lower, asked.equals("jvm"));
        if (unsupported.isEmpty() && asked.equals("auto") && !snapshotExists(lower)) {
            return Reader.PYTHON; // a cluster no kstream with the snapshot writer has opened yet
        }
        if (unsupported.isEmpty()) return Reader.JVM;
        if (asked.equals("jvm")) {
            throw KStreamException.config("option 'reader' is jvm, but the JVM reader does not do "
                + String.join(", ", unsupported) + "; use reader=python or reader=auto (docs/JVM_READER.md)");
        }
        return Reader.PYTHON;
    }

    /** Whether the options leave the choice to kstream (reader=auto, the default). */
    public static boolean isAuto(Map<String, String> options) {
        return ReaderOptions.lowered(options).getOrDefault(OPTION, "auto").equalsIgnoreCase("auto");
    }

    private static boolean snapshotExists(Map<String, String> lower) {
        return new java.io.File(ReaderOptions.clusterPath(lower), io.kstream.spark.format.Format.METADATA_SNAPSHOT).isFile();
    }

    /**
     * What only the Python reader does among these options. {@code forcedJvm}: reader=jvm, where
     * group.id is left to the scan, which alone knows batch from streaming: a batch read refuses it
     * as Python's does (ReaderOptions.BATCH_GROUP_ID), a stream refuses it as a commit only the
     * Python reader makes (KStreamScan). Under auto, group.id sends the read to Python.
     */
    static List<String> unsupported(Map<String, String> lower, boolean forcedJvm) {
        List<String> out = new ArrayList<>();
        for (String[] entry : PYTHON_ONLY) {
            boolean plainBinary = entry[0].equals("valueformat") && "binary".equals(lower.get(entry[0]));
            if (forcedJvm && entry[0].equals(GROUP_ID)) continue;
            if (lower.containsKey(entry[0]) && !plainBinary) out.add("option " + entry[1]);
        }
        for (String name : new String[] {"startingoffsets", "endingoffsets"}) {
            String v = lower.get(name);
            if (v != null && (v.equals("group") || v.startsWith("group@"))) out.add(name + "=" + v + " (consumer-group offsets)");
        }
        return out;
    }
}

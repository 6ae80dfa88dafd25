package io.kstream.spark.error;

/**
 * The JVM reader's errors, one class with a kind, mirroring Python's KStreamError hierarchy
 * (ConfigError, TopicNotFoundError, PartitionNotFoundError, OffsetOutOfRangeError,
 * CorruptBatchError). The message starts with the Python class name so both readers' errors
 * read (and match in tests) the same way.
 */
public class KStreamException extends RuntimeException {
    public enum Kind { ConfigError, TopicNotFoundError, PartitionNotFoundError, OffsetOutOfRangeError,
        CorruptBatchError, InvalidRecordError, KStreamError, FencedError, CheckpointError, ClusterError }

    public final Kind kind;

    public KStreamException(Kind kind, String message) {
        super(kind + ": " + message);
        this.kind = kind;
    }

    public KStreamException(Kind kind, String message, Throwable cause) {
        super(kind + ": " + message, cause);
        this.kind = kind;
    }

    public static KStreamException config(String message) {
        return new KStreamException(Kind.ConfigError, message);
    }

    public static KStreamException outOfRange(String message) {
        return new KStreamException(Kind.OffsetOutOfRangeError, message);
    }

    /** A bad frame, named by file, position and offset (as Python's CorruptBatchError). */
    public static KStreamException corrupt(String problem, String path, long position, long offset) {
        return new KStreamException(Kind.CorruptBatchError,
            problem + ": " + path + " at position " + position + " (offset " + offset + ")");
    }
}

package io.kstream.spark.read;

import io.kstream.spark.error.KStreamException;

/**
 * The error of a tier table data file with rows kstream never writes (a null {@code offset} or
 * {@code timestamp}: the table was damaged or written by another writer), in the words of
 * Python's {@code lake_reader.lake_row_error}, word for word: a lookup by time
 * ({@link LakeTimestampLookup}), a read of the lake ({@link LakePartitionReader}) and
 * latestPerKey's first pass ({@link LatestOffsets}) refuse such a file alike, as the Python
 * reader does, rather than skip the rows.
 */
final class LakeRowError {
    private LakeRowError() {}

    /** {@code rows}: how many rows of the file have the column null. */
    static KStreamException of(TopicPartition tp, String tableDir, long version, String filePath, long rows,
                               String column) {
        return new KStreamException(KStreamException.Kind.KStreamError, tp + ": the tier table " + tableDir
            + " (Delta version " + version + "): its data file " + filePath + " has " + rows
            + " row(s) with a null " + column + "; kstream never writes such a row, so the table is damaged or was "
            + "written by another writer: restore the table from a backup (the log may still hold these offsets)");
    }
}

package io.kstream.spark.read;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.lake.LakeFile;
import io.kstream.spark.lake.TierTable;
import java.util.List;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Offset for a timestamp in a tiered partition's lake, the rule of Python's
 * {@code LakeSnapshot.record_for_timestamp} (src/kstream/tiering/lake_reader.py): the smallest
 * offset below the lake end (at the pinned version) whose record's timestamp is at or after the
 * time. The lake holds committed records only (no aborted record, no marker), so the answer is
 * the same at either isolation level. Files are read in offset order ({@code offset} and
 * {@code timestamp} columns only), those whose {@code timestamp} statistics end before the time
 * skipped, and the lookup stops at the first file past an answer. The union read asks the lake
 * first and the log only when the lake has no such record ({@link PartitionPlanner}). A row with a
 * null {@code offset} or {@code timestamp} (kstream never writes one: the table was damaged or
 * written by another writer) fails the lookup, in the words of Python's
 * {@code lake_reader.lake_row_error}, rather than be skipped (which answered a later offset). Reads only.
 */
final class LakeTimestampLookup {
    private static final List<String> COLUMNS = List.of(TierTable.OFFSET_COLUMN, "timestamp");

    private LakeTimestampLookup() {}

    /** The offset, or -1 when no record of the lake is at or after {@code timestampMs}. */
    static long find(TopicPartition tp, TierTable.PartitionLake lake, long timestampMs) {
        if (timestampMs > Long.MAX_VALUE / 1000) return -1; // later than any timestamp a record holds
        long wantedUs = Math.max(timestampMs, Long.MIN_VALUE / 1000) * 1000;
        long best = -1;
        for (LakeFile file : lake.files) { // by first offset (files of unknown offsets first)
            if (best >= 0 && file.minOffset != LakeFile.UNKNOWN && file.minOffset > best) break;
            if (!file.mayReach(wantedUs)) continue;
            long found = firstIn(tp, lake, file, wantedUs);
            if (found >= 0 && (best < 0 || found < best)) best = found;
        }
        return best;
    }

    private static long firstIn(TopicPartition tp, TierTable.PartitionLake lake, LakeFile file, long wantedUs) {
        long best = -1;
        long nullOffsets = 0;
        long nullStamps = 0;
        String where = lake.tableDir + " (Delta version " + lake.version + ")";
        try (LakeColumns columns = new LakeColumns(where, file, COLUMNS)) {
            while (columns.next()) {
                ColumnarBatch batch = columns.batch();
                ColumnVector offsets = batch.column(0);
                ColumnVector stamps = batch.column(1);
                if (stamps.dataType() != DataTypes.TimestampType && stamps.dataType() != DataTypes.TimestampNTZType) {
                    throw new KStreamException(KStreamException.Kind.KStreamError, "the tier table " + where
                        + ": its data file " + file.path + " holds column 'timestamp' as "
                        + stamps.dataType().catalogString() + ", not a timestamp: not a kstream tier table's file");
                }
                int n = batch.numRows();
                nullOffsets += offsets.numNulls();
                nullStamps += stamps.numNulls();
                if (nullOffsets > 0 || nullStamps > 0) continue; // counted to the end of the file, then refused
                for (int r = 0; r < n; r++) {
                    long offset = offsets.getLong(r);
                    if (offset < lake.end && stamps.getLong(r) >= wantedUs && (best < 0 || offset < best)) best = offset;
                }
            }
        }
        if (nullOffsets > 0) throw rowError(tp, lake, file, nullOffsets, TierTable.OFFSET_COLUMN);
        if (nullStamps > 0) throw rowError(tp, lake, file, nullStamps, "timestamp");
        return best;
    }

    /** {@link LakeRowError}: Python's {@code lake_reader.lake_row_error}, word for word. */
    private static KStreamException rowError(TopicPartition tp, TierTable.PartitionLake lake, LakeFile file,
                                             long rows, String column) {
        return LakeRowError.of(tp, lake.tableDir, lake.version, file.path, rows, column);
    }
}

package io.kstream.spark.read;

import io.kstream.spark.lake.LakeFile;
import org.apache.spark.sql.connector.read.InputPartition;

/**
 * One Spark input split of a union read's lake part: the rows of one data file of a tier table
 * (at the version pinned when the read was planned) whose offsets are in [start, end) of one
 * topic-partition. Serializable; carries no open file.
 */
public final class LakeRange implements InputPartition {
    private static final long serialVersionUID = 1L;
    public final TopicPartition tp;
    public final String tableDir;
    public final long tableVersion;
    public final LakeFile file;
    public final long start;
    public final long end;

    public LakeRange(TopicPartition tp, String tableDir, long tableVersion, LakeFile file, long start, long end) {
        this.tp = tp;
        this.tableDir = tableDir;
        this.tableVersion = tableVersion;
        this.file = file;
        this.start = start;
        this.end = end;
    }

    @Override
    public String toString() {
        return tp + "[" + start + ", " + end + ") from " + file.path + " (Delta version " + tableVersion + ")";
    }
}

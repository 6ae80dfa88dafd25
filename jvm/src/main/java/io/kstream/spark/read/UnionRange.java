package io.kstream.spark.read;

import java.util.List;
import org.apache.spark.sql.connector.read.InputPartition;

/**
 * One Spark input split of a latestPerKey read of a tiered partition whose range starts below
 * its lake end: the lake's part (one {@link LakeRange} per data file, in offset order, at the
 * version pinned when the read was planned) and the log's part after it ({@code log}, null when
 * the range ends inside the lake), reduced together in one task ({@link LatestPerKeyReader}):
 * all of a key's records are in its partition, lake and log alike. Serializable; carries no
 * open file.
 */
public final class UnionRange implements InputPartition {
    private static final long serialVersionUID = 1L;
    public final TopicPartition tp;
    public final List<LakeRange> lake;
    public final OffsetRange log;

    public UnionRange(TopicPartition tp, List<LakeRange> lake, OffsetRange log) {
        assert !lake.isEmpty() : "a union range without a lake part is an OffsetRange";
        this.tp = tp;
        this.lake = List.copyOf(lake);
        this.log = log;
    }

    @Override
    public String toString() {
        LakeRange first = lake.get(0);
        return tp + "[" + first.start + ", " + (log == null ? first.end : log.end) + ") from the tier table "
            + first.tableDir + " (Delta version " + first.tableVersion + ", " + lake.size() + " files)"
            + (log == null ? "" : " and the log from " + log.start);
    }
}

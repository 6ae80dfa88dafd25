package io.kstream.spark.lake;

import io.kstream.spark.error.KStreamException;
import java.io.File;
import java.io.IOException;
import java.io.Serializable;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.column.statistics.Statistics;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.util.HadoopInputFile;

/**
 * A tiered topic's Delta table as the union read sees it (docs/TIERING.md, docs/JVM_READER.md
 * "Tiered topics"): the table named by topic config {@code tier.delta.path}, and per kstream
 * partition its lake at the pinned version ({@link PartitionLake}): the lake end (the highest
 * version of app transaction {@code kstream.tier/<topic id>/<partition>}, 0 when there is none:
 * nothing tiered), the first offset a row holds, and the data files.
 */
public final class TierTable {
    public static final String TIER_DELTA_PATH = "tier.delta.path";
    public static final String OFFSET_COLUMN = "offset";

    private TierTable() {}

    /** The Delta app id of one partition's tier commits (Python's kstream.tiering.lake_table.app_id). */
    public static String appId(String topicId, int partition) {
        return "kstream.tier/" + topicId + "/" + partition;
    }

    /**
     * The local directory a {@code tier.delta.path} value names: an absolute path or a file:// URI
     * (Python's log_config.tier_table_dir checked it when the config was set).
     */
    public static String directory(String value) {
        String text = value.strip();
        if (text.contains("://") || text.startsWith("file:")) {
            try {
                URI uri = new URI(text);
                if (!"file".equals(uri.getScheme())) {
                    throw KStreamException.config("option 'tier.delta.path': '" + value + "' uses the scheme '"
                        + uri.getScheme() + "': only local directories are supported yet");
                }
                text = uri.getPath();
            } catch (URISyntaxException e) {
                throw KStreamException.config("option 'tier.delta.path': '" + value + "' is not a valid URI: " + e);
            }
        }
        if (text == null || !new File(text).isAbsolute()) {
            throw KStreamException.config("option 'tier.delta.path': '" + value + "' is not absolute: give an "
                + "absolute directory path or a file:///... URI");
        }
        return Paths.get(text).normalize().toString();
    }

    /** One partition's lake at the pinned version. Serializable; carries no open file. */
    public static final class PartitionLake implements Serializable {
        private static final long serialVersionUID = 1L;
        public final String tableDir;
        public final long version;
        /** The lake holds every committed record below this offset (and nothing at or past it). */
        public final long end;
        /** The first offset a row of the lake holds ({@link #end} when it holds none; 0 when a file's offsets are unknown). */
        public final long start;
        /** The partition's data files, by first offset (files without statistics first). */
        public final List<LakeFile> files;

        PartitionLake(String tableDir, long version, long end, long start, List<LakeFile> files) {
            this.tableDir = tableDir;
            this.version = version;
            this.end = end;
            this.start = start;
            this.files = files;
        }

        /** The files that may hold offsets in [from, to) (statistics prune the others). */
        public List<LakeFile> filesFor(long from, long to) {
            List<LakeFile> out = new ArrayList<>();
            for (LakeFile f : files) if (f.mayHold(from, to)) out.add(f);
            return out;
        }
    }

    /** Partition {@code partition}'s lake in {@code snapshot} (end 0 and no files: nothing tiered). */
    public static PartitionLake partition(DeltaSnapshot snapshot, String topicId, int partition) {
        Long version = snapshot.transactionVersion(appId(topicId, partition));
        long end = version == null ? 0 : version;
        List<LakeFile> files = new ArrayList<>();
        if (end > 0) {
            for (LakeFile f : snapshot.files) {
                if (f.partition != partition) continue;
                files.add(f.minOffset == LakeFile.UNKNOWN ? withFooterStats(snapshot.tableDir, f) : f);
            }
        }
        files.sort(Comparator.comparingLong(f -> f.minOffset));
        long start = end;
        // a file of unknown offsets (no statistics anywhere) may start anywhere: the lake then starts at 0
        for (LakeFile f : files) start = Math.min(start, f.minOffset == LakeFile.UNKNOWN ? 0 : f.minOffset);
        return new PartitionLake(snapshot.tableDir, snapshot.version, end, start, List.copyOf(files));
    }

    /**
     * A file whose add action has no offset statistics (a typed topic with more columns than
     * Delta indexes), with the offsets its Parquet footer's column statistics give, when they do.
     */
    private static LakeFile withFooterStats(String tableDir, LakeFile file) {
        long min = Long.MAX_VALUE;
        long max = Long.MIN_VALUE;
        try (ParquetFileReader reader = ParquetFileReader.open(HadoopInputFile.fromPath(new Path(file.path),
                new Configuration()))) {
            for (BlockMetaData block : reader.getFooter().getBlocks()) {
                if (block.getRowCount() == 0) continue;
                Statistics<?> stats = null;
                for (ColumnChunkMetaData column : block.getColumns()) {
                    if (column.getPath().toDotString().equals(OFFSET_COLUMN)) stats = column.getStatistics();
                }
                if (stats == null || !stats.hasNonNullValue() || !(stats.genericGetMin() instanceof Long)) return file;
                min = Math.min(min, (Long) stats.genericGetMin());
                max = Math.max(max, (Long) stats.genericGetMax());
            }
        } catch (IOException e) {
            throw DeltaSnapshot.lakeError(tableDir, "cannot read the footer of its data file " + file.path + ": " + e);
        }
        if (min > max) return file; // no rows
        return new LakeFile(file.path, file.partition, min, max, file.maxTimestampUs);
    }
}

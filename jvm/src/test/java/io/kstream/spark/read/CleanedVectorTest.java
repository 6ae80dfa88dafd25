package io.kstream.spark.read;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import io.kstream.spark.format.Frame;
import io.kstream.spark.format.LogReader;
import io.kstream.spark.format.SharedAllocator;
import io.kstream.spark.format.SharedVectors;
import io.kstream.spark.options.ReaderOptions;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.Test;

/**
 * The vectors' compacted topic after the log cleaner ran (tests/jvm/cleaned_vectors.py: version 1
 * frames, sparse version 2 frames of every codec, a cleaned committed transaction, tombstones,
 * fillers, an aborted transaction after the clean's end): the JVM reader walks its frames as
 * format.py did, and its partition reader's frame loop ({@link VisibleFrames}, under the
 * ColumnarBatch assembly tests/spark checks) returns exactly the rows of the manifest's oracle (which
 * Python's readers return too) for every [start, end) of the partition under both isolation
 * levels, starts and ends inside gaps and inside cleaned frames included, with failOnDataLoss on
 * (a gap is not data loss); {@link TimestampLookup} and the planner answer the oracle's lookups.
 */
class CleanedVectorTest {
    private static final String TOPIC = "cleaned";

    private static JsonNode cleaned() {
        return SharedVectors.manifest().path("cleaned");
    }

    private static PartitionPlanner planner(String isolation) {
        return new PartitionPlanner(ReaderOptions.parse(Map.of("cluster", SharedVectors.cluster(), "subscribe", TOPIC,
            "isolation.level", isolation), false));
    }

    @Test
    void framesWalkAsFormatPyWalkedThem() {
        JsonNode expected = SharedVectors.manifest().path("replicas").path("cleaned-0");
        List<String> walked = new ArrayList<>();
        List<String> written = new ArrayList<>();
        for (JsonNode f : expected.path("frames")) {
            written.add(f.path("base_offset").asLong() + "+" + f.path("record_count").asInt() + " v"
                + f.path("version").asInt() + " attributes " + f.path("attributes").asInt());
        }
        try (LogReader reader = new LogReader(SharedVectors.replicaDir("cleaned-0"), true)) {
            reader.seek(0);
            for (Frame f = reader.next(Long.MAX_VALUE); f != null; f = reader.next(Long.MAX_VALUE)) {
                walked.add(f.header.baseOffset + "+" + f.header.recordCount + " v" + f.header.version + " attributes "
                    + f.header.attributes);
            }
            assertEquals(expected.path("log_end_offset").asLong(), reader.logEndOffset());
        }
        assertEquals(written, walked);
    }

    /** "offset key value timestamp-ms" of every row {@link VisibleFrames} hands out of [start, end). */
    private static List<String> read(PartitionPlanner planner, long start, long end) {
        TopicPartition tp = new TopicPartition(TOPIC, 0);
        PartitionPlanner.Bounds b = planner.bounds(tp);
        List<String> out = new ArrayList<>();
        try (BufferAllocator allocator = SharedAllocator.child("cleaned-vector-test");
             VisibleFrames frames = new VisibleFrames(new OffsetRange(tp, b.leaderDir, start, end, b.transactions),
                 Set.of("key", "value", "timestamp"), true, true, allocator)) {
            while (frames.next()) {
                VectorSchemaRoot root = frames.root();
                assertEquals(frames.count(), root.getRowCount());
                for (int r = 0; r < frames.count(); r++) {
                    out.add(frames.rowOffset(r) + " " + text(root.getVector("key"), r) + " "
                        + text(root.getVector("value"), r) + " " + ((BigIntVector) root.getVector("timestamp")).get(r));
                }
            }
            assertEquals(end, Math.max(frames.position(), start), "position after [" + start + ", " + end + ")");
        }
        return out;
    }

    private static String text(FieldVector column, int row) {
        if (column == null || column.isNull(row)) return "null";
        return new String(((VarBinaryVector) column).get(row), StandardCharsets.UTF_8);
    }

    @Test
    void everyRangeReadsTheOraclesRowsUnderBothIsolationLevels() throws Exception {
        for (String isolation : List.of("read_committed", "read_uncommitted")) {
            List<long[]> offsets = new ArrayList<>();
            List<String> rows = new ArrayList<>();
            for (JsonNode row : cleaned().path("rows").path(isolation)) {
                offsets.add(new long[] {row.get(0).asLong()});
                rows.add(row.get(0).asLong() + " " + row.get(1).asText() + " "
                    + (row.get(2).isNull() ? "null" : row.get(2).asText()) + " " + row.get(3).asLong());
            }
            PartitionPlanner planner = planner(isolation);
            long end = planner.bounds(new TopicPartition(TOPIC, 0)).end;
            assertEquals(SharedVectors.manifest().path("replicas").path("cleaned-0").path("log_end_offset").asLong(), end,
                isolation + ": the read's end (HW, or LSO: no transaction is open)");
            for (long from = 0; from <= end; from++) {
                for (long to = from; to <= end; to++) {
                    List<String> expected = new ArrayList<>();
                    for (int i = 0; i < rows.size(); i++) {
                        if (offsets.get(i)[0] >= from && offsets.get(i)[0] < to) expected.add(rows.get(i));
                    }
                    assertEquals(expected, read(planner, from, to), isolation + " [" + from + ", " + to + ")");
                }
            }
        }
    }

    @Test
    void timestampLookupsAnswerAsTheOracle() {
        List<String> wrong = new ArrayList<>();
        for (JsonNode row : cleaned().path("timestamps")) {
            String isolation = row.path("isolation").asText();
            long target = row.path("target").asLong();
            PartitionPlanner planner = planner(isolation);
            TopicPartition tp = new TopicPartition(TOPIC, 0);
            TimestampLookup.Found found = TimestampLookup.find(planner.bounds(tp), target, true);
            String got = found == null ? "-1@-1" : found.offset + "@" + found.timestampMs;
            String expected = row.path("offset").asLong() + "@" + row.path("timestamp").asLong();
            long planned = planner.offsetForTimestamp(tp, target);
            if (!got.equals(expected) || planned != row.path("offset").asLong()) {
                wrong.add(isolation + " target " + target + ": expected " + expected + ", TimestampLookup " + got
                    + ", planner " + planned);
            }
        }
        assertEquals(List.of(), wrong);
    }
}

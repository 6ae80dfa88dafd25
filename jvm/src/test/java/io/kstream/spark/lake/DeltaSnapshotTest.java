package io.kstream.spark.lake;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kstream.spark.error.KStreamException;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.SimpleGroupFactory;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Delta log replay of the union read (docs/JVM_READER.md, "Tiered topics"): hand-written
 * commits in the shapes delta-rs writes (tests/spark/test_jvm_union_read.py reads tables
 * deltalake itself made): the live files after adds and removes, a partition's lake end as the
 * highest version of its app transaction, statistics pruning, a Parquet checkpoint followed by
 * commits, and the refusals (a missing commit, reader features it does not read, a table not
 * partitioned by partition).
 */
class DeltaSnapshotTest {
    private static final String TOPIC_ID = "5bff62e951da4ad5b5c5a92b9ca99258";
    private static final String PROTOCOL = "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}";
    private static final String META = "{\"metaData\":{\"id\":\"x\",\"name\":\"t\",\"description\":\"kstream topic 't'\","
        + "\"format\":{\"provider\":\"parquet\",\"options\":{}},\"schemaString\":\"{}\",\"partitionColumns\":[\"partition\"],"
        + "\"configuration\":{\"delta.appendOnly\":\"true\"}}}";

    @TempDir
    Path dir;

    private void commit(long version, String... actions) throws IOException {
        Path log = dir.resolve(DeltaSnapshot.LOG_DIR);
        Files.createDirectories(log);
        Files.writeString(log.resolve(String.format("%020d.json", version)), String.join("\n", actions) + "\n",
            StandardCharsets.UTF_8);
    }

    private static String add(String path, int partition, Long min, Long max) {
        String stats = min == null ? "null" : "\"{\\\"numRecords\\\":3,\\\"minValues\\\":{\\\"offset\\\":" + min
            + "},\\\"maxValues\\\":{\\\"offset\\\":" + max + "}}\"";
        return "{\"add\":{\"path\":\"" + path + "\",\"partitionValues\":{\"partition\":\"" + partition + "\"},"
            + "\"size\":10,\"modificationTime\":1,\"dataChange\":true,\"stats\":" + stats + "}}";
    }

    private static String txn(int partition, long version) {
        return "{\"txn\":{\"appId\":\"" + TierTable.appId(TOPIC_ID, partition) + "\",\"version\":" + version + "}}";
    }

    @Test
    void noTableIsNothingTiered() {
        DeltaSnapshot s = DeltaSnapshot.latest(dir.resolve("missing").toString());
        assertEquals(-1, s.version);
        assertTrue(s.files.isEmpty());
        TierTable.PartitionLake lake = TierTable.partition(s, TOPIC_ID, 0);
        assertEquals(0, lake.end);
    }

    @Test
    void replaysAddsRemovesAndTheHighestTransactionVersion() throws IOException {
        commit(0, PROTOCOL, META, add("partition=0/a.parquet", 0, 0L, 9L), add("partition=1/b.parquet", 1, 0L, 4L),
            txn(0, 12), txn(1, 6));
        offsetsFile("partition=0/e.parquet", 12, 13); // no statistics in its add: its footer's are read
        commit(1, add("partition=0/c%20d.parquet", 0, 14L, 20L), add("partition=0/e.parquet", 0, null, null),
            "{\"remove\":{\"path\":\"partition=1/b.parquet\",\"dataChange\":true}}", txn(0, 22));
        commit(2, txn(0, 21)); // a lower version later: the highest one counts
        DeltaSnapshot s = DeltaSnapshot.latest(dir.toString());
        assertEquals(2, s.version);
        assertEquals(22L, s.transactionVersion(TierTable.appId(TOPIC_ID, 0)));
        assertEquals(6L, s.transactionVersion(TierTable.appId(TOPIC_ID, 1)));
        assertNull(s.transactionVersion(TierTable.appId(TOPIC_ID, 2)));
        assertEquals("kstream topic 't'", s.description);
        List<String> paths = new ArrayList<>();
        for (LakeFile f : s.files) paths.add(f.path);
        assertEquals(List.of(dir.resolve("partition=0/a.parquet").toString(), dir.resolve("partition=0/c d.parquet").toString(),
            dir.resolve("partition=0/e.parquet").toString()), paths);

        TierTable.PartitionLake p0 = TierTable.partition(s, TOPIC_ID, 0);
        assertEquals(22, p0.end);
        assertEquals(0, p0.start);
        assertEquals(2, p0.filesFor(10, 22).size()); // c d.parquet by its add's statistics, e.parquet by its footer's
        assertEquals(1, p0.filesFor(0, 12).size());
        assertEquals(3, p0.filesFor(0, 22).size());
        TierTable.PartitionLake p1 = TierTable.partition(s, TOPIC_ID, 1);
        assertEquals(6, p1.end);
        assertTrue(p1.files.isEmpty()); // its only file was removed
        assertEquals(6, p1.start);
    }

    @Test
    void theLakeStartsAtItsFirstRowsOffset() throws IOException {
        commit(0, PROTOCOL, META, add("partition=0/a.parquet", 0, 27L, 40L), add("partition=0/b.parquet", 0, 43L, 50L),
            txn(0, 52));
        TierTable.PartitionLake lake = TierTable.partition(DeltaSnapshot.latest(dir.toString()), TOPIC_ID, 0);
        assertEquals(27, lake.start);
        assertEquals(List.of(), lake.filesFor(41, 43));
        assertEquals(1, lake.filesFor(40, 43).size());
    }

    @Test
    void aTimestampStatisticIsReadInMicroseconds() {
        // the tierer's form (milliseconds, Z), delta-rs's without a fraction, and what is not one
        long[] stats = DeltaSnapshot.offsetStats("{\"minValues\":{\"offset\":3},\"maxValues\":{\"offset\":9,"
            + "\"timestamp\":\"2026-11-28T06:00:00.124Z\"}}");
        assertEquals(1795845600124000L, stats[2]);
        assertEquals(3, stats[0]);
        assertEquals(1795845600000000L, DeltaSnapshot.micros("2026-11-28T06:00:00Z"));
        assertEquals(LakeFile.NO_TIMESTAMP, DeltaSnapshot.micros("2026-11-28 06:00:00"));
        assertEquals(LakeFile.NO_TIMESTAMP, DeltaSnapshot.offsetStats("{\"maxValues\":{\"offset\":9}}")[2]);
        LakeFile file = new LakeFile("f", 0, 3, 9, stats[2]);
        assertTrue(file.mayReach(1795845600124000L));
        assertTrue(!file.mayReach(1795845600125000L)); // every record of it is earlier: skipped
        assertTrue(new LakeFile("f", 0, 3, 9).mayReach(Long.MAX_VALUE)); // no statistic: read
    }

    @Test
    void aMissingCommitIsRefused() throws IOException {
        commit(0, PROTOCOL, META, txn(0, 3));
        commit(2, txn(0, 5));
        KStreamException e = assertThrows(KStreamException.class, () -> DeltaSnapshot.latest(dir.toString()));
        assertTrue(e.getMessage().contains("no commit file for version 1"), e.getMessage());
    }

    @Test
    void readerFeaturesItDoesNotReadAreRefused() throws IOException {
        commit(0, "{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,\"readerFeatures\":[\"deletionVectors\","
            + "\"timestampNtz\"],\"writerFeatures\":[]}}", META);
        KStreamException e = assertThrows(KStreamException.class, () -> DeltaSnapshot.latest(dir.toString()));
        assertTrue(e.getMessage().contains("reader features [deletionVectors]") && e.getMessage().contains("reader=python"),
            e.getMessage());
    }

    @Test
    void harmlessReaderFeaturesAreRead() throws IOException {
        commit(0, "{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,\"readerFeatures\":[\"timestampNtz\"]}}",
            META, txn(0, 1));
        assertEquals(1L, DeltaSnapshot.latest(dir.toString()).transactionVersion(TierTable.appId(TOPIC_ID, 0)));
    }

    @Test
    void columnMappingAndOtherPartitioningAreRefused() throws IOException {
        commit(0, PROTOCOL, META.replace("\"delta.appendOnly\":\"true\"", "\"delta.columnMapping.mode\":\"name\""));
        assertTrue(assertThrows(KStreamException.class, () -> DeltaSnapshot.latest(dir.toString())).getMessage()
            .contains("column mapping name"));
        commit(1, META.replace("[\"partition\"]", "[\"day\"]"));
        assertTrue(assertThrows(KStreamException.class, () -> DeltaSnapshot.latest(dir.toString())).getMessage()
            .contains("not a kstream tier table"));
    }

    @Test
    void aFileOutsideTheLocalFileSystemIsRefused() throws IOException {
        commit(0, PROTOCOL, META, add("s3://bucket/a.parquet", 0, 0L, 1L));
        assertTrue(assertThrows(KStreamException.class, () -> DeltaSnapshot.latest(dir.toString())).getMessage()
            .contains("not on the local file system"));
    }

    private static final MessageType CHECKPOINT = MessageTypeParser.parseMessageType(
        "message spark_schema {"
        + " optional group add { required binary path (STRING);"
        + "   required group partitionValues (MAP) { repeated group key_value { required binary key (STRING);"
        + "     optional binary value (STRING); } }"
        + "   optional binary stats (STRING); }"
        + " optional group txn { required binary appId (STRING); required int64 version; }"
        + " optional group metaData { optional binary description (STRING);"
        + "   required group partitionColumns (LIST) { repeated group list { required binary element (STRING); } }"
        + "   required group configuration (MAP) { repeated group key_value { required binary key (STRING);"
        + "     required binary value (STRING); } } }"
        + " optional group protocol { required int32 minReaderVersion;"
        + "   optional group readerFeatures (LIST) { repeated group list { required binary element (STRING); } } }"
        + "}");

    private static final MessageType OFFSETS = MessageTypeParser.parseMessageType("message m { optional int64 offset; }");

    /** A data file of one column, offset, holding offsets first..last. */
    private void offsetsFile(String path, long first, long last) throws IOException {
        Files.createDirectories(dir.resolve(path).getParent());
        SimpleGroupFactory rows = new SimpleGroupFactory(OFFSETS);
        try (ParquetWriter<Group> writer = ExampleParquetWriter.builder(new org.apache.hadoop.fs.Path(
                dir.resolve(path).toString())).withConf(new Configuration()).withType(OFFSETS).build()) {
            for (long o = first; o <= last; o++) writer.write(rows.newGroup().append("offset", o));
        }
    }

    @Test
    void aFileWithoutStatisticsAnywhereMakesTheLakeStartAtZero() throws IOException {
        Files.createDirectories(dir.resolve("partition=0"));
        try (ParquetWriter<Group> writer = ExampleParquetWriter.builder(new org.apache.hadoop.fs.Path(
                dir.resolve("partition=0/f.parquet").toString())).withConf(new Configuration()).withType(OFFSETS)
                .withStatisticsEnabled(false).build()) {
            writer.write(new SimpleGroupFactory(OFFSETS).newGroup().append("offset", 30L));
        }
        commit(0, PROTOCOL, META, add("partition=0/f.parquet", 0, null, null), txn(0, 31));
        TierTable.PartitionLake lake = TierTable.partition(DeltaSnapshot.latest(dir.toString()), TOPIC_ID, 0);
        assertEquals(0, lake.start); // it may start anywhere: earliest reads from 0, nothing is skipped
        assertEquals(1, lake.filesFor(0, 1).size());
    }

    private void checkpoint(long version, List<Group> rows) throws IOException {
        File file = dir.resolve(DeltaSnapshot.LOG_DIR).resolve(String.format("%020d.checkpoint.parquet", version)).toFile();
        try (ParquetWriter<Group> writer = ExampleParquetWriter.builder(new org.apache.hadoop.fs.Path(file.getPath()))
                .withConf(new Configuration()).withType(CHECKPOINT).build()) {
            for (Group row : rows) writer.write(row);
        }
    }

    @Test
    void aCheckpointThenTheCommitsAfterIt() throws IOException {
        commit(0, "not json: a commit the checkpoint replaces is never read");
        commit(1, "not json either");
        SimpleGroupFactory rows = new SimpleGroupFactory(CHECKPOINT);
        List<Group> actions = new ArrayList<>();
        Group protocol = rows.newGroup();
        protocol.addGroup("protocol").append("minReaderVersion", 1);
        actions.add(protocol);
        Group meta = rows.newGroup();
        Group m = meta.addGroup("metaData");
        m.append("description", "from the checkpoint");
        m.addGroup("partitionColumns").addGroup("list").append("element", "partition");
        m.addGroup("configuration").addGroup("key_value").append("key", "delta.appendOnly").append("value", "true");
        actions.add(meta);
        Map<String, long[]> files = new TreeMap<>(Map.of("partition=0/a.parquet", new long[] {0, 9},
            "partition=0/b.parquet", new long[] {10, 19}));
        for (Map.Entry<String, long[]> f : files.entrySet()) {
            Group row = rows.newGroup();
            Group add = row.addGroup("add");
            add.append("path", f.getKey());
            add.addGroup("partitionValues").addGroup("key_value").append("key", "partition").append("value", "0");
            add.append("stats", "{\"numRecords\":3,\"minValues\":{\"offset\":" + f.getValue()[0] + "},\"maxValues\":"
                + "{\"offset\":" + f.getValue()[1] + "}}");
            actions.add(row);
        }
        Group txn = rows.newGroup();
        txn.addGroup("txn").append("appId", TierTable.appId(TOPIC_ID, 0)).append("version", 20L);
        actions.add(txn);
        checkpoint(1, actions);
        commit(2, add("partition=0/c.parquet", 0, 20L, 25L), "{\"remove\":{\"path\":\"partition=0/a.parquet\"}}",
            txn(0, 26));
        DeltaSnapshot s = DeltaSnapshot.latest(dir.toString());
        assertEquals(2, s.version);
        assertEquals("from the checkpoint", s.description);
        TierTable.PartitionLake lake = TierTable.partition(s, TOPIC_ID, 0);
        assertEquals(26, lake.end);
        assertEquals(10, lake.start);
        List<String> names = new ArrayList<>();
        for (LakeFile f : lake.files) names.add(new File(f.path).getName());
        assertEquals(List.of("b.parquet", "c.parquet"), names);
    }

    @Test
    void tierDeltaPathValues() {
        assertEquals("/data/lake/t", TierTable.directory("/data/lake/t/"));
        assertEquals("/data/lake/a b", TierTable.directory("file:///data/lake/a%20b"));
        assertTrue(assertThrows(KStreamException.class, () -> TierTable.directory("s3://b/t")).getMessage()
            .contains("scheme 's3'"));
        assertTrue(assertThrows(KStreamException.class, () -> TierTable.directory("lake/t")).getMessage()
            .contains("not absolute"));
    }
}

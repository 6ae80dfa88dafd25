package io.kstream.spark.txn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kstream.spark.error.KStreamException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * MetadataDb's conventions (Python's Metadata): an existing kstream database only, WAL and
 * synchronous=FULL, the busy timeout, writes all or nothing, a missing table read as empty.
 * Against a database Python made: tests/jvm/test_sink_txn_conformance.py.
 */
class MetadataDbTest {
    @TempDir Path dir;

    private void makeCluster() throws SQLException {
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve(MetadataDb.FILE_NAME));
             Statement s = c.createStatement()) {
            s.execute("CREATE TABLE log_dirs (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, online INTEGER)");
            s.execute("CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)");
        }
    }

    @Test
    void refusesWhatIsNotAKStreamDatabaseAndCreatesNothing() throws IOException, SQLException {
        KStreamException missing = assertThrows(KStreamException.class, () -> MetadataDb.open(dir.toString()));
        assertEquals(KStreamException.Kind.ClusterError, missing.kind);
        assertTrue(missing.getMessage().contains("is missing"), missing.getMessage());
        assertTrue(Files.notExists(dir.resolve(MetadataDb.FILE_NAME)));
        Files.createFile(dir.resolve(MetadataDb.FILE_NAME));
        KStreamException empty = assertThrows(KStreamException.class, () -> MetadataDb.open(dir.toString()));
        assertTrue(empty.getMessage().contains("is empty"), empty.getMessage());
        Files.delete(dir.resolve(MetadataDb.FILE_NAME));
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve(MetadataDb.FILE_NAME));
             Statement s = c.createStatement()) {
            s.execute("CREATE TABLE other (x)");
        }
        KStreamException foreign = assertThrows(KStreamException.class, () -> MetadataDb.open(dir.toString()));
        assertTrue(foreign.getMessage().contains("not a kstream metadata database"), foreign.getMessage());
    }

    @Test
    void walFullSyncAndTheBusyTimeout() throws SQLException {
        makeCluster();
        try (MetadataDb db = MetadataDb.open(dir.toString())) {
            assertEquals("wal", db.read("PRAGMA journal_mode").get(0)[0]);
            assertEquals(2, ((Number) db.read("PRAGMA synchronous").get(0)[0]).intValue());  // FULL
            assertEquals(MetadataDb.BUSY_TIMEOUT_MS, ((Number) db.read("PRAGMA busy_timeout").get(0)[0]).intValue());
        }
    }

    @Test
    void aWriteIsAllOrNothingAndCountersCount() throws SQLException {
        makeCluster();
        try (MetadataDb db = MetadataDb.open(dir.toString())) {
            assertEquals(1L, (long) db.write(c -> MetadataDb.nextCounter(c, "producer_id")));
            assertThrows(IllegalStateException.class, () -> db.write(c -> {
                MetadataDb.nextCounter(c, "producer_id");
                throw new IllegalStateException("fails half way");
            }));
            assertEquals(2L, (long) db.write(c -> MetadataDb.nextCounter(c, "producer_id")));
            assertEquals(List.of(), db.read("SELECT * FROM sink_producers"));  // no table yet: empty
            db.ensureSchema(TransactionTables.SCHEMA);
            assertEquals(0, db.read("SELECT * FROM sink_producers").size());
        }
    }
}

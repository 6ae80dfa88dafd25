package io.kstream.spark.txn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
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
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * MetadataDbPool: a connection given back serves the next borrower of its cluster; never one to a
 * deleted (or replaced) metadata.db or -wal file, never past MAX_IDLE, never another cluster's.
 */
class MetadataDbPoolTest {
    @TempDir Path dir;

    @AfterEach
    void empty() {
        MetadataDbPool.closeIdle();
    }

    private static void makeCluster(Path cluster, String tag) throws SQLException, IOException {
        Files.createDirectories(cluster);
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + cluster.resolve(MetadataDb.FILE_NAME));
             Statement s = c.createStatement()) {
            s.execute("PRAGMA journal_mode=WAL");  // as Python makes metadata.db
            s.execute("CREATE TABLE log_dirs (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, online INTEGER)");
            s.execute("CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)");
            s.execute("INSERT INTO counters VALUES ('" + tag + "', 0)");
        }
    }

    private static String tag(MetadataDb db) {
        return (String) db.read("SELECT name FROM counters").get(0)[0];
    }

    @Test
    void aConnectionGivenBackServesTheNextBorrowerOfItsClusterOnly() throws Exception {
        Path a = dir.resolve("a");
        Path b = dir.resolve("b");
        makeCluster(a, "a");
        makeCluster(b, "b");
        MetadataDb first = MetadataDbPool.borrow(a.toString());
        MetadataDbPool.giveBack(first);
        assertEquals(1, MetadataDbPool.idle());
        MetadataDb other = MetadataDbPool.borrow(b.toString());
        assertNotSame(first, other);
        assertEquals("b", tag(other));
        assertSame(first, MetadataDbPool.borrow(a.toString()));
        assertEquals(0, MetadataDbPool.idle());
        assertEquals(1L, (long) first.write(c -> MetadataDb.nextCounter(c, "a")));
        MetadataDbPool.giveBack(first);
        MetadataDbPool.giveBack(other);
        assertEquals(2, MetadataDbPool.idle());
    }

    @Test
    void aClusterDeletedAndMadeAgainAtTheSamePathGetsAFreshConnection() throws Exception {
        Path cluster = dir.resolve("c");
        makeCluster(cluster, "old");
        MetadataDb old = MetadataDbPool.borrow(cluster.toString());
        assertEquals("old", tag(old));
        MetadataDbPool.giveBack(old);
        try (Stream<Path> files = Files.walk(cluster)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) Files.delete(p);
        }
        KStreamException missing = assertThrows(KStreamException.class, () -> MetadataDbPool.borrow(cluster.toString()));
        assertTrue(missing.getMessage().contains("is missing"), missing.getMessage());  // not the deleted file's connection
        assertEquals(0, MetadataDbPool.idle());
        makeCluster(cluster, "new");
        MetadataDb fresh = MetadataDbPool.borrow(cluster.toString());
        assertNotSame(old, fresh);
        assertEquals("new", tag(fresh));
        MetadataDbPool.giveBack(fresh);
    }

    @Test
    void aRemovedWalIsNeverWrittenThroughAPooledConnection() throws Exception {
        Path cluster = dir.resolve("w");
        makeCluster(cluster, "w");
        MetadataDb db = MetadataDbPool.borrow(cluster.toString());
        db.write(c -> MetadataDb.nextCounter(c, "w"));
        MetadataDbPool.giveBack(db);
        Files.delete(cluster.resolve(MetadataDb.FILE_NAME + "-wal"));
        MetadataDb next = MetadataDbPool.borrow(cluster.toString());
        assertNotSame(db, next);
        MetadataDbPool.giveBack(next);
    }

    @Test
    void atMostMaxIdleConnectionsAreKept() throws Exception {
        Path cluster = dir.resolve("m");
        makeCluster(cluster, "m");
        List<MetadataDb> borrowed = new ArrayList<>();
        for (int i = 0; i < MetadataDbPool.MAX_IDLE + 3; i++) borrowed.add(MetadataDbPool.borrow(cluster.toString()));
        for (MetadataDb db : borrowed) MetadataDbPool.giveBack(db);
        assertEquals(MetadataDbPool.MAX_IDLE, MetadataDbPool.idle());
    }

    @Test
    void aPooledSinkStoreGivesItsConnectionBackOnClose() throws Exception {
        Path cluster = dir.resolve("s");
        makeCluster(cluster, "s");
        MetadataDb db;
        try (SinkStore store = SinkStore.pooled(cluster.toString(), null)) {
            db = store.db();
            assertEquals(0, MetadataDbPool.idle());
        }
        assertEquals(1, MetadataDbPool.idle());
        try (SinkStore store = SinkStore.pooled(cluster.toString(), null)) {
            assertSame(db, store.db());
        }
    }
}

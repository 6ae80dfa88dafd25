package io.kstream.spark.txn;

import io.kstream.spark.error.KStreamException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Properties;

/**
 * One connection to a cluster's {@code metadata.db} (SQLite, through the bundled sqlite-jdbc), on
 * the conventions of Python's {@code kstream.log.cluster.metadata.Metadata}, so that Java and
 * Python processes share the database safely: WAL journal, {@code synchronous=FULL} (a commit is
 * fsynced before it returns), a 60 s busy timeout, read-write of an existing file only (a
 * missing, empty or foreign file is a ClusterError, never a fresh empty cluster), every write in
 * {@code BEGIN IMMEDIATE} ... {@code COMMIT} (the write lock taken first, so no write transaction
 * ever fails half way on a lock upgrade), reads in autocommit, and the refusal to write once the
 * {@code -wal} file is not the one the connection opened (Python's {@code check_wal}: SQLite
 * would go on committing into an unlinked file).
 *
 * <p>Not thread-safe: one per thread (a SQLite transaction belongs to its connection). Never
 * open {@code metadata.db} with anything but SQLite in a process that has it open: closing any
 * descriptor of the file drops SQLite's POSIX locks on it.
 */
public final class MetadataDb implements AutoCloseable {
    public static final String FILE_NAME = "metadata.db";
    public static final int BUSY_TIMEOUT_MS = 60_000;
    private static final String IS_KSTREAM_METADATA =
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'log_dirs'";

    /** The body of one write transaction. */
    public interface Work<T> {
        T run(Connection connection) throws SQLException;
    }

    public final String path;
    private final Connection connection;
    private final Object walIdentity;
    private final Object fileIdentity;
    private boolean failed;

    private MetadataDb(String path, Connection connection, Object walIdentity, Object fileIdentity) {
        this.path = path;
        this.connection = connection;
        this.walIdentity = walIdentity;
        this.fileIdentity = fileIdentity;
    }

    /** The absolute path of {@code <clusterDir>/metadata.db}. */
    static String pathOf(String clusterDir) {
        return Path.of(clusterDir, FILE_NAME).toAbsolutePath().toString();
    }

    /** Open {@code <clusterDir>/metadata.db} (it must exist: only Python creates a cluster). */
    public static MetadataDb open(String clusterDir) {
        String path = pathOf(clusterDir);
        checkFile(path);
        Properties properties = new Properties();
        properties.setProperty("open_mode", "2");  // SQLITE_OPEN_READWRITE, without CREATE
        properties.setProperty("busy_timeout", Integer.toString(BUSY_TIMEOUT_MS));
        Connection connection = null;
        try {
            connection = DriverManager.getConnection("jdbc:sqlite:" + path, properties);
            connection.setAutoCommit(true);  // transactions are BEGIN IMMEDIATE ... COMMIT, by hand
            try (Statement s = connection.createStatement()) {
                s.execute("PRAGMA busy_timeout = " + BUSY_TIMEOUT_MS);
                if (!s.executeQuery(IS_KSTREAM_METADATA).next()) {
                    throw new KStreamException(KStreamException.Kind.ClusterError, lost(path,
                        "is not a kstream metadata database (no log_dirs table)"));
                }
                s.execute("PRAGMA journal_mode=WAL");
                s.execute("PRAGMA synchronous=FULL");
            }
            return new MetadataDb(path, connection, walIdentity(path), fileKey(Path.of(path)));
        } catch (SQLException | RuntimeException e) {
            closeQuietly(connection);
            if (e instanceof KStreamException) throw (KStreamException) e;
            throw new KStreamException(KStreamException.Kind.ClusterError, "cannot open the cluster's metadata "
                + path + ": " + e.getMessage() + " (is it a kstream cluster, readable and writable by this user?)", e);
        }
    }

    private static void checkFile(String path) {
        long size;
        try {
            size = Files.size(Path.of(path));  // stat only: never open() the file outside SQLite
        } catch (NoSuchFileException e) {
            throw new KStreamException(KStreamException.Kind.ClusterError, lost(path, "is missing"), e);
        } catch (IOException e) {
            throw new KStreamException(KStreamException.Kind.ClusterError, "cannot stat " + path + ": " + e, e);
        }
        if (size == 0) throw new KStreamException(KStreamException.Kind.ClusterError, lost(path, "is empty (zero length)"));
    }

    private static String lost(String path, String what) {
        return "the cluster's metadata " + path + " " + what + ": it names every topic, partition and log dir, so"
            + " kstream will not start an empty one over the data in the log dirs; restore metadata.db from a backup"
            + " (with its -wal file, if any)";
    }

    private static Object walIdentity(String path) {
        return fileKey(Path.of(path + "-wal"));
    }

    /** The file's identity (device and inode), or null when it cannot be stat'ed. */
    private static Object fileKey(Path file) {
        try {
            return Files.readAttributes(file, BasicFileAttributes.class).fileKey();
        } catch (IOException e) {
            return null;
        }
    }

    /**
     * Whether this connection may serve another user ({@link MetadataDbPool}): it never failed,
     * and {@code metadata.db} and its {@code -wal} are still the files it opened (a cluster deleted
     * and made again at the same path, or a WAL removed, is opened afresh).
     */
    boolean reusable() {
        return !failed && walIdentity != null && fileIdentity != null
            && Objects.equals(fileIdentity, fileKey(Path.of(path))) && Objects.equals(walIdentity, walIdentity(path));
    }

    /**
     * Run {@code work} in one immediate (write-locked) transaction, committed when it returns,
     * rolled back when it throws.
     */
    public <T> T write(Work<T> work) {
        try {
            try (Statement s = connection.createStatement()) {
                s.execute("BEGIN IMMEDIATE");
            }
            T result;
            try {
                if (walIdentity != null && !Objects.equals(walIdentity, walIdentity(path))) {
                    throw new KStreamException(KStreamException.Kind.ClusterError, "the WAL file of the cluster's"
                        + " metadata, " + path + "-wal, was removed (or replaced) while this process had it open:"
                        + " metadata committed since the last checkpoint may be lost. Stop every process using this"
                        + " cluster and restore metadata.db with its -wal file from a backup");
                }
                result = work.run(connection);
            } catch (SQLException | RuntimeException e) {
                rollback();
                throw e;
            }
            try (Statement s = connection.createStatement()) {
                s.execute("COMMIT");
            } catch (SQLException e) {
                rollback();  // a failed COMMIT leaves the transaction open: end it, keep the error
                throw e;
            }
            return result;
        } catch (SQLException e) {
            throw failed(e);
        }
    }

    /** The rows of one read (autocommit); a missing table reads as empty, as Python's read_rows. */
    public List<Object[]> read(String sql, Object... args) {
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            bind(statement, args);
            return rows(statement);
        } catch (SQLException e) {
            if (e.getMessage() != null && e.getMessage().contains("no such table")) return List.of();
            throw failed(e);
        }
    }

    /** Rows of {@code sql} inside a transaction's connection. */
    public static List<Object[]> query(Connection connection, String sql, Object... args) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            bind(statement, args);
            return rows(statement);
        }
    }

    /** Run one changing statement inside a transaction's connection; the rows it changed. */
    public static int update(Connection connection, String sql, Object... args) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            bind(statement, args);
            return statement.executeUpdate();
        }
    }

    /** Python's Metadata.next_counter_in: the counter's next value, in the caller's transaction. */
    public static long nextCounter(Connection connection, String name) throws SQLException {
        update(connection, "INSERT OR IGNORE INTO counters VALUES (?, 0)", name);
        update(connection, "UPDATE counters SET value = value + 1 WHERE name = ?", name);
        return ((Number) query(connection, "SELECT value FROM counters WHERE name = ?", name).get(0)[0]).longValue();
    }

    /** Make the tables of a {@code CREATE ... IF NOT EXISTS} script in one write transaction. */
    public void ensureSchema(String ddl) {
        write(c -> {
            try (Statement s = c.createStatement()) {
                for (String statement : ddl.split(";")) if (!statement.isBlank()) s.execute(statement);
            }
            return null;
        });
    }

    private static void bind(PreparedStatement statement, Object[] args) throws SQLException {
        for (int i = 0; i < args.length; i++) statement.setObject(i + 1, args[i]);
    }

    private static List<Object[]> rows(PreparedStatement statement) throws SQLException {
        List<Object[]> out = new ArrayList<>();
        try (ResultSet rs = statement.executeQuery()) {
            int columns = rs.getMetaData().getColumnCount();
            while (rs.next()) {
                Object[] row = new Object[columns];
                for (int i = 0; i < columns; i++) row[i] = rs.getObject(i + 1);
                out.add(row);
            }
        }
        return out;
    }

    private void rollback() {
        try {
            try (Statement s = connection.createStatement()) {
                s.execute("ROLLBACK");
            }
        } catch (SQLException e) {
            // "no transaction is active": SQLite rolled back already (a full disk, an I/O error);
            // the error that says why is the one being thrown
        }
    }

    private KStreamException failed(SQLException e) {
        failed = true;
        return new KStreamException(KStreamException.Kind.KStreamError, "the cluster's metadata " + path
            + " failed: " + e.getMessage() + " (a full disk or an I/O error: make space or fix the disk, then retry;"
            + " the failed transaction changed nothing)", e);
    }

    private static void closeQuietly(Connection connection) {
        if (connection == null) return;
        try {
            connection.close();
        } catch (SQLException ignored) {
            // closing after a failed open: the open's error is the one that matters
        }
    }

    @Override
    public void close() {
        closeQuietly(connection);
    }
}

package io.kstream.spark.txn;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Iterator;

/**
 * Idle {@link MetadataDb} connections of this JVM, kept for the next sink task attempt or commit
 * of the same cluster (issue 22's profile: a micro-batch of the JVM writer opened and closed
 * SQLite once per task attempt and once per commit, and closing the last connection of a WAL
 * database checkpoints it and deletes the {@code -wal} file, 1-2 ms each time on this disk).
 *
 * <p>What a pooled connection changes: nothing on disk. Every write is still one
 * {@code BEGIN IMMEDIATE} ... {@code COMMIT} with {@code synchronous=FULL}; an idle connection
 * holds no transaction and no read snapshot (reads run in autocommit and close their
 * statements). SQLite then checkpoints by its {@code wal_autocheckpoint} instead of at each
 * close. A connection is handed out again only while {@link MetadataDb#reusable} holds: it never
 * failed, and {@code metadata.db} and its {@code -wal} are the files it opened (a cluster deleted
 * and made again at the same path gets a fresh connection, never one to the deleted file).
 *
 * <p>Bounded: at most {@link #MAX_IDLE} idle connections in the JVM, the oldest closed first.
 * Thread-safe; a borrowed connection belongs to its borrower until {@link #giveBack}.
 */
public final class MetadataDbPool {
    /** Idle connections kept in one JVM, over all clusters. */
    public static final int MAX_IDLE = 8;

    private static final Deque<MetadataDb> IDLE = new ArrayDeque<>();

    private MetadataDbPool() {}

    /** An idle connection to {@code <clusterDir>/metadata.db} still reusable, else a fresh one ({@link MetadataDb#open}). */
    public static MetadataDb borrow(String clusterDir) {
        String path = MetadataDb.pathOf(clusterDir);
        MetadataDb found = null;
        synchronized (IDLE) {
            for (Iterator<MetadataDb> it = IDLE.iterator(); it.hasNext(); ) {
                MetadataDb db = it.next();
                if (db.path.equals(path)) {
                    it.remove();
                    found = db;
                    break;
                }
            }
        }
        if (found != null) {
            if (found.reusable()) return found;
            found.close();
        }
        return MetadataDb.open(clusterDir);
    }

    /** Keep {@code db} for the next borrower when it is reusable, else close it; the oldest idle one goes past the bound. */
    public static void giveBack(MetadataDb db) {
        if (!db.reusable()) {
            db.close();
            return;
        }
        MetadataDb evicted = null;
        synchronized (IDLE) {
            IDLE.addFirst(db);
            if (IDLE.size() > MAX_IDLE) evicted = IDLE.removeLast();
        }
        if (evicted != null) evicted.close();
    }

    /** Idle connections now (tests). */
    static int idle() {
        synchronized (IDLE) {
            return IDLE.size();
        }
    }

    /** Close every idle connection (tests; a JVM's exit closes them too). */
    static void closeIdle() {
        while (true) {
            MetadataDb db;
            synchronized (IDLE) {
                db = IDLE.pollFirst();
            }
            if (db == null) return;
            db.close();
        }
    }
}

package io.kstream.spark.txn;

import com.fasterxml.jackson.databind.node.ArrayNode;
import io.kstream.spark.error.KStreamException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The Spark sink's rows in a cluster's metadata.db, read and written exactly as Python's
 * {@code SinkStore} and {@code TransactionStore} do (src/kstream/log/transactions/sink.py,
 * store.py; docs/TRANSACTIONS.md): {@code sink_producers} (a task attempt's writes live while its
 * row does), {@code open_transaction_partitions} (a partition held open from its first offset:
 * the LSO), {@code sink_batches} (the driver's decision per (sink, batch)),
 * {@code aborted_transactions}. Every write is one BEGIN IMMEDIATE transaction of
 * {@link MetadataDb}. Not thread-safe (one connection).
 *
 * <p>{@code defaultTimeoutMs}: the cluster's timeout of a sink task's write (Python's
 * {@code TransactionStore.default_timeout_ms}: transaction.max.timeout.ms, or an older cluster's
 * stored transaction.timeout.ms); null: no timeout known (nothing is refused for its age).
 */
public final class SinkStore implements AutoCloseable {
    /** The cluster's broker-side settings file (Python's format.CLUSTER_PROPERTIES). */
    public static final String CLUSTER_PROPERTIES = "cluster.properties";
    /** Python's default of transaction.max.timeout.ms (config/options.py CLUSTER_OPTIONS). */
    public static final long DEFAULT_MAX_TIMEOUT_MS = 900_000;
    private static final String LEGACY_TIMEOUT = "transaction.timeout.ms";
    private static final String MAX_TIMEOUT = "transaction.max.timeout.ms";

    private final MetadataDb db;
    private final Long defaultTimeoutMs;
    private final boolean pooled;
    private boolean schemaMade;

    public SinkStore(MetadataDb db, Long defaultTimeoutMs) {
        this(db, defaultTimeoutMs, false);
    }

    private SinkStore(MetadataDb db, Long defaultTimeoutMs, boolean pooled) {
        this.db = db;
        this.defaultTimeoutMs = defaultTimeoutMs;
        this.pooled = pooled;
    }

    /**
     * A store on a connection of {@link MetadataDbPool} (an idle one of this cluster, else a fresh
     * one), given back to the pool by {@link #close} instead of closed: the JVM writer's task
     * attempts and commits, one after the other on the same cluster.
     */
    public static SinkStore pooled(String clusterDir, Long defaultTimeoutMs) {
        return new SinkStore(MetadataDbPool.borrow(clusterDir), defaultTimeoutMs, true);
    }

    /**
     * The cluster's timeout of a sink task's write, as Python's TransactionStore.for_cluster reads
     * it from cluster.properties: an older cluster's stored transaction.timeout.ms, else
     * transaction.max.timeout.ms (else its default).
     */
    public static long clusterTimeoutMs(String clusterDir) throws java.io.IOException {
        java.util.Map<String, String> values = new java.util.HashMap<>();
        for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of(clusterDir, CLUSTER_PROPERTIES),
                java.nio.charset.StandardCharsets.UTF_8)) {
            String trimmed = line.strip();
            int eq = trimmed.indexOf('=');
            if (trimmed.isEmpty() || trimmed.startsWith("#") || eq < 0) continue;
            values.put(trimmed.substring(0, eq).strip(), trimmed.substring(eq + 1).strip());
        }
        String raw = values.containsKey(LEGACY_TIMEOUT) ? values.get(LEGACY_TIMEOUT) : values.get(MAX_TIMEOUT);
        if (raw == null) return DEFAULT_MAX_TIMEOUT_MS;
        try {
            return Long.parseLong(raw.replace("_", ""));
        } catch (NumberFormatException e) {
            throw KStreamException.config(clusterDir + "/" + CLUSTER_PROPERTIES + ": "
                + (values.containsKey(LEGACY_TIMEOUT) ? LEGACY_TIMEOUT : MAX_TIMEOUT) + "=" + raw + " is not an integer");
        }
    }

    public MetadataDb db() {
        return db;
    }

    public Long defaultTimeoutMs() {
        return defaultTimeoutMs;
    }

    private <T> T write(MetadataDb.Work<T> work) {
        if (!schemaMade) {
            if (db.read("SELECT name FROM sqlite_master WHERE name IN ('sink_producers', 'sink_batches', "
                    + "'open_transaction_partitions', 'aborted_transactions', 'transaction_timeouts')").size() < 5) {
                db.ensureSchema(TransactionTables.SCHEMA);
            }
            schemaMade = true;
        }
        return db.write(work);
    }

    /**
     * A producer id for one task attempt and its sink_producers row, in one SQLite commit. With
     * {@code batchId} (when the task knows it), FencedError if that batch is already decided.
     */
    public long newTaskProducer(String sinkId, Long batchId) {
        return write(tx -> {
            long producerId = MetadataDb.nextCounter(tx, TransactionTables.PRODUCER_ID_COUNTER);
            if (batchId != null) {
                List<Object[]> row = MetadataDb.query(tx,
                    "SELECT state FROM sink_batches WHERE sink_id = ? AND batch_id = ?", sinkId, batchId);
                if (!row.isEmpty()) {
                    throw fenced("batch " + batchId + " of sink '" + sinkId + "' is already " + row.get(0)[0]
                        + "; this task attempt is a zombie and writes nothing");
                }
            }
            MetadataDb.update(tx, "INSERT INTO sink_producers VALUES (?, ?, '[]', ?)", sinkId, producerId, now());
            return producerId;
        });
    }

    /**
     * The attempt's first frame on the partition comes next (call under its lock): FencedError
     * when the attempt's writes were aborted or its batch decided without it.
     */
    public void addPartition(String sinkId, long producerId, String topic, int partition, long firstOffset) {
        write(tx -> {
            List<Object[]> rows = MetadataDb.query(tx,
                "SELECT partitions, created_ms FROM sink_producers WHERE sink_id = ? AND producer_id = ?", sinkId, producerId);
            if (rows.isEmpty()) throw zombie(sinkId, producerId);
            refuseIfTimedOut(sinkId, producerId, ((Number) rows.get(0)[1]).longValue());
            ArrayNode partitions = (ArrayNode) TaskWrites.parse((String) rows.get(0)[0]);
            partitions.addArray().add(topic).add(partition);
            MetadataDb.update(tx, "UPDATE sink_producers SET partitions = ? WHERE sink_id = ? AND producer_id = ?",
                partitions.toString(), sinkId, producerId);
            MetadataDb.update(tx, "INSERT OR IGNORE INTO open_transaction_partitions VALUES (?, ?, ?, ?)",
                topic, partition, producerId, firstOffset);
            return null;
        });
    }

    /** Before every later append of a task attempt, under the partition lock. */
    public void checkLive(String sinkId, long producerId) {
        List<Object[]> rows = db.read("SELECT created_ms FROM sink_producers WHERE sink_id = ? AND producer_id = ?",
            sinkId, producerId);
        if (rows.isEmpty()) throw zombie(sinkId, producerId);
        refuseIfTimedOut(sinkId, producerId, ((Number) rows.get(0)[0]).longValue());
    }

    private void refuseIfTimedOut(String sinkId, long producerId, long createdMs) {
        if (defaultTimeoutMs != null && now() >= createdMs + defaultTimeoutMs) {
            throw fenced("task producer " + producerId + " of sink '" + sinkId + "' began more than"
                + " transaction.max.timeout.ms=" + defaultTimeoutMs + " ago (the cluster's): its writes are aborted"
                + " and it may not write more (Spark runs the batch again if it still needs it; or use a cluster"
                + " created with a larger transaction.max.timeout.ms)");
        }
    }

    /** The newest Committed batch of the sink (older ones are pruned), or null. */
    public Long lastCommitted(String sinkId) {
        List<Object[]> rows = db.read("SELECT MAX(batch_id) FROM sink_batches WHERE sink_id = ? AND state = ?",
            sinkId, TransactionTables.COMMITTED);
        return rows.isEmpty() || rows.get(0)[0] == null ? null : ((Number) rows.get(0)[0]).longValue();
    }

    /** (state, writes) of a batch's decision, or null. */
    public Object[] batchState(String sinkId, long batchId) {
        List<Object[]> rows = db.read("SELECT state, writes FROM sink_batches WHERE sink_id = ? AND batch_id = ?",
            sinkId, batchId);
        if (rows.isEmpty()) return null;
        return new Object[] {rows.get(0)[0], TaskWrites.fromJson((String) rows.get(0)[1])};
    }

    /** Committing batches of the sink (decided, markers maybe not all written). */
    public List<Long> committingBatches(String sinkId) {
        List<Long> out = new ArrayList<>();
        for (Object[] r : db.read("SELECT batch_id FROM sink_batches WHERE sink_id = ? AND state = ?", sinkId,
                TransactionTables.COMMITTING)) {
            out.add(((Number) r[0]).longValue());
        }
        return out;
    }

    /**
     * The commit decision: the batch is Committing with exactly {@code writes}, unless some of
     * them are gone (aborted, or past the timeout): then nothing is written and those are returned.
     */
    public List<Long> decideCommit(String sinkId, long batchId, List<TaskWrites> writes) {
        String payload = TaskWrites.toJson(writes);
        return write(tx -> {
            long cutoff = defaultTimeoutMs == null ? -1 : now() - defaultTimeoutMs;
            Set<Long> live = new HashSet<>();
            for (Object[] r : MetadataDb.query(tx, "SELECT producer_id FROM sink_producers WHERE sink_id = ? AND"
                    + " created_ms > ?", sinkId, cutoff)) {
                live.add(((Number) r[0]).longValue());
            }
            List<Long> gone = new ArrayList<>();
            for (TaskWrites w : writes) if (!live.contains(w.producerId)) gone.add(w.producerId);
            gone.sort(null);
            if (gone.isEmpty()) {
                MetadataDb.update(tx, "INSERT OR REPLACE INTO sink_batches VALUES (?, ?, ?, ?, ?)", sinkId, batchId,
                    TransactionTables.COMMITTING, payload, now());
            }
            return gone;
        });
    }

    /** A batch job's abort decision, kept so a later attempt of it is refused (Python's abort(batch_id=)). */
    public void recordAborted(String sinkId, long batchId) {
        write(tx -> MetadataDb.update(tx, "INSERT OR IGNORE INTO sink_batches VALUES (?, ?, ?, '[]', ?)", sinkId,
            batchId, TransactionTables.ABORTED, now()));
    }

    /** Delete the rows of {@code producerIds} no Committing decision names; the ones deleted (fenced). */
    public Set<Long> fence(String sinkId, Set<Long> producerIds) {
        return write(tx -> {
            Set<Long> fenced = new HashSet<>(producerIds);
            fenced.removeAll(decided(tx, sinkId));
            for (long producerId : fenced) {
                MetadataDb.update(tx, "DELETE FROM sink_producers WHERE sink_id = ? AND producer_id = ?", sinkId,
                    producerId);
            }
            return fenced;
        });
    }

    /** Producer ids of the sink's rows (live or not yet swept). */
    public Set<Long> sinkProducers(String sinkId) {
        Set<Long> out = new HashSet<>();
        for (Object[] r : db.read("SELECT producer_id FROM sink_producers WHERE sink_id = ?", sinkId)) {
            out.add(((Number) r[0]).longValue());
        }
        return out;
    }

    /** (topic, partition, producer id) of open rows no live transaction or sink write holds. */
    public List<Object[]> orphans() {
        return db.read("SELECT o.topic, o.partition, o.producer_id FROM open_transaction_partitions o WHERE NOT EXISTS"
            + " (SELECT 1 FROM transactions t WHERE t.producer_id = o.producer_id AND t.state IN "
            + TransactionTables.LIVE_SQL + ") AND NOT EXISTS (SELECT 1 FROM sink_producers s WHERE s.producer_id ="
            + " o.producer_id)");
    }

    public boolean isOrphan(String topic, int partition, long producerId) {
        for (Object[] o : db.read("SELECT o.topic FROM open_transaction_partitions o WHERE o.topic = ? AND"
                + " o.partition = ? AND o.producer_id = ? AND NOT EXISTS (SELECT 1 FROM transactions t WHERE"
                + " t.producer_id = o.producer_id AND t.state IN " + TransactionTables.LIVE_SQL + ") AND NOT EXISTS"
                + " (SELECT 1 FROM sink_producers s WHERE s.producer_id = o.producer_id)", topic, partition, producerId)) {
            return o != null;
        }
        return false;
    }

    public boolean isOpen(String topic, int partition, long producerId) {
        return !db.read("SELECT 1 FROM open_transaction_partitions WHERE topic = ? AND partition = ? AND producer_id = ?",
            topic, partition, producerId).isEmpty();
    }

    /** One ended partition: (topic, partition, producer id, marker offset). */
    public static final class End {
        final String topic;
        final int partition;
        final long producerId;
        final long markerOffset;

        End(String topic, int partition, long producerId, long markerOffset) {
            this.topic = topic;
            this.partition = partition;
            this.producerId = producerId;
            this.markerOffset = markerOffset;
        }
    }

    /**
     * Python's TransactionStore.end_partitions: each marker's open row ends (an abort leaves its
     * aborted_transactions row), and {@code also} runs, in one SQLite transaction.
     */
    public void endPartitions(List<End> ends, boolean aborted, MetadataDb.Work<Void> also) {
        write(tx -> {
            for (End e : ends) {
                List<Object[]> row = MetadataDb.query(tx, "SELECT first_offset FROM open_transaction_partitions WHERE"
                    + " topic = ? AND partition = ? AND producer_id = ? AND first_offset <= ?", e.topic, e.partition,
                    e.producerId, e.markerOffset);
                // A row at the marker's own offset had no frame land (its writer failed after recording
                // it: an interrupted task); the marker ends it too. A later transaction's row is above.
                if (row.isEmpty()) continue;  // a later transaction of the same producer id keeps its own
                MetadataDb.update(tx, "DELETE FROM open_transaction_partitions WHERE topic = ? AND partition = ? AND"
                    + " producer_id = ?", e.topic, e.partition, e.producerId);
                if (aborted) {
                    MetadataDb.update(tx, "INSERT INTO aborted_transactions VALUES (?, ?, ?, ?, ?)", e.topic,
                        e.partition, e.producerId, row.get(0)[0], e.markerOffset);
                }
            }
            if (also != null) also.run(tx);
            return null;
        });
    }

    /** Mark the batch Committed, prune older Committed ones, delete its producers' rows (in {@code tx}). */
    static void markCommitted(Connection tx, String sinkId, long batchId, List<TaskWrites> writes) throws SQLException {
        MetadataDb.update(tx, "UPDATE sink_batches SET state = ?, updated_ms = ? WHERE sink_id = ? AND batch_id = ?",
            TransactionTables.COMMITTED, now(), sinkId, batchId);
        // Only the newest committed batch is ever replayed: older rows would grow without bound.
        MetadataDb.update(tx, "DELETE FROM sink_batches WHERE sink_id = ? AND batch_id < ? AND state = ?", sinkId,
            batchId, TransactionTables.COMMITTED);
        for (TaskWrites w : writes) {
            MetadataDb.update(tx, "DELETE FROM sink_producers WHERE sink_id = ? AND producer_id = ?", sinkId,
                w.producerId);
        }
    }

    /** Producer ids a Committing decision of the sink names (never aborted: rolled forward). */
    private static Set<Long> decided(Connection tx, String sinkId) throws SQLException {
        Set<Long> named = new HashSet<>();
        for (Object[] r : MetadataDb.query(tx, "SELECT writes FROM sink_batches WHERE sink_id = ? AND state = ?", sinkId,
                TransactionTables.COMMITTING)) {
            for (TaskWrites w : TaskWrites.fromJson((String) r[0])) named.add(w.producerId);
        }
        return named;
    }

    static KStreamException fenced(String message) {
        return new KStreamException(KStreamException.Kind.FencedError, message);
    }

    static KStreamException zombie(String sinkId, long producerId) {
        return fenced("task producer " + producerId + " of sink '" + sinkId + "' was fenced: its batch was committed by"
            + " another attempt or its writes were aborted; this task attempt is a zombie and may not write (Spark runs"
            + " the batch again if it still needs it)");
    }

    static long now() {
        return System.currentTimeMillis();
    }

    @Override
    public void close() {
        if (pooled) {
            MetadataDbPool.giveBack(db);
        } else {
            db.close();
        }
    }
}

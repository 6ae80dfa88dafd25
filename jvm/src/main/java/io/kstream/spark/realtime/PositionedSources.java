package io.kstream.spark.realtime;

import io.kstream.spark.format.SourcePosition;
import io.kstream.spark.txn.MetadataDb;
import java.util.List;

/**
 * The durable half of source-position idempotence (docs/TRANSACTIONS.md, "Source-position
 * idempotence"): one row of metadata.db's {@code positioned_sources} per (identity, output topic
 * id, output partition), saying "below output offset {@code checked_offset}, this identity's
 * last source offset in this partition is {@code last_source_offset}" (-1: none).
 *
 * <p>The row is registered (with the log end, and -1) before the identity's first frame in the
 * partition, so a missing row proves the identity never wrote there; it is moved forward at each
 * writer's close and every {@link KStreamForeachWriter#SNAPSHOT_INTERVAL_MS} (only forward: a
 * zombie's older snapshot never replaces a newer one). The log stays the truth: the state of an
 * identity is the row plus the frames at or after {@code checked_offset}. Not thread-safe.
 */
final class PositionedSources {
    static final String SCHEMA = "\n"
        + "CREATE TABLE IF NOT EXISTS positioned_sources (\n"
        + "    sink_id TEXT NOT NULL, source_topic TEXT NOT NULL, source_partition INTEGER NOT NULL,\n"
        + "    topic_id TEXT NOT NULL, partition INTEGER NOT NULL, last_source_offset INTEGER NOT NULL,\n"
        + "    checked_offset INTEGER NOT NULL, updated_ms INTEGER NOT NULL,\n"
        + "    PRIMARY KEY (sink_id, source_topic, source_partition, topic_id, partition));\n";

    /** A row: the identity's last source offset below {@code checkedOffset} (-1: none). */
    record Snapshot(long lastSourceOffset, long checkedOffset) {}

    private final MetadataDb db;
    private boolean schemaMade;

    PositionedSources(MetadataDb db) {
        this.db = db;
    }

    private void ensureSchema() {
        if (!schemaMade) db.ensureSchema(SCHEMA);
        schemaMade = true;
    }

    /** The identity's row for the partition, registering it with {@code logEnd} when there is none. */
    Snapshot loadOrRegister(SourcePosition.Identity id, String topicId, int partition, long logEnd) {
        ensureSchema();
        return db.write(c -> {
            MetadataDb.update(c, "INSERT OR IGNORE INTO positioned_sources VALUES (?, ?, ?, ?, ?, -1, ?, ?)",
                id.sinkId(), id.topic(), id.partition(), topicId, partition, logEnd, System.currentTimeMillis());
            List<Object[]> rows = MetadataDb.query(c, "SELECT last_source_offset, checked_offset FROM"
                + " positioned_sources WHERE sink_id = ? AND source_topic = ? AND source_partition = ? AND topic_id = ?"
                + " AND partition = ?", id.sinkId(), id.topic(), id.partition(), topicId, partition);
            Object[] row = rows.get(0);
            return new Snapshot(((Number) row[0]).longValue(), ((Number) row[1]).longValue());
        });
    }

    /** Move the row forward to (last, checked); an older or equal checked offset changes nothing. */
    void save(SourcePosition.Identity id, String topicId, int partition, long lastSourceOffset, long checkedOffset) {
        ensureSchema();
        db.write(c -> MetadataDb.update(c, "UPDATE positioned_sources SET last_source_offset = ?, checked_offset = ?,"
            + " updated_ms = ? WHERE sink_id = ? AND source_topic = ? AND source_partition = ? AND topic_id = ? AND"
            + " partition = ? AND checked_offset < ? AND last_source_offset <= ?", lastSourceOffset, checkedOffset,
            System.currentTimeMillis(), id.sinkId(), id.topic(), id.partition(), topicId, partition, checkedOffset,
            lastSourceOffset));
    }
}

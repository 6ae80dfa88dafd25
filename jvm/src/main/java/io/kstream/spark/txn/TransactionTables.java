package io.kstream.spark.txn;

/**
 * The transaction tables of metadata.db as Python's {@code kstream.log.transactions.store} makes
 * them ({@code _SCHEMA}, copied here verbatim; tests/jvm/test_sink_txn_conformance.py checks the
 * two are the same text), and the states the sink protocol writes. The first writer of a cluster
 * where no transaction ever ran makes them; readers never do (a missing table reads as empty).
 */
public final class TransactionTables {
    public static final String SCHEMA = "\n" +
        "CREATE TABLE IF NOT EXISTS transactions (\n" +
        "    transactional_id TEXT PRIMARY KEY, producer_id INTEGER NOT NULL, epoch INTEGER NOT NULL,\n" +
        "    state TEXT NOT NULL, partitions TEXT NOT NULL, updated_ms INTEGER NOT NULL);\n" +
        "CREATE TABLE IF NOT EXISTS open_transaction_partitions (\n" +
        "    topic TEXT NOT NULL, partition INTEGER NOT NULL, producer_id INTEGER NOT NULL,\n" +
        "    first_offset INTEGER NOT NULL, PRIMARY KEY (topic, partition, producer_id));\n" +
        "CREATE TABLE IF NOT EXISTS aborted_transactions (\n" +
        "    topic TEXT NOT NULL, partition INTEGER NOT NULL, producer_id INTEGER NOT NULL,\n" +
        "    first_offset INTEGER NOT NULL, last_offset INTEGER NOT NULL);\n" +
        "CREATE INDEX IF NOT EXISTS aborted_by_partition ON aborted_transactions (topic, partition, last_offset);\n" +
        "CREATE TABLE IF NOT EXISTS sink_producers (\n" +
        "    sink_id TEXT NOT NULL, producer_id INTEGER NOT NULL, partitions TEXT NOT NULL, created_ms INTEGER NOT NULL,\n" +
        "    PRIMARY KEY (sink_id, producer_id));\n" +
        "CREATE TABLE IF NOT EXISTS transaction_offsets (\n" +
        "    transactional_id TEXT NOT NULL, group_id TEXT NOT NULL, member_id TEXT, generation INTEGER NOT NULL,\n" +
        "    sequence INTEGER NOT NULL, offsets TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,\n" +
        "    process_start INTEGER NOT NULL,\n" +
        "    PRIMARY KEY (transactional_id, group_id));\n" +
        "CREATE INDEX IF NOT EXISTS transaction_offsets_by_group ON transaction_offsets (group_id);\n" +
        "CREATE TABLE IF NOT EXISTS transaction_offset_sequences (\n" +
        "    transactional_id TEXT PRIMARY KEY, sequence INTEGER NOT NULL);\n" +
        "CREATE TABLE IF NOT EXISTS transaction_timeouts (\n" +
        "    transactional_id TEXT PRIMARY KEY, producer_id INTEGER NOT NULL, started_ms INTEGER NOT NULL,\n" +
        "    timeout_ms INTEGER NOT NULL);\n" +
        "CREATE TABLE IF NOT EXISTS sink_batches (\n" +
        "    sink_id TEXT NOT NULL, batch_id INTEGER NOT NULL, state TEXT NOT NULL, writes TEXT NOT NULL,\n" +
        "    updated_ms INTEGER NOT NULL, PRIMARY KEY (sink_id, batch_id));\n";

    /** sink_batches.state: the commit decision (producer ids and partitions fixed), then its end. */
    public static final String COMMITTING = "Committing";
    public static final String COMMITTED = "Committed";
    public static final String ABORTED = "Aborted";
    /** Live states of the transactions table: their producer ids hold partitions open. */
    public static final String LIVE_SQL = "('Ongoing', 'PrepareCommit', 'PrepareAbort')";
    /** A sink task's producer epoch (Python's {@code _SINK_EPOCH}). */
    public static final short SINK_EPOCH = 0;
    /** The metadata counter task producer ids come from (Python's Metadata.next_counter_in). */
    public static final String PRODUCER_ID_COUNTER = "producer_id";

    private TransactionTables() {
    }
}

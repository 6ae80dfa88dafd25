package io.kstream.spark.write;

import io.kstream.spark.txn.MetadataDb;
import io.kstream.spark.txn.SinkCommitter;
import io.kstream.spark.txn.SinkStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.UUID;
import java.util.logging.Logger;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;

/**
 * A streaming query's writes by the JVM writer (micro-batches): Python's {@code KStreamStreamWriter}
 * (src/kstream/sink/writer.py) on the same (sink, batch) decision rows. The sink id is the one
 * the Python writer derives for the same checkpoint ({@link QueryIdentity}: {@code query:<id in
 * the checkpoint's metadata>}), so a query can switch writers across a restart and each batch
 * still commits once; without option checkpointLocation it is {@code stream-run:<uuid>}, one per
 * run (at least once across restarts, as the Kafka connector's sink). The batch id is Spark's epoch.
 *
 * <p>Each task attempt is a {@link JvmDataWriter} for (sink, epoch), which registers a producer
 * of its own refused when the epoch is decided. An attempt of an epoch the sink has decided
 * already ({@link AlreadyDecidedWriter}) writes nothing and reports nothing: it is Spark replaying a
 * batch the sink committed before a restart (the commit landed, Spark's commit log did not),
 * or a late attempt of a batch just committed. {@link #commit} is {@code SinkCommitter.commit}
 * (a replayed batch commits nothing again; an older one than the last committed is a rolled-back
 * checkpoint, CheckpointError); {@link #abort} aborts the writes without deciding the batch, so the
 * restarted query runs it again (Python's {@code abort(batch_id=None)} for micro-batches).
 */
public final class JvmStreamingWrite implements StreamingWrite {
    private static final Logger LOG = Logger.getLogger(JvmStreamingWrite.class.getName());

    private final SinkInput input;
    private final String sinkId;

    public JvmStreamingWrite(SinkInput input, Map<String, String> options) {
        this.input = input;
        String checkpoint = null;
        for (Map.Entry<String, String> e : options.entrySet()) {
            if (e.getKey().equalsIgnoreCase("checkpointLocation")) checkpoint = e.getValue();
        }
        if (checkpoint != null) {
            this.sinkId = QueryIdentity.sinkId(checkpoint);
        } else {
            LOG.warning("the kstream sink has no .option('checkpointLocation'): micro-batches are written at least"
                + " once (as with the Kafka connector), not exactly once");
            this.sinkId = "stream-run:" + UUID.randomUUID().toString().replace("-", "");
        }
    }

    public String sinkId() {
        return sinkId;
    }

    @Override
    public StreamingDataWriterFactory createStreamingWriterFactory(PhysicalWriteInfo info) {
        return new Factory(input, sinkId);
    }

    /** Serialized to the executors: one writer per (partition, task attempt, epoch). */
    public static final class Factory implements StreamingDataWriterFactory {
        private static final long serialVersionUID = 1L;
        private final SinkInput input;
        private final String sinkId;

        Factory(SinkInput input, String sinkId) {
            this.input = input;
            this.sinkId = sinkId;
        }

        @Override
        public DataWriter<InternalRow> createWriter(int partitionId, long taskId, long epochId) {
            SinkStore store = JvmBatchWrite.store(input.cluster);  // the task's, on a pooled connection
            Object[] state;
            try {
                state = store.batchState(sinkId, epochId);
            } catch (RuntimeException e) {
                store.close();
                throw e;
            }
            if (state != null) {
                store.close();
                return new AlreadyDecidedWriter(sinkId, epochId, (String) state[0]);
            }
            return new JvmDataWriter(input, sinkId, epochId, store);
        }
    }

    /**
     * A task attempt of an epoch the sink decided before it started: a batch Spark replays after
     * a restart (its rows were committed by the earlier run) or a late attempt (speculative, retried)
     * of a batch committed meanwhile. It writes nothing; its commit message names no writes.
     */
    public static final class AlreadyDecidedWriter implements DataWriter<InternalRow> {
        private final String sinkId;
        private final long epochId;
        private final String state;
        private long skipped;

        AlreadyDecidedWriter(String sinkId, long epochId, String state) {
            this.sinkId = sinkId;
            this.epochId = epochId;
            this.state = state;
        }

        @Override
        public void write(InternalRow row) {
            skipped++;
        }

        @Override
        public WriterCommitMessage commit() {
            LOG.info("batch " + epochId + " of sink '" + sinkId + "' is " + state + " already (Spark replays it after a"
                + " restart, or this attempt is late): its " + skipped + " rows are not written again");
            return null;
        }

        @Override
        public void abort() {}

        @Override
        public void close() {}
    }

    @Override
    public void commit(long epochId, WriterCommitMessage[] messages) {
        try (SinkStore store = JvmBatchWrite.store(input.cluster);
             SinkCommitter committer = new SinkCommitter(input.cluster, store)) {
            if (!committer.commit(sinkId, epochId, JvmBatchWrite.writes(messages))) {
                LOG.info("batch " + epochId + " of sink '" + sinkId + "' was committed by an earlier run (Spark replays"
                    + " it after a restart): its rows are not written again");
            }
        } catch (IOException e) {
            throw new UncheckedIOException("committing batch " + epochId + " of " + sinkId + " in " + input.cluster, e);
        }
    }

    @Override
    public void abort(long epochId, WriterCommitMessage[] messages) {
        try (SinkStore store = JvmBatchWrite.store(input.cluster);
             SinkCommitter committer = new SinkCommitter(input.cluster, store)) {
            committer.abort(sinkId, JvmBatchWrite.writes(messages), null);
        } catch (IOException e) {
            throw new UncheckedIOException("aborting batch " + epochId + " of " + sinkId + " in " + input.cluster, e);
        }
    }
}

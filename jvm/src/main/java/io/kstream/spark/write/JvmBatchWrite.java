package io.kstream.spark.write;

import io.kstream.spark.txn.SinkCommitter;
import io.kstream.spark.txn.SinkStore;
import io.kstream.spark.txn.TaskWrites;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * A batch job's write by the JVM writer: all its tasks' rows become visible together, or none
 * (Python's {@code KStreamBatchWriter}, src/kstream/sink/writer.py, on the same (sink, batch)
 * decision rows). The sink is {@code batch:<uuid>} and the batch 0; each task attempt writes
 * transactional frames under a producer of its own ({@link JvmDataWriter}); the driver commits
 * through {@link SinkCommitter#commit} (the decision recorded, COMMIT markers on every partition
 * written, fsynced, the rows ended; attempts that did not report, such as a failed or a
 * speculative loser, are aborted as the sink's orphans) or aborts through
 * {@link SinkCommitter#abort} with batch 0 decided Aborted, so an attempt that starts after it
 * is refused before it writes.
 */
public final class JvmBatchWrite implements BatchWrite {
    private final SinkInput input;
    private final String sinkId = "batch:" + UUID.randomUUID().toString().replace("-", "");

    public JvmBatchWrite(SinkInput input) {
        this.input = input;
    }

    public String sinkId() {
        return sinkId;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
        return new Factory(input, sinkId);
    }

    /** Serialized to the executors: makes one {@link JvmDataWriter} per task attempt. */
    static final class Factory implements DataWriterFactory {
        private static final long serialVersionUID = 1L;
        private final SinkInput input;
        private final String sinkId;

        Factory(SinkInput input, String sinkId) {
            this.input = input;
            this.sinkId = sinkId;
        }

        @Override
        public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
            return new JvmDataWriter(input, sinkId, 0L);
        }
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
        try (SinkStore store = store(input.cluster); SinkCommitter committer = new SinkCommitter(input.cluster, store)) {
            committer.commit(sinkId, 0, writes(messages));
        } catch (IOException e) {
            throw new UncheckedIOException("committing " + sinkId + " in " + input.cluster, e);
        }
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
        try (SinkStore store = store(input.cluster); SinkCommitter committer = new SinkCommitter(input.cluster, store)) {
            committer.abort(sinkId, writes(messages), 0L);
        } catch (IOException e) {
            throw new UncheckedIOException("aborting " + sinkId + " in " + input.cluster, e);
        }
    }

    /**
     * The sink's transaction rows of {@code cluster}, with its transaction timeout, on a pooled
     * connection (one SQLite open and close per task attempt and commit cost 1-3 ms a micro-batch:
     * docs/BENCHMARKS.md, issue 22's profile).
     */
    static SinkStore store(String cluster) {
        long timeout;
        try {
            timeout = SinkStore.clusterTimeoutMs(cluster);
        } catch (IOException e) {
            timeout = SinkStore.DEFAULT_MAX_TIMEOUT_MS;
        }
        return SinkStore.pooled(cluster, timeout);
    }

    static List<TaskWrites> writes(WriterCommitMessage[] messages) {
        List<TaskWrites> out = new ArrayList<>();
        if (messages == null) return out;
        for (WriterCommitMessage m : messages) if (m instanceof JvmTaskCommit c) out.add(c.writes);
        return out;
    }
}

package io.kstream.spark.txn;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.log.PartitionAppender;
import io.kstream.spark.read.TopicPartition;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.BooleanSupplier;

/**
 * The driver side of the Spark sink's exactly-once protocol, as Python's {@code SinkStore.commit},
 * {@code abort} and {@code recover} (src/kstream/log/transactions/sink.py, writer.py;
 * docs/TRANSACTIONS.md): one decision per (sink, batch), recorded durably first (Committing, with
 * the exact producer ids and partitions), then a COMMIT marker on every partition written
 * (appended under the partition lock only while the partition's open row exists and the decision
 * still stands, so a second finisher adds no second marker), all fsynced, then in one SQLite
 * transaction the open rows end and the batch becomes Committed with its task rows deleted. A
 * crash in between is rolled forward by the next driver ({@link #recover}) or Python's expiry.
 * A replayed batch commits nothing again (its writes are aborted); an older one is a rolled-back
 * checkpoint (CheckpointError); a commit whose writes were aborted (past the timeout) fails with
 * FencedError and commits nothing. Aborting fences first (the task rows go: later appends are
 * refused) and then writes ABORT markers, each with its aborted_transactions row and its
 * .txnindex entry. Not thread-safe.
 *
 * <p>As Python's {@code write_markers_together} fsyncs every partition's markers in parallel, a
 * commit's partitions are written by up to {@link #MAX_MARKER_THREADS} threads at once, one
 * partition per thread: its markers (in the order of the writes) as one run under the partition
 * lock, each checked by its own guard right before it, fsynced together
 * ({@code PartitionAppender.appendMarkers}); the guards' SQLite reads are serialized on the store
 * (one connection). Nothing is ended before every marker is fsynced.
 */
public final class SinkCommitter implements AutoCloseable {
    /** Partitions whose markers are written (and fsynced) at once by one commit. */
    public static final int MAX_MARKER_THREADS = 16;

    private final SinkStore store;
    private final PartitionAppenders appenders;
    private ExecutorService markerThreads;

    public SinkCommitter(String clusterDir, SinkStore store) {
        this.store = store;
        this.appenders = new PartitionAppenders(clusterDir);
    }

    /**
     * Commit a batch exactly once; false when it is the sink's last committed batch (a replay:
     * its writes are aborted).
     */
    public boolean commit(String sinkId, long batchId, List<TaskWrites> writes) throws IOException {
        recover(sinkId);
        Long last = store.lastCommitted(sinkId);
        if (last != null && batchId <= last) {
            abortProducers(sinkId, producerIds(writes));
            if (batchId < last) {
                throw new KStreamException(KStreamException.Kind.CheckpointError, "sink '" + sinkId + "' was asked to"
                    + " commit batch " + batchId + ", but it committed batch " + last + " of this query already: the"
                    + " query's checkpoint was rolled back (restored from an older copy, or its offsets/commits logs"
                    + " cut). Its rows are not written twice, nor dropped silently: start the query on a fresh"
                    + " checkpoint location to write them as a new query");
            }
            return false;
        }
        List<Long> gone = store.decideCommit(sinkId, batchId, writes);
        if (!gone.isEmpty()) {
            abortProducers(sinkId, producerIds(writes));
            throw new KStreamException(KStreamException.Kind.FencedError, "batch " + batchId + " of sink '" + sinkId
                + "' cannot commit: the writes of task producer(s) " + gone + " were aborted (older than the cluster's"
                + " transaction.max.timeout.ms); nothing of the batch was committed. Restart the query to run the batch"
                + " again (or use a cluster created with a larger transaction.max.timeout.ms)");
        }
        finish(sinkId, batchId, writes);
        abortOrphansOf(sinkId);
        return true;
    }

    /**
     * Spark aborts the batch or job: everything the sink has open goes. With {@code batchId} (a
     * batch job's) the decision is kept, so an attempt that starts after the abort is refused.
     */
    public void abort(String sinkId, List<TaskWrites> writes, Long batchId) throws IOException {
        if (batchId != null) store.recordAborted(sinkId, batchId);
        abortProducers(sinkId, producerIds(writes));
        abortOrphansOf(sinkId);
    }

    /** Roll forward every commit of the sink a crashed driver decided but did not finish. */
    public void recover(String sinkId) throws IOException {
        for (long batchId : store.committingBatches(sinkId)) {
            Object[] state = store.batchState(sinkId, batchId);
            @SuppressWarnings("unchecked")
            List<TaskWrites> writes = (List<TaskWrites>) state[1];
            finish(sinkId, batchId, writes);
        }
    }

    private void finish(String sinkId, long batchId, List<TaskWrites> writes) throws IOException {
        BooleanSupplier decided = () -> {
            Object[] state = store.batchState(sinkId, batchId);
            return state != null && TransactionTables.COMMITTING.equals(state[0]);
        };
        // Each partition's markers in the writes' order, the partitions in parallel.
        Map<TopicPartition, List<Long>> byPartition = new TreeMap<>();
        for (TaskWrites w : writes) {
            for (TopicPartition p : new TreeSet<>(w.partitions)) {
                byPartition.computeIfAbsent(p, k -> new ArrayList<>()).add(w.producerId);
            }
        }
        List<Callable<List<SinkStore.End>>> jobs = new ArrayList<>();
        for (Map.Entry<TopicPartition, List<Long>> entry : byPartition.entrySet()) {
            TopicPartition p = entry.getKey();
            PartitionAppender appender = appenders.get(p.topic, p.partition);  // made here: not thread-safe
            jobs.add(() -> {
                // One run under the partition lock: each marker checked by its own guard, all
                // fsynced together (one fsync set per partition, not per marker).
                List<Long> producers = entry.getValue();
                List<byte[]> markers = new ArrayList<>(producers.size());
                List<PartitionAppender.TransactionGuard> guards = new ArrayList<>(producers.size());
                for (long producerId : producers) {
                    markers.add(MarkerFrames.marker(true, producerId, TransactionTables.SINK_EPOCH));
                    guards.add(logEnd -> {
                        synchronized (store) {
                            return store.isOpen(p.topic, p.partition, producerId) && decided.getAsBoolean();
                        }
                    });
                }
                PartitionAppender.Result result = appender.appendMarkers(markers, true, guards);
                List<SinkStore.End> done = new ArrayList<>();
                for (int i = 0; result != null && i < producers.size(); i++) {
                    long marker = result.baseOffsets[i];
                    if (marker >= 0) done.add(new SinkStore.End(p.topic, p.partition, producers.get(i), marker));
                }
                return done;
            });
        }
        List<SinkStore.End> ends = new ArrayList<>();
        for (List<SinkStore.End> done : runAll(jobs)) ends.addAll(done);
        // Every marker is fsynced (acks=all) by now; the rows end with the Committed state, together.
        store.endPartitions(ends, false, tx -> {
            SinkStore.markCommitted(tx, sinkId, batchId, writes);
            return null;
        });
    }

    /** Fence the writes first (their rows go), then abort what they left open. */
    private void abortProducers(String sinkId, Set<Long> producerIds) throws IOException {
        if (producerIds.isEmpty()) return;
        abortOrphans(store.fence(sinkId, producerIds));
    }

    private void abortOrphansOf(String sinkId) throws IOException {
        abortProducers(sinkId, store.sinkProducers(sinkId));
    }

    /** ABORT markers on the open rows nobody holds (all when {@code producerIds} is null); how many. */
    public int abortOrphans(Set<Long> producerIds) throws IOException {
        int count = 0;
        for (Object[] o : store.orphans()) {
            String topic = (String) o[0];
            int partition = ((Number) o[1]).intValue();
            long producerId = ((Number) o[2]).longValue();
            if (producerIds != null && !producerIds.contains(producerId)) continue;
            count++;
            Long marker = writeMarker(appenders.get(topic, partition), producerId, false,
                () -> store.isOrphan(topic, partition, producerId));
            if (marker != null) {
                store.endPartitions(List.of(new SinkStore.End(topic, partition, producerId, marker)), true, null);
            }
        }
        return count;
    }

    /** One marker under the partition lock while {@code stillDue} holds; its offset, or null. */
    private static Long writeMarker(PartitionAppender appender, long producerId, boolean commit,
                                    BooleanSupplier stillDue) throws IOException {
        PartitionAppender.Result result = appender.appendMarker(
            MarkerFrames.marker(commit, producerId, TransactionTables.SINK_EPOCH), commit, logEnd -> stillDue.getAsBoolean());
        return result == null ? null : result.baseOffsets[0];
    }

    /** Run the jobs on the marker threads (in this thread when there is one); the first failure is thrown. */
    private <T> List<T> runAll(List<Callable<T>> jobs) throws IOException {
        List<T> out = new ArrayList<>();
        if (jobs.size() == 1) {
            try {
                out.add(jobs.get(0).call());
                return out;
            } catch (IOException | RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
        if (markerThreads == null) {
            markerThreads = Executors.newFixedThreadPool(MAX_MARKER_THREADS, runnable -> {
                Thread t = new Thread(runnable, "kstream-sink-markers");
                t.setDaemon(true);
                return t;
            });
        }
        List<Future<T>> futures = new ArrayList<>();
        for (Callable<T> job : jobs) futures.add(markerThreads.submit(job));
        Throwable failed = null;
        boolean interrupted = false;
        for (Future<T> f : futures) {  // every job ends before anything is thrown: none left writing
            while (true) {
                try {
                    out.add(f.get());
                    break;
                } catch (ExecutionException e) {
                    if (failed == null) failed = e.getCause();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;  // markers are short: wait for them, then keep the interrupt
                }
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
        if (failed instanceof IOException) throw (IOException) failed;
        if (failed instanceof RuntimeException) throw (RuntimeException) failed;
        if (failed instanceof Error) throw (Error) failed;
        if (failed != null) throw new IOException("writing the commit's markers", failed);
        return out;
    }

    private static Set<Long> producerIds(List<TaskWrites> writes) {
        Set<Long> out = new HashSet<>();
        for (TaskWrites w : writes) out.add(w.producerId);
        return out;
    }

    @Override
    public void close() {
        if (markerThreads != null) markerThreads.shutdownNow();
        appenders.close();
    }
}

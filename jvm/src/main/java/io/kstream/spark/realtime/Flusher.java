package io.kstream.spark.realtime;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.MetadataSnapshot;
import io.kstream.spark.format.SharedAllocator;
import io.kstream.spark.format.SourcePosition;
import io.kstream.spark.log.PartitionAppender;
import io.kstream.spark.txn.MetadataDb;
import io.kstream.spark.write.RowFrames;
import io.kstream.spark.write.RowRouter;
import io.kstream.spark.write.SinkInput;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;

/**
 * The Real-time Mode sink's flusher: one thread per task that takes what {@link #add} buffered
 * and appends it as positioned frames (one per output partition and source identity), dropping
 * the rows whose source position the output partition already holds ({@link SourcePositions}).
 * While an append syncs, new rows gather: the next append takes them all (a group commit), so
 * latency stays near one append's time at any rate the disk sustains. An error stops the thread;
 * the next {@link #add} or {@link #close} raises it. {@link #add} waits while
 * {@link KStreamForeachWriter#MAX_BUFFERED_ROWS} rows await the flusher.
 */
final class Flusher {
    private record Key(String topic, int partition, SourcePosition.Identity identity) {}

    private record Out(PartitionAppender appender, SourcePositions positions, String topicId, int partition,
                       long maxFrameBytes) {}

    private static final class Pending {
        final List<RowRouter.Record> records = new ArrayList<>();
        final List<Long> offsets = new ArrayList<>();
    }

    private final SinkInput input;
    private final MetadataSnapshot snapshot;
    private final String acks;
    private final long lingerMs;
    private final Thread thread;
    private Map<Key, Pending> pending = new LinkedHashMap<>();
    private int buffered;
    private boolean closing;
    private Throwable error;
    // The flusher thread's own:
    private final Map<String, Out> outs = new HashMap<>();
    private MetadataDb db;
    private PositionedSources sources;
    private long lastSnapshotMs = System.currentTimeMillis();

    Flusher(SinkInput input, MetadataSnapshot snapshot, String acks, long lingerMs) {
        this.input = input;
        this.snapshot = snapshot;
        this.acks = acks;
        this.lingerMs = lingerMs;
        this.thread = new Thread(this::run, "kstream-rtm-flusher");
        thread.setDaemon(true);
        thread.start();
    }

    synchronized void add(RowRouter.Record record, SourcePosition.Identity id, long sourceOffset) {
        while (buffered >= KStreamForeachWriter.MAX_BUFFERED_ROWS && error == null && !closing) {
            try {
                wait();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new KStreamException(KStreamException.Kind.KStreamError, "interrupted waiting for the flusher", e);
            }
        }
        raiseError();
        Pending p = pending.computeIfAbsent(new Key(record.topic().name, record.partition(), id), k -> new Pending());
        p.records.add(record);
        p.offsets.add(sourceOffset);
        buffered++;
        notifyAll();
    }

    private void raiseError() {
        if (error != null) {
            throw new KStreamException(KStreamException.Kind.KStreamError, "the Real-time Mode sink's flusher"
                + " failed: " + error, error);
        }
    }

    /** Append everything buffered (when {@code clean}), stop the thread, save the snapshots. */
    void close(boolean clean) {
        synchronized (this) {
            closing = true;
            if (!clean) pending.clear();
            notifyAll();
        }
        try {
            thread.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KStreamException(KStreamException.Kind.KStreamError, "interrupted closing the flusher", e);
        }
        try {
            if (error == null) saveSnapshots();
        } finally {
            for (Out o : outs.values()) o.appender().close();
            if (db != null) db.close();
        }
        synchronized (this) {
            if (clean) raiseError();
        }
    }

    private void run() {
        BufferAllocator allocator = SharedAllocator.child("kstream-rtm-sink");
        try {
            RowFrames rowFrames = new RowFrames(input, allocator);
            while (true) {
                Map<Key, Pending> batch;
                synchronized (this) {
                    while (pending.isEmpty() && !closing) wait(KStreamForeachWriter.SNAPSHOT_INTERVAL_MS);
                    if (pending.isEmpty() && closing) return;
                }
                if (lingerMs > 0 && !closing) Thread.sleep(lingerMs);
                synchronized (this) {
                    batch = pending;
                    pending = new LinkedHashMap<>();
                    buffered = 0;
                    notifyAll();
                }
                write(batch, rowFrames);
                if (System.currentTimeMillis() - lastSnapshotMs >= KStreamForeachWriter.SNAPSHOT_INTERVAL_MS) {
                    saveSnapshots();
                }
            }
        } catch (Throwable e) {
            synchronized (this) {
                error = e;
                pending.clear();
                notifyAll();
            }
        } finally {
            allocator.close();
        }
    }

    private Out out(String topic, int partition) {
        String key = topic + "\n" + partition;
        Out o = outs.get(key);
        if (o == null) {
            if (db == null) {
                db = MetadataDb.open(input.cluster);
                sources = new PositionedSources(db);
            }
            MetadataSnapshot.TopicInfo info = snapshot.topic(topic);
            MetadataSnapshot.PartitionInfo p = info.partitions.get(partition);
            PartitionAppender.Config config = PartitionAppender.Config.of(info.config, acks);
            String dir = snapshot.leaderDir(topic, partition);
            PartitionAppender appender = new PartitionAppender(dir, snapshot.lockPath(topic, partition),
                p.replicas.size(), p.leaderEpoch, config);
            o = new Out(appender, new SourcePositions(dir, info.topicId, partition, appender, sources), info.topicId,
                partition, config.messageMaxBytes);
            outs.put(key, o);
        }
        return o;
    }

    /** Append one drained batch: per output partition, one call holding a frame per identity. */
    private void write(Map<Key, Pending> batch, RowFrames rowFrames) throws Exception {
        Map<String, List<Map.Entry<Key, Pending>>> byPartition = new LinkedHashMap<>();
        for (Map.Entry<Key, Pending> e : batch.entrySet()) {
            byPartition.computeIfAbsent(e.getKey().topic() + "\n" + e.getKey().partition(), k -> new ArrayList<>()).add(e);
        }
        for (List<Map.Entry<Key, Pending>> items : byPartition.values()) {
            Key first = items.get(0).getKey();
            Out o = out(first.topic(), first.partition());
            try {
                appendPartition(o, items, rowFrames);
            } catch (Exception | Error e) {
                o.positions().forget();
                throw e;
            }
        }
    }

    private void appendPartition(Out o, List<Map.Entry<Key, Pending>> items, RowFrames rowFrames) throws Exception {
        for (int attempt = 0; attempt < KStreamForeachWriter.MAX_APPEND_RETRIES; attempt++) {
            List<byte[]> frames = new ArrayList<>();
            List<SourcePosition.Span> spans = new ArrayList<>();
            long now = System.currentTimeMillis();
            for (Map.Entry<Key, Pending> e : items) {
                SourcePosition.Identity id = e.getKey().identity();
                long last = o.positions().lastOffset(id);
                Pending p = e.getValue();
                RowFrames.Rows rows = new RowFrames.Rows();
                List<Long> kept = new ArrayList<>();
                for (int i = 0; i < p.records.size(); i++) {
                    long offset = p.offsets.get(i);
                    if (offset <= last) continue;  // a replayed position the log has (or a repeat in this batch)
                    RowRouter.Record r = p.records.get(i);
                    rows.add(r.key(), r.value(), r.timestamp(), r.headers());
                    kept.add(offset);
                    last = offset;
                }
                if (kept.isEmpty()) continue;
                for (int from = 0; from < kept.size(); from += KStreamForeachWriter.MAX_FRAME_ROWS) {
                    int to = Math.min(kept.size(), from + KStreamForeachWriter.MAX_FRAME_ROWS);
                    rowFrames.encode(rows, from, to, now, frames, o.maxFrameBytes(), 0, id.producerId(), (short) -1,
                        (a, b) -> id.metadata(kept.get(a), kept.get(b - 1)));
                }
                spans.add(new SourcePosition.Span(id, kept.get(0), kept.get(kept.size() - 1)));
            }
            if (frames.isEmpty()) return;
            PartitionAppender.Result result = o.appender().appendPositioned(frames, o.positions().guard(spans));
            if (result != null) {
                o.positions().appended(spans, result.endOffset);
                return;
            }
            // Another writer of one of these identities appended first: filter again with what it wrote.
        }
        throw new KStreamException(KStreamException.Kind.KStreamError, "another writer of the same source"
            + " identities kept appending first, " + KStreamForeachWriter.MAX_APPEND_RETRIES + " times in a row: two"
            + " queries (or task attempts) share one checkpoint's sink id");
    }

    private void saveSnapshots() {
        lastSnapshotMs = System.currentTimeMillis();
        for (Out o : outs.values()) {
            long end = o.positions().knownEnd();
            if (end < 0) continue;
            for (Map.Entry<SourcePosition.Identity, Long> e : o.positions().lastOffsets().entrySet()) {
                sources.save(e.getKey(), o.topicId(), o.partition(), e.getValue(), end);
            }
        }
    }
}

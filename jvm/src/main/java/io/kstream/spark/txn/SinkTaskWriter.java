package io.kstream.spark.txn;

import io.kstream.spark.format.Format;
import io.kstream.spark.format.FrameEncoder;
import io.kstream.spark.format.FrameHeader;
import io.kstream.spark.log.PartitionAppender;
import io.kstream.spark.read.TopicPartition;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

/**
 * One Spark sink task attempt's transactional writes, as Python's {@code SinkTaskWriter} and
 * the sink producer make them (src/kstream/log/transactions/sink.py, src/kstream/sink/writer.py):
 * a producer id of its own from the metadata counter with its sink_producers row (refused when
 * the task's batch is decided already: a zombie), then per append, under the partition lock, the
 * attempt is checked live ({@code check_live}) or joins the partition ({@code add_partition}: its
 * open_transaction_partitions row with the first offset, before the first frame), and the frames
 * go in with the TRANSACTIONAL attribute, the task's producer id, epoch 0, acks=all (fsynced
 * before the driver's decision can name them). Nothing becomes visible to read_committed readers
 * until the driver commits ({@link SinkCommitter}); an attempt aborted meanwhile gets FencedError
 * and writes nothing more. {@link #writes} is the commit message. Not thread-safe.
 */
public final class SinkTaskWriter implements AutoCloseable {
    private final SinkStore store;
    private final String sinkId;
    private final long producerId;
    private final PartitionAppenders appenders;
    private final TreeSet<TopicPartition> partitions = new TreeSet<>();
    private long records;

    /** @param batchId the batch the task writes, when it knows it (a batch job's 0), else null */
    public SinkTaskWriter(String clusterDir, SinkStore store, String sinkId, Long batchId) {
        this.store = store;
        this.sinkId = sinkId;
        this.producerId = store.newTaskProducer(sinkId, batchId);
        this.appenders = new PartitionAppenders(clusterDir);
    }

    public long producerId() {
        return producerId;
    }

    /**
     * Append plain frames (as {@link FrameEncoder#frame} makes them, without producer id) as this
     * attempt's transactional frames, or frames encoded as this attempt's already (the
     * TRANSACTIONAL attribute, its {@link #producerId}, the sink epoch, no sequence: taken as they
     * are, without a copy, as the JVM writer's tasks encode them); their base offsets.
     */
    public long[] append(String topic, int partition, List<byte[]> frames) throws IOException {
        List<byte[]> stamped = new ArrayList<>(frames.size());
        int count = 0;
        for (byte[] raw : frames) {
            stamped.add(stamp(raw));
            count += FrameHeader.read(ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN), 0).recordCount;
        }
        TopicPartition key = new TopicPartition(topic, partition);
        PartitionAppender appender = appenders.get(topic, partition);
        PartitionAppender.Result result = appender.appendTransactional(stamped, logEnd -> {
            if (partitions.contains(key)) {
                store.checkLive(sinkId, producerId);
            } else {
                store.addPartition(sinkId, producerId, topic, partition, logEnd);
                partitions.add(key);
            }
            return true;
        });
        records += count;
        return result.baseOffsets;
    }

    private byte[] stamp(byte[] raw) {
        ByteBuffer view = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN);
        FrameHeader given = FrameHeader.read(view, 0);
        if ((given.attributes & (Format.TRANSACTIONAL | Format.CONTROL)) == Format.TRANSACTIONAL
                && given.producerId == producerId
                && view.getShort(Format.POS_PRODUCER_EPOCH) == TransactionTables.SINK_EPOCH
                && view.getInt(Format.POS_BASE_SEQUENCE) == -1) {
            return raw;  // this attempt's own frame already (JvmDataWriter encodes them so)
        }
        byte[] copy = raw.clone();
        ByteBuffer b = ByteBuffer.wrap(copy).order(ByteOrder.LITTLE_ENDIAN);
        FrameHeader header = FrameHeader.read(b, 0);
        if ((header.attributes & (Format.TRANSACTIONAL | Format.CONTROL)) != 0
                || header.producerId != Format.NO_PRODUCER_ID) {
            throw new IllegalArgumentException("a sink task appends plain frames (no producer id, not transactional),"
                + " or its own transactional ones (producer id " + producerId + ", epoch 0, no sequence); this one has"
                + " attributes 0x"
                + Integer.toHexString(header.attributes) + " and producer id " + header.producerId);
        }
        b.put(Format.POS_ATTRIBUTES, (byte) (header.attributes | Format.TRANSACTIONAL));
        b.putLong(Format.POS_PRODUCER_ID, producerId);
        b.putShort(Format.POS_PRODUCER_EPOCH, TransactionTables.SINK_EPOCH);
        FrameEncoder.seal(b, 0);
        return copy;
    }

    /** The commit message: producer id, the partitions written (sorted), the record count. */
    public TaskWrites writes() {
        return new TaskWrites(producerId, new ArrayList<>(partitions), records);
    }

    @Override
    public void close() {
        appenders.close();
    }
}

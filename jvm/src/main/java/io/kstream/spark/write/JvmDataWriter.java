package io.kstream.spark.write;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.Format;
import io.kstream.spark.format.FrameEncoder;
import io.kstream.spark.format.MetadataSnapshot;
import io.kstream.spark.log.PartitionAppender;
import io.kstream.spark.txn.SinkStore;
import io.kstream.spark.txn.SinkTaskWriter;
import io.kstream.spark.txn.TransactionTables;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;

/**
 * One Spark task attempt of a JVM batch write: Python's {@code write_task}
 * (src/kstream/sink/writer.py) on {@link SinkTaskWriter}. The attempt registers its own producer
 * id (refused when the batch is decided already: a zombie), buffers rows per partition (the
 * {@code partition} column, else Kafka's murmur2 of the key, else the sticky partition of the
 * {@link Partitioner}) and writes each buffer as one transactional frame of a bytes topic's
 * stored columns (key, value, timestamp, headers: those the input has, as the Python sink stores
 * them) under the partition lock, fsynced (acks=all) before {@link #commit} hands the driver its
 * {@code TaskWrites}. Nothing is visible to read_committed readers until the driver commits; a
 * failed or aborted attempt's frames are aborted by the driver (its producer is the sink's until
 * then). Rows of a typed topic, of a topic with RF &gt; 1 or of a missing one are refused with the
 * error saying what to do (docs/JVM_WRITER.md).
 */
final class JvmDataWriter implements DataWriter<InternalRow> {
    /**
     * Rows buffered per partition before a frame is written (at 100-byte records the 4 MB bound
     * comes first, ~36,000 rows). Each frame is an acks=all append with its fsyncs and, the first
     * time a partition is written, its SQLite row; the commit adds a marker per partition written:
     * 16,384 rows cut a 33,334-row task of issue 22's ETL into three appends to three partitions.
     */
    static final int MAX_FRAME_ROWS = 65_536;
    /** Bytes (keys, values, headers) buffered per partition before a frame is written, at most. */
    static final long MAX_FRAME_BYTES = 4L << 20;

    private final SinkInput input;
    private final MetadataSnapshot snapshot;
    private final SinkStore store;
    private final SinkTaskWriter writer;
    private final Partitioner partitioner = new Partitioner(Partitioner.MURMUR2_RANDOM, new Random());
    private final RowRouter router;
    private final BufferAllocator allocator = new RootAllocator();
    private final RowFrames rowFrames;
    private final Map<RowRouter.TopicTarget.Key, RowFrames.Rows> buffers = new LinkedHashMap<>();

    JvmDataWriter(SinkInput input, String sinkId, Long batchId) {
        this(input, sinkId, batchId, JvmBatchWrite.store(input.cluster));
    }

    /** With the task's store open already (it is this writer's from here: closed by {@link #close}). */
    JvmDataWriter(SinkInput input, String sinkId, Long batchId, SinkStore store) {
        this.input = input;
        this.store = store;
        try {
            this.snapshot = MetadataSnapshot.read(input.cluster);
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
        SinkTaskWriter made;
        try {
            made = new SinkTaskWriter(input.cluster, store, sinkId, batchId);
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
        this.writer = made;
        this.rowFrames = new RowFrames(input, allocator);
        this.router = new RowRouter(input, snapshot, partitioner);
    }

    @Override
    public void write(InternalRow row) throws IOException {
        RowRouter.Record r = router.route(row);
        RowRouter.TopicTarget.Key where = new RowRouter.TopicTarget.Key(r.topic().name, r.partition());
        RowFrames.Rows buffer = buffers.computeIfAbsent(where, k -> new RowFrames.Rows());
        buffer.add(r.key(), r.value(), r.timestamp(), r.headers());
        if (buffer.size() >= MAX_FRAME_ROWS || buffer.bytes() >= MAX_FRAME_BYTES) {
            flush(where, buffer, r.topic());
            buffers.remove(where);
        }
    }

    /** One partition's buffered rows as one transactional frame (cut in two while larger than message.max.bytes). */
    private void flush(RowRouter.TopicTarget.Key where, RowFrames.Rows buffer, RowRouter.TopicTarget topic) throws IOException {
        List<byte[]> frames = new ArrayList<>();
        long now = System.currentTimeMillis();
        // Encoded as the attempt's transactional frames at once: SinkTaskWriter takes them without
        // stamping a copy (a 4 MB copy a frame in issue 22's profile of the batch write).
        rowFrames.encode(buffer, 0, buffer.size(), now, frames, maxFrameBytes(snapshot, topic.name),
            Format.TRANSACTIONAL, writer.producerId(), TransactionTables.SINK_EPOCH, null);
        writer.append(where.topic(), where.partition(), frames);
        partitioner.batchSent(where.topic(), topic.partitions, where.partition());
    }

    /** The topic's message.max.bytes (its own override, else the appender's default). */
    static long maxFrameBytes(MetadataSnapshot snapshot, String topic) {
        String raw = snapshot.topic(topic).config.get("message.max.bytes");
        return raw == null ? new PartitionAppender.Config().messageMaxBytes : Long.parseLong(raw.trim());
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
        for (Map.Entry<RowRouter.TopicTarget.Key, RowFrames.Rows> e : buffers.entrySet()) {
            flush(e.getKey(), e.getValue(), router.target(e.getKey().topic()));
        }
        buffers.clear();
        return new JvmTaskCommit(writer.writes());
    }

    @Override
    public void abort() {
        // Nothing written becomes visible: the driver's abort (or the next commit of this sink)
        // fences this attempt's producer and writes its ABORT markers.
        buffers.clear();
    }

    @Override
    public void close() {
        try {
            writer.close();
        } finally {
            store.close();
            allocator.close();
        }
    }
}

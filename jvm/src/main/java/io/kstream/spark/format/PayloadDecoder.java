package io.kstream.spark.format;

import io.kstream.spark.error.KStreamException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.arrow.compression.CommonsCompressionFactory;
import org.apache.arrow.flatbuf.MessageHeader;
import org.apache.arrow.flatbuf.RecordBatch;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ForeignAllocation;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.TypeLayout;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.MessageMetadataResult;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Decodes a frame's payload (Arrow IPC stream: schema message, record-batch message, no
 * end-of-stream marker) into Arrow vectors, zero copy: uncompressed buffers are the
 * memory-mapped segment's bytes (safe: segment files never shrink in place, see
 * {@link SegmentView}); lz4-frame and zstd buffer compression is undone by arrow-compression
 * into the caller's allocator. With a column selection, the buffers of unselected columns are
 * neither touched, decompressed nor loaded: the record batch is cut down to the selected
 * fields' nodes and buffers first.
 * Keeps the last schema seen (frames of a partition share it). Not thread-safe: one per split.
 * The caller closes each returned root before the segment map may go away.
 */
public final class PayloadDecoder {
    private final BufferAllocator allocator;
    private ByteBuffer lastSchemaBytes;
    private Schema lastSchema;

    public PayloadDecoder(BufferAllocator allocator) {
        this.allocator = allocator;
    }

    /** The Arrow schema of a frame (its schema message). */
    public Schema schema(Frame frame) {
        ByteBuffer bytes = frame.payload.slice(0, (int) frame.header.schemaLength);
        if (lastSchemaBytes != null && lastSchemaBytes.equals(bytes)) return lastSchema;
        try {
            Schema schema = MessageSerializer.deserializeSchema(new ReadChannel(new BufferChannel(bytes.duplicate())));
            ByteBuffer copy = ByteBuffer.allocate(bytes.capacity()).put(bytes.duplicate()).flip();
            lastSchemaBytes = copy;
            lastSchema = schema;
            return schema;
        } catch (IOException | RuntimeException e) {
            throw KStreamException.corrupt("unreadable schema message (" + e + ")", frame.path, frame.position,
                frame.header.baseOffset);
        }
    }

    /** The Arrow schema stored in a topic's schema version (an IPC schema message). */
    public static Schema schemaOf(byte[] schemaMessage) throws IOException {
        return MessageSerializer.deserializeSchema(new ReadChannel(new BufferChannel(ByteBuffer.wrap(schemaMessage))));
    }

    /**
     * The frame's record batch as vectors of the selected columns that it holds ({@code columns}
     * null: all). The caller closes the root.
     */
    public VectorSchemaRoot decode(Frame frame, Set<String> columns) {
        Schema schema = schema(frame);
        int schemaLength = (int) frame.header.schemaLength;
        ByteBuffer payload = frame.payload;
        try {
            ByteBuffer message = payload.slice(schemaLength, payload.capacity() - schemaLength);
            ReadChannel channel = new ReadChannel(new BufferChannel(message.duplicate()));
            MessageMetadataResult result = MessageSerializer.readMessage(channel);
            if (result == null || result.headerType() != MessageHeader.RecordBatch) {
                throw new IOException("no record-batch message after the schema");
            }
            long bodyStart = channel.bytesRead();
            long bodyLength = result.getMessageBodyLength();
            if (bodyStart + bodyLength > message.capacity()) {
                throw new IOException("record-batch body of " + bodyLength + " bytes runs past the payload");
            }
            RecordBatch header = (RecordBatch) result.getMessage().header(new RecordBatch());
            // Zero copy: Arrow buffers over the mapped payload. deserializeRecordBatch takes the
            // one reference `body` holds (and retains each buffer it slices), so `body` is not
            // released here; the map stays alive until the last vector over it is closed.
            ArrowBuf whole = allocator.wrapForeignAllocation(new MappedAllocation(message));
            ArrowBuf body = whole.slice(bodyStart, bodyLength);
            try (ArrowRecordBatch batch = MessageSerializer.deserializeRecordBatch(header, body)) {
                return load(schema, batch, columns);
            }
        } catch (IOException | RuntimeException e) {
            if (e instanceof KStreamException) throw (KStreamException) e;
            throw KStreamException.corrupt("undecodable record batch (" + e + ")", frame.path, frame.position,
                frame.header.baseOffset);
        }
    }

    private VectorSchemaRoot load(Schema schema, ArrowRecordBatch batch, Set<String> columns) {
        List<Field> fields = schema.getFields();
        List<Field> kept = new ArrayList<>();
        List<ArrowFieldNode> nodes = new ArrayList<>();
        List<ArrowBuf> buffers = new ArrayList<>();
        int node = 0;
        int buffer = 0;
        for (Field field : fields) {
            int fieldNodes = countNodes(field);
            int fieldBuffers = countBuffers(field);
            if (columns == null || columns.contains(field.getName())) {
                kept.add(field);
                nodes.addAll(batch.getNodes().subList(node, node + fieldNodes));
                buffers.addAll(batch.getBuffers().subList(buffer, buffer + fieldBuffers));
            }
            node += fieldNodes;
            buffer += fieldBuffers;
        }
        if (kept.size() == fields.size()) {
            VectorSchemaRoot whole = VectorSchemaRoot.create(schema, allocator);
            new VectorLoader(whole, CommonsCompressionFactory.INSTANCE).load(batch);
            return whole;
        }
        VectorSchemaRoot root = VectorSchemaRoot.create(new Schema(kept), allocator);
        try (ArrowRecordBatch pruned = new ArrowRecordBatch(batch.getLength(), nodes, buffers,
                batch.getBodyCompression(), false)) {
            new VectorLoader(root, CommonsCompressionFactory.INSTANCE).load(pruned);
        } catch (RuntimeException e) {
            root.close();
            throw e;
        }
        return root;
    }

    private static int countNodes(Field field) {
        int n = 1;
        for (Field child : field.getChildren()) n += countNodes(child);
        return n;
    }

    private static int countBuffers(Field field) {
        int n = TypeLayout.getTypeBufferCount(field.getType());
        for (Field child : field.getChildren()) n += countBuffers(child);
        return n;
    }

    /** Arrow's view of a payload slice of a segment map; holding it keeps the map alive. */
    private static final class MappedAllocation extends ForeignAllocation {
        @SuppressWarnings("unused")
        private final ByteBuffer keepAlive;

        MappedAllocation(ByteBuffer slice) {
            super(slice.capacity(), MemoryUtil.getByteBufferAddress(slice));
            this.keepAlive = slice;
        }

        @Override
        protected void release0() {
            // nothing to free: the GC unmaps the segment once no buffer refers to it
        }
    }

    /** A ReadableByteChannel over a ByteBuffer (for Arrow's ReadChannel). */
    private static final class BufferChannel implements ReadableByteChannel {
        private final ByteBuffer source;

        BufferChannel(ByteBuffer source) {
            this.source = source;
        }

        @Override
        public int read(ByteBuffer dst) {
            if (!source.hasRemaining()) return -1;
            int n = Math.min(dst.remaining(), source.remaining());
            ByteBuffer part = source.slice(source.position(), n);
            dst.put(part);
            source.position(source.position() + n);
            return n;
        }

        @Override
        public boolean isOpen() {
            return true;
        }

        @Override
        public void close() {}
    }
}

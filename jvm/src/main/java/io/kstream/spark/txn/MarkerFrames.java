package io.kstream.spark.txn;

import io.kstream.spark.format.Format;
import io.kstream.spark.format.FrameEncoder;
import io.kstream.spark.format.SharedAllocator;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * A transaction marker as Python's {@code write_markers} makes it (docs/FORMAT.md): a control
 * frame (CONTROL | TRANSACTIONAL) of one record whose {@code value} column holds COMMIT or ABORT,
 * no key, timestamps 0, the producer id and epoch of the transaction it ends, no sequence,
 * uncompressed.
 */
public final class MarkerFrames {
    private static final int NO_SEQUENCE = -1;

    private MarkerFrames() {
    }

    public static byte[] marker(boolean commit, long producerId, short producerEpoch) {
        byte[] value = (commit ? Format.CONTROL_COMMIT : Format.CONTROL_ABORT).getBytes(StandardCharsets.US_ASCII);
        Schema schema = new Schema(List.of(new Field("value", FieldType.nullable(ArrowType.Binary.INSTANCE), null)));
        try (BufferAllocator allocator = SharedAllocator.child("kstream-marker");
             VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
            VarBinaryVector values = (VarBinaryVector) root.getVector("value");
            values.allocateNew(1);
            values.setSafe(0, value);
            root.setRowCount(1);
            FrameEncoder.Payload payload = FrameEncoder.payload(root, "none");
            return FrameEncoder.frame(payload, "none", Format.CONTROL | Format.TRANSACTIONAL, 0, 1, 0, producerId,
                producerEpoch, NO_SEQUENCE, 0, 0);
        } catch (IOException e) {
            throw new UncheckedIOException("encoding a transaction marker in memory", e);
        }
    }
}

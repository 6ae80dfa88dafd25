package io.kstream.spark.write;

import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.internal.connector.SupportsStreamingUpdateAsAppend;

/**
 * Python's write builder, also accepting Spark's {@code update} output mode (see
 * {@link KStreamWriteTable}). Spark picks the mode by the builder's interfaces
 * (StreamExecution.createWrite): append calls {@link #build}; update checks for
 * SupportsStreamingUpdateAsAppend and calls {@link #build} too, so an update-mode batch is
 * written as an append of the rows Spark gives (the changed aggregates), as Spark's Kafka
 * connector writes it; complete mode calls {@link #truncate}, passed to Python's builder
 * (whose write then gets overwrite=true, as without the jar: a batch Overwrite is refused in
 * the Python sink's words). An append's writer, JVM or Python, is chosen by {@link KStreamWrite}.
 */
public final class UpdateAsAppendWriteBuilder implements SupportsTruncate, SupportsStreamingUpdateAsAppend {
    private final WriteBuilder python;
    private final LogicalWriteInfo info;

    /** {@code info}: the write's options and schema; null (unit tests) builds Python's write as is. */
    public UpdateAsAppendWriteBuilder(WriteBuilder python, LogicalWriteInfo info) {
        this.python = python;
        this.info = info;
    }

    /** An append (batch, or streaming in append or update mode): the writer is chosen by {@link KStreamWrite}. */
    @Override
    public Write build() {
        return info == null ? python.build() : new KStreamWrite(python, info);
    }

    /** Complete mode (and batch overwrite): Python's truncate, or Spark's own refusal without it. */
    @Override
    public WriteBuilder truncate() {
        if (!(python instanceof SupportsTruncate truncating)) {
            throw new UnsupportedOperationException("the kstream Python sink's write builder ("
                + python.getClass().getName() + ") does not support truncate (complete output mode)");
        }
        return truncating.truncate();
    }
}

package io.kstream.spark.write;

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
 * (whose write then gets overwrite=true, as without the jar).
 */
public final class UpdateAsAppendWriteBuilder implements SupportsTruncate, SupportsStreamingUpdateAsAppend {
    private final WriteBuilder python;

    public UpdateAsAppendWriteBuilder(WriteBuilder python) {
        this.python = python;
    }

    @Override
    public Write build() {
        return python.build();
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

package io.kstream.spark.write;

import java.util.Map;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;

/**
 * A {@code format("kstream")} append, batch or streaming: Spark asks {@link #toBatch} or
 * {@link #toStreaming}, and {@link WriterChoice} picks the writer then (option writer): the JVM
 * writer ({@link JvmBatchWrite}, {@link JvmStreamingWrite}) or the Python sink's write, built from Python's builder only
 * when it is used (building it runs no Python).
 */
public final class KStreamWrite implements Write {
    private final WriteBuilder python;
    private final LogicalWriteInfo info;
    private Write pythonWrite;

    public KStreamWrite(WriteBuilder python, LogicalWriteInfo info) {
        this.python = python;
        this.info = info;
    }

    private Write pythonWrite() {
        if (pythonWrite == null) pythonWrite = python.build();
        return pythonWrite;
    }

    @Override
    public String description() {
        return "kstream";
    }

    @Override
    public BatchWrite toBatch() {
        Map<String, String> options = info.options().asCaseSensitiveMap();
        if (WriterChoice.batch(options) == WriterChoice.Writer.JVM) {
            return new JvmBatchWrite(SinkInput.of(options, info.schema()));
        }
        return pythonWrite().toBatch();
    }

    @Override
    public StreamingWrite toStreaming() {
        Map<String, String> options = info.options().asCaseSensitiveMap();
        if (WriterChoice.streaming(options) == WriterChoice.Writer.JVM) {
            return new JvmStreamingWrite(SinkInput.of(options, info.schema()), options);
        }
        return pythonWrite().toStreaming();
    }

    @Override
    public CustomMetric[] supportedCustomMetrics() {
        return pythonWrite().supportedCustomMetrics();
    }
}

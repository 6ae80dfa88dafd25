package io.kstream.spark.write;

import io.kstream.spark.txn.TaskWrites;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** A JVM writer task's commit message to the driver: what it wrote (Python's {@code TaskCommit}). */
public final class JvmTaskCommit implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;

    public final TaskWrites writes;

    public JvmTaskCommit(TaskWrites writes) {
        this.writes = writes;
    }

    @Override
    public String toString() {
        return "JvmTaskCommit(" + writes + ")";
    }
}

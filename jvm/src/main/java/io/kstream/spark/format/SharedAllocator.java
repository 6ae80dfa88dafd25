package io.kstream.spark.format;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;

/**
 * One Arrow root allocator per JVM (driver or executor), made on first use, and a child of it
 * for each user: a partition reader, a planner's or a transaction scan's decoder. A child is
 * closed by its user in {@code finally}; closing it checks that its user freed every buffer
 * (Arrow throws naming the leak), which a root per reader used to do at the cost of one root,
 * with its own accounting and netty arenas, per task. Thread-safe (Arrow's allocators are).
 * The root is never closed: it lives as long as the JVM, as Spark's own ArrowUtils root does.
 */
public final class SharedAllocator {
    private SharedAllocator() {}

    private static final class Holder {
        // No byte limit of its own: Spark's off-heap accounting and the JVM's
        // -XX:MaxDirectMemorySize bound what the readers may hold, as for Spark's Arrow root.
        static final RootAllocator ROOT = new RootAllocator(Long.MAX_VALUE);
    }

    /** A new child allocator named {@code name} (for Arrow's leak messages); the caller closes it. */
    public static BufferAllocator child(String name) {
        return Holder.ROOT.newChildAllocator(name, 0, Long.MAX_VALUE);
    }
}

package io.kstream.spark.format;

import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.junit.jupiter.api.Test;

/** Every user's allocator is a child of one root, and closing a child still catches a leak. */
class SharedAllocatorTest {
    @Test
    void childrenShareOneRoot() {
        try (BufferAllocator first = SharedAllocator.child("a"); BufferAllocator second = SharedAllocator.child("b")) {
            assertSame(first.getRoot(), second.getRoot());
        }
    }

    @Test
    void closingAChildThatLeakedThrows() {
        BufferAllocator child = SharedAllocator.child("leaky");
        ArrowBuf leaked = child.buffer(64);
        assertThrows(IllegalStateException.class, child::close, "64 bytes of " + leaked + " were never freed");
        // the 64 bytes stay counted in the root for this test JVM; nothing else closes it
    }
}

package io.kstream.spark.format;

import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.channels.FileChannel;
import java.nio.file.OpenOption;
import java.nio.file.Path;

/**
 * File channels the writers open: uninterruptible when the JDK lets us (Spark's launcher opens
 * {@code java.base/sun.nio.ch}). An interrupted NIO operation closes its channel and throws
 * {@code ClosedByInterruptException}, and Spark interrupts the threads of the tasks it cancels
 * (the other tasks of a failed job): an append cut there leaves a frame without its index entries
 * or a recorded transaction without its first frame. With the channel uninterruptible, the
 * operation finishes and the interrupt stays pending for the next wait (a lock, a sleep) to see.
 */
public final class Channels {
    private static final Method SET_UNINTERRUPTIBLE = uninterruptibleSetter();

    private Channels() {}

    /** {@link FileChannel#open}, made uninterruptible when the JDK lets us. */
    public static FileChannel open(Path path, OpenOption... options) throws IOException {
        FileChannel channel = FileChannel.open(path, options);
        try {
            makeUninterruptible(channel);
        } catch (RuntimeException e) {
            channel.close();
            throw e;
        }
        return channel;
    }

    /** Whether this JVM's channels survive a thread interrupt (false: Spark's
     *  {@code --add-opens java.base/sun.nio.ch} is missing, and a cancelled task can close one). */
    public static boolean uninterruptible() {
        return SET_UNINTERRUPTIBLE != null;
    }

    static void makeUninterruptible(FileChannel channel) {
        if (SET_UNINTERRUPTIBLE == null) return;
        try {
            SET_UNINTERRUPTIBLE.invoke(channel);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("sun.nio.ch.FileChannelImpl.setUninterruptible failed", e);
        }
    }

    private static Method uninterruptibleSetter() {
        try {
            Method method = Class.forName("sun.nio.ch.FileChannelImpl").getDeclaredMethod("setUninterruptible");
            method.setAccessible(true);
            return method;
        } catch (ReflectiveOperationException | RuntimeException e) {  // InaccessibleObjectException
            return null;
        }
    }
}

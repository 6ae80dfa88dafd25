package io.kstream.spark.format;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * One segment file memory-mapped read-only, re-mapped when it has grown. Safe because no
 * segment file shrinks in place: a writer cutting a torn tail renames a new file over it, and
 * this view keeps the inode it mapped (see {@link #replaced}). Buffers handed out stay valid
 * after the view is closed (the map lives as long as a reference to it). Not thread-safe.
 */
public final class SegmentView implements AutoCloseable {
    public final String path;
    public final long baseOffset;
    private final FileChannel channel;
    private final Object fileKey;
    private MappedByteBuffer mapped;

    public SegmentView(String path, long baseOffset) throws IOException {
        this.path = path;
        this.baseOffset = baseOffset;
        this.channel = FileChannel.open(Path.of(path), StandardOpenOption.READ);
        this.fileKey = Files.readAttributes(Path.of(path), BasicFileAttributes.class).fileKey();
        this.mapped = map();
    }

    private MappedByteBuffer map() throws IOException {
        long size = Math.min(channel.size(), Integer.MAX_VALUE);
        MappedByteBuffer m = channel.map(FileChannel.MapMode.READ_ONLY, 0, size);
        m.order(ByteOrder.LITTLE_ENDIAN);
        return m;
    }

    /** Bytes mapped now. */
    public int mappedSize() {
        return mapped.capacity();
    }

    /** Bytes readable now (maps the new end when the file grew). */
    public int size() throws IOException {
        if (channel.size() > mapped.capacity()) mapped = map();
        return mapped.capacity();
    }

    /** The whole current map (absolute positions are file positions). */
    public ByteBuffer buffer() {
        return mapped;
    }

    /** A read-only little-endian slice [position, position + size) of the file (zero copy). */
    public ByteBuffer slice(int position, int size) {
        return mapped.slice(position, size).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** True when another file now has this path (a writer cut a torn tail): re-open it. */
    public boolean replaced() {
        try {
            return !fileKey.equals(Files.readAttributes(Path.of(path), BasicFileAttributes.class).fileKey());
        } catch (NoSuchFileException e) {
            return false; // deleted by retention: what we mapped stays readable
        } catch (IOException e) {
            return false;
        }
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }
}

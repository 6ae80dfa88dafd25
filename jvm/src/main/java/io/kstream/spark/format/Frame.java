package io.kstream.spark.format;

import java.nio.ByteBuffer;

/** One whole, checked frame: its header, where it is, and its payload (a zero-copy slice of the map). */
public final class Frame {
    public final FrameHeader header;
    public final String path;
    public final int position;
    public final ByteBuffer payload;

    Frame(FrameHeader header, String path, int position, ByteBuffer payload) {
        this.header = header;
        this.path = path;
        this.position = position;
        this.payload = payload;
    }
}

package io.kstream.spark.format;

import io.kstream.spark.error.KStreamException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Read side of one replica's log, as Python's log_reader.LogReader: frames from an offset up
 * to an end offset (exclusive), checked, zero copy.
 *
 * <ul>
 * <li>Returns only whole frames whose header checksum matches, and whose payload checksum
 *     matches when {@code verifyChecksums}; a frame not fully written yet in the active segment
 *     ends the read (a writer is mid-frame, or a torn tail awaits the next writer).</li>
 * <li>A bad frame, a sealed segment ending inside a frame, or a frame that does not hold the
 *     expected offset raises a CorruptBatchError naming file, position and offset.</li>
 * <li>The offset index is a hint: the frame an entry points at must be valid and start at the
 *     entry's offset, else the segment is walked from its start.</li>
 * <li>Takes no lock, writes nothing, creates nothing. Not thread-safe: one per split.</li>
 * </ul>
 */
public final class LogReader implements AutoCloseable {
    private static final int MAX_OPEN_SEGMENTS = 8;

    public final String directory;
    private final boolean verifyChecksums;
    private long[] bases;
    private final LinkedHashMap<Long, SegmentView> views = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, SegmentView> eldest) {
            if (size() <= MAX_OPEN_SEGMENTS) return false;
            closeQuietly(eldest.getValue());
            return true;
        }
    };
    // The sequential cursor: the next frame to hand out starts at (segment index, position).
    private int segment = -1;
    private int position;
    private long nextOffset = -1;

    public LogReader(String directory, boolean verifyChecksums) {
        this.directory = directory;
        this.verifyChecksums = verifyChecksums;
        this.bases = SegmentFiles.bases(directory);
    }

    public long[] refresh() {
        bases = SegmentFiles.bases(directory);
        return bases;
    }

    public long logStartOffset() {
        return bases.length == 0 ? 0 : bases[0];
    }

    private SegmentView view(long base) throws IOException {
        SegmentView v = views.get(base);
        if (v == null) {
            v = new SegmentView(SegmentFiles.path(directory, base, Format.LOG_SUFFIX), base);
            views.put(base, v);
        }
        return v;
    }

    private void reopen(long base) throws IOException {
        SegmentView old = views.remove(base);
        if (old != null) old.close();
    }

    /**
     * Position the reader at the frame holding {@code offset}. OffsetOutOfRangeError when it
     * lies before the log start (deleted by retention).
     */
    public void seek(long offset) {
        if (bases.length == 0 || offset < bases[0]) refresh();
        if (bases.length == 0) {
            segment = -1;
            nextOffset = offset;
            return;
        }
        if (offset < bases[0]) {
            throw KStreamException.outOfRange("offset " + offset + " is before the log start offset " + bases[0]
                + " of " + directory + " (deleted by retention?)");
        }
        segment = SegmentFiles.segmentFor(bases, offset);
        try {
            SegmentView v = view(bases[segment]);
            position = indexedStart(v, offset);
            nextOffset = offset;
            // Walk headers to the frame holding the offset.
            while (true) {
                int size = v.size();
                if (position + Format.HEADER_SIZE > size) return;
                FrameHeader h = FrameHeader.read(v.buffer(), position);
                if (h.length == 0 || h.problem(v.buffer(), position) != null || position + h.frameSize() > size) return;
                if (h.nextOffset() > offset) return;
                position += (int) h.frameSize();
                if (position >= size && segment < bases.length - 1) {
                    // The offset is past this sealed segment's last frame: the next one starts it.
                    segment++;
                    position = 0;
                    v = view(bases[segment]);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + directory + " at offset " + offset, e);
        }
    }

    private int indexedStart(SegmentView v, long offset) throws IOException {
        long[] entry = SparseIndex.offsets(directory, v.baseOffset).lookup(offset);
        if (entry[1] == 0) return 0;
        int size = v.size();
        if (entry[1] + Format.HEADER_SIZE <= size) {
            FrameHeader h = FrameHeader.read(v.buffer(), (int) entry[1]);
            if (h.problem(v.buffer(), (int) entry[1]) == null && h.baseOffset == entry[0]) return (int) entry[1];
        }
        return 0; // an entry that does not point at that frame: walk from the segment's start
    }

    /**
     * The next frame holding offsets at or after the last one handed out (or sought), if it
     * starts below {@code endOffset} and is fully written; else null.
     */
    public Frame next(long endOffset) {
        if (nextOffset >= endOffset) return null;
        if (segment < 0) {
            seek(nextOffset);
            if (segment < 0) return null;
        }
        try {
            while (true) {
                long base = bases[segment];
                SegmentView v = view(base);
                boolean sealed = segment < bases.length - 1;
                int size = v.mappedSize();
                if (position + Format.HEADER_SIZE > size) size = v.size();
                if (position + Format.HEADER_SIZE > size) {
                    if (sealed && position != size) {
                        throw KStreamException.corrupt("sealed segment ends inside a frame header", v.path, position,
                            nextOffset);
                    }
                    if (!sealed) {
                        if (v.replaced()) {
                            reopen(base);
                            continue;
                        }
                        refresh();
                        segment = SegmentFiles.segmentFor(bases, base);
                        if (segment >= bases.length - 1) return null;
                        continue; // rolled: look at this segment again, sealed now
                    }
                    segment++;
                    position = 0;
                    continue;
                }
                ByteBuffer buffer = v.buffer();
                FrameHeader h = FrameHeader.read(buffer, position);
                if (h.length == 0 && !sealed) return null; // zeros past the end of a torn tail
                String problem = h.problem(buffer, position);
                if (problem == null && position + h.frameSize() > size) {
                    size = v.size();
                    buffer = v.buffer();
                }
                if (problem == null && position + h.frameSize() > size) {
                    if (!sealed) return null; // a writer is mid-frame, or a torn tail
                    problem = "frame runs past the end of a sealed segment";
                }
                if (problem != null) {
                    if (!sealed && v.replaced()) {
                        reopen(base);
                        continue;
                    }
                    throw KStreamException.corrupt("bad frame (" + problem + ")", v.path, position, nextOffset);
                }
                if (h.nextOffset() <= nextOffset || h.baseOffset > nextOffset) {
                    throw KStreamException.corrupt("frame holds offsets " + h.baseOffset + ".." + (h.nextOffset() - 1)
                        + ", expected " + nextOffset, v.path, position, nextOffset);
                }
                ByteBuffer payload = v.slice(position + Format.HEADER_SIZE, (int) h.payloadSize());
                if (verifyChecksums && Format.crc32c(payload, 0, payload.capacity()) != h.payloadCrc) {
                    if (!sealed && v.replaced()) {
                        reopen(base);
                        continue;
                    }
                    throw KStreamException.corrupt("payload checksum mismatch", v.path, position, h.baseOffset);
                }
                Frame frame = new Frame(h, v.path, position, payload);
                position += (int) h.frameSize();
                nextOffset = h.nextOffset();
                return frame;
            }
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + directory + " at offset " + nextOffset, e);
        }
    }

    /** The next offset after the last whole, valid frame (walks the active segment's tail). */
    public long logEndOffset() {
        refresh();
        if (bases.length == 0) return 0;
        try {
            SegmentView v = view(bases[bases.length - 1]);
            long[] entry = SparseIndex.offsets(directory, v.baseOffset).lastEntry();
            int at = indexedStart(v, entry[0]);
            long offset = at == 0 ? v.baseOffset : entry[0];
            int size = v.size();
            ByteBuffer buffer = v.buffer();
            while (at + Format.HEADER_SIZE <= size) {
                FrameHeader h = FrameHeader.read(buffer, at);
                if (h.length == 0) break;
                String problem = h.problem(buffer, at);
                if (problem == null && at + h.frameSize() > size) break; // torn or being written
                if (problem == null && h.baseOffset != offset) problem = "offset " + h.baseOffset + ", expected " + offset;
                if (problem != null) {
                    if (isZeros(buffer, at, size)) break;
                    throw KStreamException.corrupt("bad frame (" + problem + ")", v.path, at, offset);
                }
                offset = h.nextOffset();
                at += (int) h.frameSize();
            }
            return offset;
        } catch (IOException e) {
            throw new UncheckedIOException("reading the log end of " + directory, e);
        }
    }

    private static boolean isZeros(ByteBuffer buffer, int from, int to) {
        for (int i = from; i < Math.min(to, from + Format.HEADER_SIZE); i++) if (buffer.get(i) != 0) return false;
        return true;
    }

    private static void closeQuietly(SegmentView v) {
        try {
            v.close();
        } catch (IOException ignored) {
            // closing a read-only channel: nothing was written that could be lost
        }
    }

    @Override
    public void close() {
        for (SegmentView v : views.values()) closeQuietly(v);
        views.clear();
    }
}

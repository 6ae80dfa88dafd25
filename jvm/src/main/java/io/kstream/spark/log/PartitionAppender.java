package io.kstream.spark.log;

import io.kstream.spark.error.KStreamException;
import io.kstream.spark.format.Channels;
import io.kstream.spark.format.Format;
import io.kstream.spark.format.FrameEncoder;
import io.kstream.spark.format.FrameHeader;
import io.kstream.spark.format.Fsync;
import io.kstream.spark.format.HighWatermark;
import io.kstream.spark.format.RecoveryPoint;
import io.kstream.spark.format.SegmentFiles;
import io.kstream.spark.format.SourcePosition;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * The Java writer's append path of one partition (leader replica, RF=1, non-transactional):
 * Python's {@code PartitionLog.append} + {@code Partition.append} (src/kstream/log/storage/partition_log.py,
 * segment.py, src/kstream/log/cluster/partition.py) on the same files, under the same
 * {@link PartitionLock}, so Python and Java writers may append to one partition at once.
 * docs/FORMAT.md is the one description both follow; docs/JVM_WRITER.md describes this class.
 *
 * <p>Under the lock, per {@link #append} call: learn the log end (a first use, or another
 * writer's roll or cut (the lock generation moved), re-reads the active segment from its start;
 * otherwise the frames others appended since are read by header), cut a torn tail a killed
 * writer left (never below the recovery point), then per frame: roll when the segment is full
 * ({@code segment.bytes}), old ({@code segment.ms}) or the frame's offsets or position would
 * not fit an index entry (u32); record a new leader epoch in {@code leader-epoch-checkpoint}
 * before its first frame; patch base offset, leader epoch (and for LogAppendTime topics the
 * timestamps and attribute) and seal the header; write it with positional writes; add the
 * .index/.timeindex entries of Python's rule ({@code index.interval.bytes}). Then, as acks asks:
 * acks=all fdatasyncs the segment after releasing the lock (the dir first, under it, when the
 * segment is new), then under the lock again moves the recovery point (fdatasynced) and only
 * then publishes the high watermark; acks=1/0 publishes at once
 * when everything below is published already, else flushes first (another writer's acks=all
 * frames below may still await their fsync). flush.messages / flush.ms apply as in Python.
 *
 * <p>Transactional frames (a Spark sink task's, {@link #appendTransactional}) and markers
 * ({@link #appendMarker}) go through a {@link TransactionGuard} called under the lock before the
 * call's first frame, as Python's {@code Partition.append(txn=...)} calls
 * {@code before_append_locked}: it fences a zombie and records the transaction's first offset
 * (the LSO) before any frame of it exists. Each transactional frame gets its {@code .txnindex}
 * entry right after it; entries of transactional frames other writers appended and left without
 * one (a writer killed between frame and entry) are added when this appender learns those frames,
 * and the index is fdatasynced before the recovery point moves past them (docs/FORMAT.md).
 *
 * <p>Refused with a clear error: RF &gt; 1 (followers are not written yet, and writing only the
 * leader would break the ISR), transactional or control frames outside those two calls, producer
 * ids on plain frames (idempotence), frames larger than message.max.bytes, another writer's marker
 * left without its index entry (a Python writer adds it). Not done here (Python's next writer or
 * open does it): retention, the full transaction-index recovery on open, disk fault injection.
 *
 * <p>One appender per thread; it keeps what it learnt of the log between calls and re-checks it
 * under the lock each time. {@link IOException}s are raised as they are: the caller must stop
 * writing to that log dir (Python takes it offline).
 */
public final class PartitionAppender implements AutoCloseable {
    public static final long MAX_RELATIVE_OFFSET = (1L << 32) - 1;
    public static final long MAX_INDEX_POSITION = (1L << 32) - 1;
    public static final String LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint";
    static final String TMP_SUFFIX = ".tmp";
    private static final long NO_TIMESTAMP = -1;

    /** The topic settings the append path obeys (Kafka names; defaults as Python's LogConfig). */
    public static final class Config {
        public long segmentBytes = 1L << 30;
        public long segmentMs = 7L * 24 * 3600 * 1000;
        public long indexIntervalBytes = 4096;
        public long messageMaxBytes = 8L * 1024 * 1024;
        public boolean logAppendTime = false;
        public int minInsyncReplicas = 1;
        public long flushMessages = Long.MAX_VALUE;
        public long flushMs = Long.MAX_VALUE;
        public String acks = "all";
        public long lockTimeoutMs = 60_000;

        /** Defaults overridden by a topic's config (as in metadata-snapshot.json) and {@code acks}. */
        public static Config of(Map<String, String> topicConfig, String acks) {
            Config c = new Config();
            c.segmentBytes = positive(topicConfig, "segment.bytes", c.segmentBytes);
            c.segmentMs = positive(topicConfig, "segment.ms", c.segmentMs);
            c.indexIntervalBytes = positive(topicConfig, "index.interval.bytes", c.indexIntervalBytes);
            c.messageMaxBytes = positive(topicConfig, "message.max.bytes", c.messageMaxBytes);
            c.flushMessages = positive(topicConfig, "flush.messages", c.flushMessages);
            c.flushMs = positive(topicConfig, "flush.ms", c.flushMs);
            c.minInsyncReplicas = (int) positive(topicConfig, "min.insync.replicas", c.minInsyncReplicas);
            String type = topicConfig.getOrDefault("message.timestamp.type", "CreateTime");
            if (!type.equals("CreateTime") && !type.equals("LogAppendTime")) {
                throw KStreamException.config("message.timestamp.type=" + type + " is not CreateTime or LogAppendTime");
            }
            c.logAppendTime = type.equals("LogAppendTime");
            if (!acks.equals("all") && !acks.equals("-1") && !acks.equals("1") && !acks.equals("0")) {
                throw KStreamException.config("acks=" + acks + " is not one of all, -1, 1, 0");
            }
            c.acks = acks.equals("-1") ? "all" : acks;
            return c;
        }

        private static long positive(Map<String, String> config, String name, long fallback) {
            String raw = config.get(name);
            if (raw == null) return fallback;
            long value;
            try {
                value = Long.parseLong(raw.trim());
            } catch (NumberFormatException e) {
                throw KStreamException.config(name + "=" + raw + " is not an integer");
            }
            if (value < 1) throw KStreamException.config(name + "=" + raw + " must be >= 1");
            return value;
        }
    }

    /**
     * What a transactional append checks under the partition lock before its first frame is
     * written (Python's {@code AppendGuard.before_append_locked}).
     */
    public interface TransactionGuard {
        /**
         * @param logEndOffset the offset the call's first frame will get
         * @return false to append nothing (a marker with nothing left to end); throw to refuse
         */
        boolean beforeAppendLocked(long logEndOffset) throws IOException;
    }

    /** Where one call's frames landed: the base offset of each, and the log end after them. */
    public static final class Result {
        public final long[] baseOffsets;
        public final long endOffset;

        Result(long[] baseOffsets, long endOffset) {
            this.baseOffsets = baseOffsets;
            this.endOffset = endOffset;
        }
    }

    private final String dir;
    private final String lockPath;
    private final int leaderEpoch;
    private final Config config;
    private Segment active;
    private long seenGeneration = -1;
    private Integer latestEpoch;
    private boolean dirUnsynced;
    private long unflushedMessages;
    private long firstUnflushedMs = -1;

    /**
     * @param replicaDir the leader replica's dir ({@code <log dir>/<topic>-<partition>}), made with the topic
     * @param lockPath the partition's lock file (metadata-snapshot's lock path)
     * @param replicationFactor the topic's replication factor: only 1 is written by this class
     */
    public PartitionAppender(String replicaDir, String lockPath, int replicationFactor, int leaderEpoch, Config config) {
        if (replicationFactor != 1) {
            throw new KStreamException(KStreamException.Kind.KStreamError, "the Java appender writes topics of"
                + " replication factor 1 only, not " + replicationFactor + " (" + replicaDir + "): it does not write"
                + " followers yet, and writing only the leader would leave the ISR behind. Use writer=python"
                + " for this topic");
        }
        if (config.minInsyncReplicas > 1 && config.acks.equals("all")) {
            throw new KStreamException(KStreamException.Kind.KStreamError, "min.insync.replicas="
                + config.minInsyncReplicas + " cannot be met by a replication factor 1 topic with acks=all ("
                + replicaDir + "); lower min.insync.replicas or use acks=1");
        }
        if (leaderEpoch < 0) throw new IllegalArgumentException("leader epoch must be >= 0, not " + leaderEpoch);
        this.dir = replicaDir;
        this.lockPath = lockPath;
        this.leaderEpoch = leaderEpoch;
        this.config = config;
    }

    /**
     * Append whole frames (as {@link FrameEncoder#frame} makes them; base offset and leader epoch
     * are assigned here) as one run under the partition lock; returns where they landed once the
     * acks are met.
     */
    public Result append(List<byte[]> frames) throws IOException {
        return appendRun(frames, null, 0, null);
    }

    /**
     * Append one transaction's data frames (TRANSACTIONAL, not CONTROL, its producer id and epoch
     * set): {@code guard} runs under the lock first; each frame gets its TXN_DATA index entry.
     */
    public Result appendTransactional(List<byte[]> frames, TransactionGuard guard) throws IOException {
        if (guard == null) throw new IllegalArgumentException("a transactional append needs its guard");
        return appendRun(frames, guard, Format.TXN_DATA, null);
    }

    /**
     * Append one COMMIT or ABORT marker (CONTROL | TRANSACTIONAL, as {@code txn.MarkerFrames}
     * makes it); null when {@code guard} finds nothing to end.
     */
    public Result appendMarker(byte[] frame, boolean commit, TransactionGuard guard) throws IOException {
        if (guard == null) throw new IllegalArgumentException("a marker needs its guard");
        return appendRun(List.of(frame), guard, commit ? Format.TXN_COMMIT : Format.TXN_ABORT, null);
    }

    /**
     * Append several producers' COMMIT or ABORT markers on this partition as one run under the
     * lock (a sink commit's markers of one partition): before each marker its own guard runs, and
     * a marker whose guard returns false is not written (its base offset in the result is -1).
     * The written markers are exactly those {@link #appendMarker} would write one call each, in
     * the same order with contiguous offsets, each with its {@code .txnindex} entry; they are
     * fsynced together (acks=all: one segment, {@code .txnindex} and recovery-point fsync for the
     * run instead of one each per marker) before the high watermark moves. Null when no guard let
     * its marker in.
     */
    public Result appendMarkers(List<byte[]> frames, boolean commit, List<TransactionGuard> guards) throws IOException {
        if (guards == null || guards.size() != frames.size()) {
            throw new IllegalArgumentException("each marker needs its guard: " + frames.size() + " markers, "
                + (guards == null ? "no" : String.valueOf(guards.size())) + " guards");
        }
        return appendRun(frames, null, commit ? Format.TXN_COMMIT : Format.TXN_ABORT, guards);
    }

    /**
     * Append positioned frames (the Real-time Mode sink's: plain data frames whose producer id is
     * a source identity's, {@code format.SourcePosition}): {@code guard} runs under the lock first
     * and returns false to append nothing (a position it finds already in the log). No index entry.
     */
    public Result appendPositioned(List<byte[]> frames, TransactionGuard guard) throws IOException {
        if (guard == null) throw new IllegalArgumentException("a positioned append needs its guard");
        return appendRun(frames, guard, POSITIONED, null);
    }

    /** appendRun's kind for positioned frames (not a .txnindex kind). */
    private static final int POSITIONED = -1;

    /**
     * @param guard checked once under the lock before the first frame (null: none)
     * @param frameGuards one per frame, checked under the lock right before it (null: none); a
     *     frame whose guard says false is skipped (base offset -1), and a run with no frame left is null
     */
    private Result appendRun(List<byte[]> frames, TransactionGuard guard, int txnKind, List<TransactionGuard> frameGuards)
            throws IOException {
        if (frames.isEmpty()) throw new IllegalArgumentException("nothing to append: frames is empty");
        List<ByteBuffer> checked = new ArrayList<>(frames.size());
        for (byte[] frame : frames) checked.add(check(frame, txnKind));
        long[] bases = new long[frames.size()];
        long end;
        boolean publishAfterSync = false;
        Segment toSync = null;  // fsynced after the lock is released, then the HW published
        long[] point = null;
        String txnIndexState = null;
        try {
            try (PartitionLock lock = PartitionLock.acquire(lockPath, config.lockTimeoutMs)) {
                Segment segment = ensureOpen(lock);
                if (guard != null && !guard.beforeAppendLocked(segment.nextOffset)) {
                    seenGeneration = lock.generation();
                    return null;
                }
                long nowMs = System.currentTimeMillis();
                long firstBase = -1;
                for (int i = 0; i < checked.size(); i++) {
                    if (frameGuards != null && !frameGuards.get(i).beforeAppendLocked(segment.nextOffset)) {
                        bases[i] = -1;
                        continue;
                    }
                    ByteBuffer frame = checked.get(i);
                    FrameHeader header = FrameHeader.read(frame, 0);
                    segment = maybeRoll(lock, segment, frame.capacity(), header.recordCount, nowMs);
                    bases[i] = segment.nextOffset;
                    if (firstBase < 0) firstBase = bases[i];
                    writeFrame(segment, frame, header, bases[i], nowMs);
                    if (txnKind > 0) appendTxnEntry(segment, txnKind, header.producerId, bases[i]);
                }
                if (firstBase < 0) {  // every frame's guard said no: nothing written, nothing to sync
                    seenGeneration = lock.generation();
                    return null;
                }
                end = segment.nextOffset;
                if (!config.acks.equals("all")) {
                    Long published = HighWatermark.stored(lockPath);
                    if (published != null && published >= firstBase) lock.writeHighWatermark(end);
                    else publishAfterSync = true;  // frames below await their writers' fsync
                }
                if (config.acks.equals("all") || publishAfterSync) {
                    syncDirIfNeeded();
                    toSync = segment;
                    point = new long[] {segment.base, segment.size, segment.nextOffset};
                    txnIndexState = segment.txnIndexState();
                } else if (dueForFlush()) {
                    flushLocked(segment);
                }
                seenGeneration = lock.generation();
            }
            if (toSync != null) {
                // As Python's PartitionLog.flush: the fdatasync runs outside the lock, so concurrent
                // writers' fsyncs overlap (the kernel coalesces them); the segment's frames up to
                // `point` are durable when it returns, whoever rolled or appended since.
                Fsync.force(toSync.channel, toSync.path, false);
                toSync.syncTxnIndex(txnIndexState);  // entries durable before the recovery point passes them
                unflushedMessages = 0;
                firstUnflushedMs = -1;
                // The frames are durable: publish them even when the thread was interrupted meanwhile
                // (Spark cancelling the task), and keep the interrupt for the caller's next wait.
                boolean interrupted = Thread.interrupted();
                try (PartitionLock lock = PartitionLock.acquire(lockPath, config.lockTimeoutMs)) {
                    RecoveryPoints.advance(dir, point[0], point[1], point[2]);  // only forward
                    Long current = HighWatermark.stored(lockPath);
                    if (current == null || current < end) lock.writeHighWatermark(end);
                } finally {
                    if (interrupted) Thread.currentThread().interrupt();
                }
            }
        } catch (IOException | RuntimeException e) {
            forget();  // re-learn the log from its files next time
            throw e;
        }
        return new Result(bases, end);
    }

    /** Make everything appended so far durable now (fdatasync, recovery point); a clean shutdown. */
    public void flush() throws IOException {
        try (PartitionLock lock = PartitionLock.acquire(lockPath, config.lockTimeoutMs)) {
            flushLocked(ensureOpen(lock));
            seenGeneration = lock.generation();
        }
    }

    /** The next offset to be assigned, as of now (takes the lock). */
    public long logEndOffset() throws IOException {
        try (PartitionLock lock = PartitionLock.acquire(lockPath, config.lockTimeoutMs)) {
            long end = ensureOpen(lock).nextOffset;
            seenGeneration = lock.generation();
            return end;
        }
    }

    private ByteBuffer check(byte[] raw, int txnKind) {
        ByteBuffer frame = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN);
        if (raw.length < Format.HEADER_SIZE) {
            throw new IllegalArgumentException("a frame is >= " + Format.HEADER_SIZE + " bytes, not " + raw.length);
        }
        FrameHeader header = FrameHeader.read(frame, 0);
        String problem = header.problem(frame, 0);
        if (problem != null) throw new IllegalArgumentException("not a valid frame: " + problem);
        if (header.frameSize() != raw.length) {
            throw new IllegalArgumentException("frame length field says " + header.frameSize() + " bytes, the array holds "
                + raw.length);
        }
        int txnBits = header.attributes & (Format.TRANSACTIONAL | Format.CONTROL);
        if (txnKind == Format.TXN_DATA || txnKind == Format.TXN_COMMIT || txnKind == Format.TXN_ABORT) {
            int wanted = txnKind == Format.TXN_DATA ? Format.TRANSACTIONAL : Format.TRANSACTIONAL | Format.CONTROL;
            if (txnBits != wanted || header.producerId < 0) {
                throw new IllegalArgumentException("a " + (txnKind == Format.TXN_DATA ? "transactional data frame"
                    : "transaction marker") + " needs attributes 0x" + Integer.toHexString(wanted) + " and a producer"
                    + " id; this one has 0x" + Integer.toHexString(txnBits) + " and producer id " + header.producerId);
            }
        } else if (txnKind == POSITIONED) {
            if (txnBits != 0 || !SourcePosition.isPositioned(header)) {
                throw new IllegalArgumentException("a positioned frame is a plain data frame with a producer id >= "
                    + SourcePosition.FIRST_POSITIONED_PRODUCER_ID + "; this one has attributes 0x"
                    + Integer.toHexString(header.attributes) + " and producer id " + header.producerId);
            }
        } else if (txnBits != 0 || header.producerId != Format.NO_PRODUCER_ID) {
            throw new KStreamException(KStreamException.Kind.KStreamError, "append() writes"
                + " non-transactional frames without a producer id only (this one has attributes 0x"
                + Integer.toHexString(header.attributes) + ", producer id " + header.producerId + "): a"
                + " transaction's frames and markers go through appendTransactional / appendMarker with their"
                + " guard; idempotence (producer ids on plain frames) is not built in Java yet: use writer=python");
        }
        if (raw.length > config.messageMaxBytes) {
            throw new KStreamException(KStreamException.Kind.KStreamError, "RecordTooLargeError: batch of "
                + raw.length + " bytes exceeds the topic's message.max.bytes (" + config.messageMaxBytes
                + "); send smaller batches or raise message.max.bytes on the topic");
        }
        return frame;
    }

    // -- the active segment ------------------------------------------------------------------

    /** What this appender knows of the active segment (valid prefix), as Python's Segment. */
    private static final class Segment implements AutoCloseable {
        final long base;
        final Path path;
        final FileChannel channel;
        final Object fileKey;
        long size;
        long nextOffset;
        long maxTimestamp = NO_TIMESTAMP;
        long firstBatchTimestamp = NO_TIMESTAMP;
        long lastIndexPosition;
        long lastTimeEntry = NO_TIMESTAMP;
        final List<long[]> offsetEntries = new ArrayList<>(); // (offset, position) the rule gives
        final List<long[]> timeEntries = new ArrayList<>();   // (timestamp, offset)
        // The .index / .timeindex opened for appending (O_APPEND: a truncation by another writer's
        // recovery is followed), kept open while this segment is the one we write, as Python does.
        FileChannel offsetIndex;
        FileChannel timeIndex;
        final Path txnIndexPath;
        FileChannel txnIndex;      // .txnindex opened for appending (O_APPEND), when this appender writes it
        String txnIndexSynced;     // the .txnindex's state (inode, size, mtime) at this appender's last fdatasync
        // Transactional frames other writers appended that this appender learnt by scanning: their
        // index entries are checked (and added if missing) before anything else is done (see cover).
        final List<long[]> learntTxnFrames = new ArrayList<>();  // (base offset, producer id, is control)

        Segment(String dir, long base) throws IOException {
            this.base = base;
            this.path = Path.of(SegmentFiles.path(dir, base, Format.LOG_SUFFIX));
            this.txnIndexPath = Path.of(SegmentFiles.path(dir, base, Format.TXN_INDEX_SUFFIX));
            this.channel = Channels.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
            this.fileKey = Files.readAttributes(path, BasicFileAttributes.class).fileKey();
            this.nextOffset = base;
        }

        boolean replaced() {
            try {
                Object now = Files.readAttributes(path, BasicFileAttributes.class).fileKey();
                return now == null || !now.equals(fileKey);
            } catch (IOException e) {
                return true;
            }
        }

        /** Python's Segment._after_frame: the shared index rule; returns the entries due (or none). */
        boolean[] afterFrame(long position, long frameSize, long baseOffset, int recordCount, long maxTs,
                             long indexInterval) {
            boolean offsetEntry = false;
            boolean timeEntry = false;
            if (position > 0 && position / indexInterval > lastIndexPosition / indexInterval) {
                lastIndexPosition = position;
                offsetEntry = true;
                offsetEntries.add(new long[] {baseOffset, position});
                if (maxTimestamp > lastTimeEntry) {
                    timeEntry = true;
                    timeEntries.add(new long[] {maxTimestamp, baseOffset});
                    lastTimeEntry = maxTimestamp;
                }
            }
            if (firstBatchTimestamp == NO_TIMESTAMP) firstBatchTimestamp = maxTs;
            maxTimestamp = Math.max(maxTimestamp, maxTs);
            size = position + frameSize;
            nextOffset = baseOffset + recordCount;
            return new boolean[] {offsetEntry, timeEntry};
        }

        /** The .txnindex's state now (under the lock), or null when it is missing (nothing to sync). */
        String txnIndexState() throws IOException {
            try {
                BasicFileAttributes a = Files.readAttributes(txnIndexPath, BasicFileAttributes.class);
                return a.fileKey() + "/" + a.size() + "/" + a.lastModifiedTime().to(java.util.concurrent.TimeUnit.NANOSECONDS);
            } catch (NoSuchFileException e) {
                return null;
            }
        }

        /**
         * As Python's TxnIndex.sync_fd: fdatasync the .txnindex unless this appender synced it in
         * {@code state} already, whoever wrote it (other writers' entries of frames the recovery
         * point is about to pass are made durable too, as Python's flush does).
         */
        void syncTxnIndex(String state) throws IOException {
            if (state == null || state.equals(txnIndexSynced)) return;
            if (txnIndex != null) {
                Fsync.force(txnIndex, txnIndexPath, false);
            } else {
                try (FileChannel c = Channels.open(txnIndexPath, StandardOpenOption.WRITE)) {
                    Fsync.force(c, txnIndexPath, false);
                }
            }
            txnIndexSynced = state;
        }

        @Override
        public void close() throws IOException {
            try {
                channel.close();
            } finally {
                if (offsetIndex != null) offsetIndex.close();
                if (timeIndex != null) timeIndex.close();
                if (txnIndex != null) txnIndex.close();
                offsetIndex = null;
                timeIndex = null;
                txnIndex = null;
            }
        }
    }

    private void forget() {
        if (active != null) {
            try {
                active.close();
            } catch (IOException ignored) {
                // closing a read/write channel we no longer use: nothing to do about it
            }
        }
        active = null;
        latestEpoch = null;
    }

    /** Under the lock: open the active segment (re-read whole) or catch up with other writers. */
    private Segment ensureOpen(PartitionLock lock) throws IOException {
        if (active != null) {
            boolean changed = lock.generation() != seenGeneration;
            if (!changed && !active.replaced()) {
                catchUp(lock, active);
                coverTxnIndex(active);
                return active;
            }
            forget();  // another writer rolled, cut or replaced files: learn them again
        }
        if (!Files.isDirectory(Path.of(dir))) {
            throw new KStreamException(KStreamException.Kind.KStreamError, "replica dir " + dir + " is missing:"
                + " its log dir failed or the topic is gone; a missing dir is never a reason to start an empty log");
        }
        long[] bases = SegmentFiles.bases(dir);
        if (bases.length == 0) {
            lock.bumpGeneration();
            active = create(0, false);
            dirUnsynced = true;  // fsynced before the first flush acknowledges data in it
            return active;
        }
        active = new Segment(dir, bases[bases.length - 1]);
        RecoveryPoint point = RecoveryPoint.read(dir);
        long verifyFrom = point.state == RecoveryPoint.State.PRESENT && point.segmentBase == active.base
            ? point.position : 0;
        scan(lock, active, verifyFrom, true);
        reconcileIndexes(active);
        coverTxnIndex(active);
        return active;
    }

    private void catchUp(PartitionLock lock, Segment segment) throws IOException {
        if (segment.channel.size() != segment.size) scan(lock, segment, Long.MAX_VALUE, false);
    }

    /**
     * Walk frames from what we know to the file's end; a bad frame ends the valid prefix and the
     * rest is a torn tail, cut (never below the recovery point). Payload checksums are checked
     * from {@code verifyFrom} on (the recovery point on open; headers only when catching up).
     */
    private void scan(PartitionLock lock, Segment segment, long verifyFrom, boolean opening) throws IOException {
        long fileSize = segment.channel.size();
        ByteBuffer head = ByteBuffer.allocate(Format.HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        String problem = null;
        while (segment.size < fileSize) {
            long position = segment.size;
            if (fileSize - position < Format.HEADER_SIZE) {
                problem = "partial header";
                break;
            }
            readFully(segment.channel, head.clear(), position);
            FrameHeader header = FrameHeader.read(head, 0);
            problem = header.problem(head, 0);
            if (problem == null && header.baseOffset != segment.nextOffset) {
                problem = "base offset " + header.baseOffset + " where " + segment.nextOffset + " was next";
            }
            if (problem == null && position + header.frameSize() > fileSize) problem = "partial frame";
            if (problem == null && position >= verifyFrom && !payloadMatches(segment.channel, position, header)) {
                problem = "payload checksum mismatch";
            }
            if (problem != null) break;
            if ((header.attributes & Format.TRANSACTIONAL) != 0) {
                segment.learntTxnFrames.add(new long[] {header.baseOffset, header.producerId,
                    (header.attributes & Format.CONTROL) != 0 ? 1 : 0});
            }
            segment.afterFrame(position, header.frameSize(), header.baseOffset, header.recordCount,
                header.maxTimestamp, config.indexIntervalBytes);
        }
        if (segment.size < fileSize) cutTornTail(lock, segment, fileSize, problem);
    }

    private static boolean payloadMatches(FileChannel channel, long position, FrameHeader header) throws IOException {
        CRC32C crc = new CRC32C();
        ByteBuffer chunk = ByteBuffer.allocate(1 << 16);
        long at = position + Format.HEADER_SIZE;
        long left = header.payloadSize();
        while (left > 0) {
            chunk.clear().limit((int) Math.min(chunk.capacity(), left));
            readFully(channel, chunk, at);
            crc.update(chunk);
            at += chunk.position();
            left -= chunk.position();
        }
        return (int) crc.getValue() == header.payloadCrc;
    }

    private void cutTornTail(PartitionLock lock, Segment segment, long fileSize, String problem) throws IOException {
        RecoveryPoint point = RecoveryPoint.read(dir);
        if (point.state == RecoveryPoint.State.UNREADABLE) {
            throw new KStreamException(KStreamException.Kind.CorruptBatchError, "bad frame (" + problem + ") at position "
                + segment.size + " of " + segment.path + " and the recovery point is unreadable: the Java appender does"
                + " not cut what may be fsynced data. Open the partition with a Python writer (it decides), or repair"
                + " the replica");
        }
        long durable = point.state == RecoveryPoint.State.MISSING || point.segmentBase < segment.base ? 0
            : point.segmentBase == segment.base ? point.position : Long.MAX_VALUE;
        if (segment.size < durable && durable <= fileSize) {
            throw new KStreamException(KStreamException.Kind.CorruptBatchError, "bad frame (" + problem + ") at position "
                + segment.size + " of " + segment.path + " below the recovery point (fsynced data follows it); not"
                + " truncating. Repair the replica from a copy");
        }
        if (segment.replaced()) {
            throw new IOException(segment.path + " was replaced while this appender cut its torn tail; retry the append");
        }
        Path txnIndex = Path.of(SegmentFiles.path(dir, segment.base, Format.TXN_INDEX_SUFFIX));
        if (Files.exists(txnIndex) && Files.size(txnIndex) > 0 && lastTxnOffset(txnIndex) >= segment.nextOffset) {
            throw new KStreamException(KStreamException.Kind.KStreamError, "the torn tail of " + segment.path
                + " holds transactional frames: the Java appender does not cut transaction indexes yet; open the"
                + " partition with a Python writer first (it recovers the tail)");
        }
        // As Python's Segment._replace_with_prefix: never shrink in place (readers map segments).
        lock.bumpGeneration();
        Path tmp = Path.of(segment.path + TMP_SUFFIX);
        try (FileChannel out = Channels.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            long copied = 0;
            while (copied < segment.size) {
                long sent = segment.channel.transferTo(copied, segment.size - copied, out);
                if (sent <= 0) throw new IOException("short copy of " + segment.path + ": " + copied + " of " + segment.size);
                copied += sent;
            }
            Fsync.force(out, tmp, true);
        }
        Files.move(tmp, segment.path, StandardCopyOption.ATOMIC_MOVE);
        fsyncDir(dir);
        System.err.println("kstream: recovered " + segment.path + ": truncated " + (fileSize - segment.size)
            + " bytes of torn tail (" + problem + ") after offset " + segment.nextOffset);
        // The segment's channel now names the old inode: re-open, keeping what we learnt.
        Segment fresh = new Segment(dir, segment.base);
        copyState(segment, fresh);
        segment.close();
        if (active == segment) active = fresh;
        truncateIndexes(fresh);
        seenGeneration = lock.generation();
    }

    private static long lastTxnOffset(Path txnIndex) throws IOException {
        byte[] raw = Files.readAllBytes(txnIndex);
        int whole = raw.length - raw.length % Format.TXN_INDEX_ENTRY_SIZE;
        if (whole == 0) return -1;
        return ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN)
            .getLong(whole - Format.TXN_INDEX_ENTRY_SIZE + Format.TXN_POS_OFFSET);
    }

    private static void copyState(Segment from, Segment to) {
        to.size = from.size;
        to.nextOffset = from.nextOffset;
        to.maxTimestamp = from.maxTimestamp;
        to.firstBatchTimestamp = from.firstBatchTimestamp;
        to.lastIndexPosition = from.lastIndexPosition;
        to.lastTimeEntry = from.lastTimeEntry;
        to.offsetEntries.addAll(from.offsetEntries);
        to.timeEntries.addAll(from.timeEntries);
        to.learntTxnFrames.addAll(from.learntTxnFrames);
    }

    private Segment create(long base, boolean syncDir) throws IOException {
        Path log = Path.of(SegmentFiles.path(dir, base, Format.LOG_SUFFIX));
        try {
            Files.createFile(log);
            // with the segment: a missing transaction index is lost (or older), never "none yet"
            Files.createFile(Path.of(SegmentFiles.path(dir, base, Format.TXN_INDEX_SUFFIX)));
        } catch (FileAlreadyExistsException e) {
            throw new IOException("segment " + e.getFile() + " exists already: another writer made it outside the"
                + " partition lock", e);
        }
        if (syncDir) fsyncDir(dir);
        return new Segment(dir, base);
    }

    // -- appending -----------------------------------------------------------------------------

    private Segment maybeRoll(PartitionLock lock, Segment segment, long frameSize, int recordCount, long nowMs)
            throws IOException {
        if (segment.size == 0) return segment;
        boolean tooBig = segment.size + frameSize > config.segmentBytes;
        boolean tooOld = segment.firstBatchTimestamp != NO_TIMESTAMP && nowMs - segment.firstBatchTimestamp >= config.segmentMs;
        boolean unindexable = segment.nextOffset + recordCount - 1 - segment.base > MAX_RELATIVE_OFFSET
            || segment.size > MAX_INDEX_POSITION;
        if (!(tooBig || tooOld || unindexable)) return segment;
        // Seal: the old segment and its indexes are durable before the new name exists.
        Fsync.force(segment.channel, segment.path, false);
        for (String suffix : new String[] {Format.OFFSET_INDEX_SUFFIX, Format.TIME_INDEX_SUFFIX, Format.TXN_INDEX_SUFFIX}) {
            Path index = Path.of(SegmentFiles.path(dir, segment.base, suffix));
            if (Files.exists(index)) {
                try (FileChannel c = Channels.open(index, StandardOpenOption.READ)) {
                    Fsync.force(c, index, true);
                }
            }
        }
        lock.bumpGeneration();  // before the new name exists: others must re-check
        Segment successor = create(segment.nextOffset, true);
        if (dirUnsynced) dirUnsynced = false;  // the dir was fsynced with the successor's name
        RecoveryPoints.advance(dir, successor.base, 0, successor.base);
        segment.close();
        active = successor;
        return successor;
    }

    private void writeFrame(Segment segment, ByteBuffer frame, FrameHeader header, long baseOffset, long nowMs)
            throws IOException {
        if (latestEpoch == null || leaderEpoch > latestEpoch) recordEpoch(baseOffset);
        long minTs = header.minTimestamp;
        long maxTs = header.maxTimestamp;
        int attributes = header.attributes;
        if (config.logAppendTime) {
            minTs = maxTs = nowMs;
            attributes |= Format.LOG_APPEND_TIME;
        }
        frame.put(Format.POS_ATTRIBUTES, (byte) attributes);
        frame.putLong(Format.POS_BASE_OFFSET, baseOffset);
        frame.putInt(Format.POS_LEADER_EPOCH, leaderEpoch);
        frame.putLong(Format.POS_MIN_TIMESTAMP, minTs);
        frame.putLong(Format.POS_MAX_TIMESTAMP, maxTs);
        FrameEncoder.seal(frame, 0);
        long position = segment.size;
        ByteBuffer out = frame.duplicate().clear();
        while (out.hasRemaining()) segment.channel.write(out, position + out.position());
        boolean[] entries = segment.afterFrame(position, frame.capacity(), baseOffset, header.recordCount, maxTs,
            config.indexIntervalBytes);
        if (entries[0]) appendOffsetEntry(segment, baseOffset, position);
        if (entries[1]) appendTimeEntry(segment, segment.timeEntries.get(segment.timeEntries.size() - 1)[0], baseOffset);
        unflushedMessages += header.recordCount;
        if (firstUnflushedMs < 0) firstUnflushedMs = nowMs;
    }

    /** One .txnindex entry right after its frame (one O_APPEND write, fdatasynced with the segment). */
    private void appendTxnEntry(Segment segment, int kind, long producerId, long offset) throws IOException {
        if (segment.txnIndex == null) {
            Path path = segment.txnIndexPath;
            if (!Files.exists(path)) {
                // derived data lost under us: never re-created empty (that would read as "no transactions")
                throw new KStreamException(KStreamException.Kind.KStreamError, path + " is missing: the Java appender"
                    + " does not rebuild transaction indexes; open the partition with a Python writer first (it"
                    + " rebuilds it from the frames)");
            }
            segment.txnIndex = Channels.open(path, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
        }
        appendRaw(segment.txnIndex, txnEntry(kind, producerId, offset));
    }

    static ByteBuffer txnEntry(int kind, long producerId, long offset) {
        ByteBuffer raw = ByteBuffer.allocate(Format.TXN_INDEX_ENTRY_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        raw.put(Format.TXN_POS_KIND, (byte) kind);
        raw.putLong(Format.TXN_POS_PRODUCER_ID, producerId);
        raw.putLong(Format.TXN_POS_OFFSET, offset);
        raw.putInt(Format.TXN_POS_CRC, Format.crc32c(raw, 0, Format.TXN_POS_CRC));
        return raw;
    }

    /**
     * Python's TxnIndex.cover: transactional frames other writers appended (learnt by scanning)
     * each get their entry when the writer was killed before writing it; a torn entry at the
     * index's end is cut first. A marker without its entry is refused (its kind is in its Arrow
     * payload, which this appender does not decode): a Python writer adds it.
     */
    private void coverTxnIndex(Segment segment) throws IOException {
        if (segment.learntTxnFrames.isEmpty()) return;
        Path path = Path.of(SegmentFiles.path(dir, segment.base, Format.TXN_INDEX_SUFFIX));
        io.kstream.spark.format.TxnIndex index = io.kstream.spark.format.TxnIndex.read(dir, segment.base, Long.MAX_VALUE);
        if (!Files.exists(path)) {
            throw new KStreamException(KStreamException.Kind.KStreamError, path + " is missing: the Java appender"
                + " does not rebuild transaction indexes; open the partition with a Python writer first");
        }
        long last = index.entries.isEmpty() ? -1 : index.entries.get(index.entries.size() - 1).offset;
        List<long[]> missing = new ArrayList<>();
        for (long[] frame : segment.learntTxnFrames) if (frame[0] > last) missing.add(frame);
        if (!index.whole || !missing.isEmpty()) {
            for (long[] frame : missing) {
                if (frame[2] == 1) {
                    throw new KStreamException(KStreamException.Kind.KStreamError, "the transaction marker at offset "
                        + frame[0] + " of " + segment.path + " has no " + Format.TXN_INDEX_SUFFIX + " entry (its writer"
                        + " was killed before writing it): the Java appender does not decode markers; open the"
                        + " partition with a Python writer first (it adds the entry)");
                }
            }
            if (!index.whole) {
                try (FileChannel c = Channels.open(path, StandardOpenOption.WRITE)) {
                    c.truncate((long) index.entries.size() * Format.TXN_INDEX_ENTRY_SIZE);
                }
            }
            for (long[] frame : missing) appendTxnEntry(segment, Format.TXN_DATA, frame[1], frame[0]);
        }
        segment.learntTxnFrames.clear();
    }

    private void appendOffsetEntry(Segment segment, long offset, long position) throws IOException {
        ByteBuffer raw = ByteBuffer.allocate(Format.OFFSET_INDEX_ENTRY_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        raw.putInt(0, (int) (offset - segment.base)).putInt(4, (int) position);
        if (segment.offsetIndex == null) {
            segment.offsetIndex = openForAppend(Path.of(SegmentFiles.path(dir, segment.base, Format.OFFSET_INDEX_SUFFIX)));
        }
        appendRaw(segment.offsetIndex, raw);
    }

    private void appendTimeEntry(Segment segment, long timestamp, long offset) throws IOException {
        ByteBuffer raw = ByteBuffer.allocate(Format.TIME_INDEX_ENTRY_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        raw.putLong(0, timestamp).putInt(8, (int) (offset - segment.base));
        if (segment.timeIndex == null) {
            segment.timeIndex = openForAppend(Path.of(SegmentFiles.path(dir, segment.base, Format.TIME_INDEX_SUFFIX)));
        }
        appendRaw(segment.timeIndex, raw);
    }

    private static FileChannel openForAppend(Path path) throws IOException {
        return Channels.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
    }

    private static void appendRaw(FileChannel channel, ByteBuffer raw) throws IOException {
        int written = channel.write(raw);
        if (raw.hasRemaining()) {  // a partial entry would misalign every later one
            throw new IOException("short write to an index: " + written + " of " + raw.capacity() + " bytes");
        }
    }

    /**
     * On open: the index files hold what the rule gives for the valid frames, as Python's
     * Segment.open_existing leaves them: entries past the valid prefix dropped, missing ones
     * appended; an index that is not a prefix of the rule's (a lying or foreign one) is rewritten.
     */
    private void reconcileIndexes(Segment segment) throws IOException {
        reconcile(Path.of(SegmentFiles.path(dir, segment.base, Format.OFFSET_INDEX_SUFFIX)),
            Format.OFFSET_INDEX_ENTRY_SIZE, encodeOffsetEntries(segment));
        reconcile(Path.of(SegmentFiles.path(dir, segment.base, Format.TIME_INDEX_SUFFIX)),
            Format.TIME_INDEX_ENTRY_SIZE, encodeTimeEntries(segment));
    }

    private void truncateIndexes(Segment segment) throws IOException {
        reconcileIndexes(segment);
    }

    private static byte[] encodeOffsetEntries(Segment segment) {
        ByteBuffer b = ByteBuffer.allocate(segment.offsetEntries.size() * Format.OFFSET_INDEX_ENTRY_SIZE)
            .order(ByteOrder.LITTLE_ENDIAN);
        for (long[] e : segment.offsetEntries) b.putInt((int) (e[0] - segment.base)).putInt((int) e[1]);
        return b.array();
    }

    private static byte[] encodeTimeEntries(Segment segment) {
        ByteBuffer b = ByteBuffer.allocate(segment.timeEntries.size() * Format.TIME_INDEX_ENTRY_SIZE)
            .order(ByteOrder.LITTLE_ENDIAN);
        for (long[] e : segment.timeEntries) b.putLong(e[0]).putInt((int) (e[1] - segment.base));
        return b.array();
    }

    private static void reconcile(Path path, int entrySize, byte[] expected) throws IOException {
        byte[] existing;
        try {
            existing = Files.readAllBytes(path);
        } catch (NoSuchFileException e) {
            existing = new byte[0];
        }
        int same = 0;
        int limit = Math.min(existing.length, expected.length);
        while (same < limit && existing[same] == expected[same]) same++;
        int keep = same - same % entrySize;
        if (keep == expected.length && existing.length == expected.length) return;
        try (FileChannel c = Channels.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            if (existing.length > keep) c.truncate(keep);
            ByteBuffer rest = ByteBuffer.wrap(expected, keep, expected.length - keep);
            long at = keep;
            while (rest.hasRemaining()) at += c.write(rest, at);
        }
    }

    // -- leader epochs -------------------------------------------------------------------------

    /** Python's LeaderEpochCache.load + assign: the epoch is recorded before its first frame. */
    private void recordEpoch(long baseOffset) throws IOException {
        Path file = Path.of(dir, LEADER_EPOCH_CHECKPOINT);
        List<long[]> entries = null;
        boolean existed = Files.exists(file);
        if (existed) entries = parseEpochs(Files.readAllBytes(file));
        if (entries == null) {
            entries = scanEpochs();
            if (!entries.isEmpty()) saveEpochs(file, entries, true);
        } else {
            entries.removeIf(e -> e[1] >= baseOffset);  // epochs whose frames a crash took
        }
        long latest = entries.isEmpty() ? -1 : entries.get(entries.size() - 1)[0];
        if (leaderEpoch > latest) {
            while (!entries.isEmpty() && entries.get(entries.size() - 1)[1] >= baseOffset) entries.remove(entries.size() - 1);
            entries.add(new long[] {leaderEpoch, baseOffset});
            saveEpochs(file, entries, Files.exists(file));
        }
        latestEpoch = (int) Math.max(leaderEpoch, latest);
    }

    static List<long[]> parseEpochs(byte[] raw) {
        String text = new String(raw, StandardCharsets.US_ASCII);
        String[] lines = text.split("\n", -1);
        try {
            if (lines.length < 3 || !lines[0].equals("0") || !lines[lines.length - 1].isEmpty()) return null;
            int count = Integer.parseInt(lines[1]);
            if (lines.length != count + 3) return null;
            List<long[]> entries = new ArrayList<>();
            for (int i = 2; i < 2 + count; i++) {
                String[] parts = lines[i].split(" ");
                if (parts.length != 2) return null;
                entries.add(new long[] {Long.parseLong(parts[0]), Long.parseLong(parts[1])});
            }
            return entries;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private List<long[]> scanEpochs() throws IOException {
        List<long[]> entries = new ArrayList<>();
        ByteBuffer head = ByteBuffer.allocate(Format.HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        for (long base : SegmentFiles.bases(dir)) {
            try (FileChannel c = Channels.open(Path.of(SegmentFiles.path(dir, base, Format.LOG_SUFFIX)),
                    StandardOpenOption.READ)) {
                long position = 0;
                long size = c.size();
                while (size - position >= Format.HEADER_SIZE) {
                    readFully(c, head.clear(), position);
                    FrameHeader h = FrameHeader.read(head, 0);
                    if (h.problem(head, 0) != null || position + h.frameSize() > size) break;
                    if (entries.isEmpty() || h.leaderEpoch > entries.get(entries.size() - 1)[0]) {
                        entries.add(new long[] {h.leaderEpoch, h.baseOffset});
                    }
                    position += h.frameSize();
                }
            }
        }
        return entries;
    }

    private void saveEpochs(Path file, List<long[]> entries, boolean durable) throws IOException {
        StringBuilder text = new StringBuilder("0\n").append(entries.size()).append('\n');
        for (long[] e : entries) text.append(e[0]).append(' ').append(e[1]).append('\n');
        Path tmp = Path.of(file + TMP_SUFFIX);
        try (FileChannel c = Channels.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer raw = ByteBuffer.wrap(text.toString().getBytes(StandardCharsets.US_ASCII));
            while (raw.hasRemaining()) c.write(raw);
            if (durable) Fsync.force(c, tmp, true);
        }
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
        if (durable) fsyncDir(dir);
    }

    // -- durability ----------------------------------------------------------------------------

    private boolean dueForFlush() {
        return unflushedMessages >= config.flushMessages
            || (firstUnflushedMs >= 0 && System.currentTimeMillis() - firstUnflushedMs >= config.flushMs);
    }

    /** Python's PartitionLog.flush_locked: the dir (a new first segment), the segment, then the recovery point. */
    private void flushLocked(Segment segment) throws IOException {
        syncDirIfNeeded();
        Fsync.force(segment.channel, segment.path, false);
        segment.syncTxnIndex(segment.txnIndexState());
        RecoveryPoints.advance(dir, segment.base, segment.size, segment.nextOffset);
        unflushedMessages = 0;
        firstUnflushedMs = -1;
    }

    /** Make a lazily created first segment's name durable (once), before data in it is acknowledged. */
    private void syncDirIfNeeded() throws IOException {
        if (dirUnsynced) {
            fsyncDir(dir);
            dirUnsynced = false;
        }
    }

    static void fsyncDir(String directory) throws IOException {
        Fsync.directory(directory);
    }

    static void readFully(FileChannel channel, ByteBuffer into, long position) throws IOException {
        while (into.hasRemaining()) {
            if (channel.read(into, position + into.position()) < 0) {
                throw new IOException("unexpected end of file at " + (position + into.position()));
            }
        }
        into.flip();
    }

    @Override
    public void close() {
        forget();
    }
}

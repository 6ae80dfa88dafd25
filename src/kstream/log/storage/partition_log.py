"""The log of one replica: a directory of segments, appended under the partition lock.

Contract:

* Offsets are contiguous and assigned here, under the partition's write lock,
  so any number of processes and threads may append at once: each append sees
  what the others wrote (:meth:`Segment.catch_up`), including a segment roll
  (the next segment's file exists), and writes one whole frame.
* Opening for write recovers the active segment: frames after the recovery
  point (the last position known fsynced) are re-checked, and a torn tail is
  truncated and reported in :attr:`PartitionLog.truncated_bytes`. The
  recovery point is durable before a flush returns (created like Kafka's
  checkpoints: .tmp, fsync, rename, fsync the directory; then updated in the
  older of two checksummed slots and fdatasynced), so after a power loss it
  never names less than what was acknowledged: a bad frame below it is
  corruption, never cut as a torn tail.
* A segment rolls when full (``segment.bytes``), old (``segment.ms``), or when
  an offset or position of the next frame would not fit an index entry.
* Sealed segments are fsynced at roll and deleted whole by retention (oldest
  first, never the active one). No segment file shrinks in place.
* Each transactional frame gets a transaction index entry right after it is
  written (:mod:`kstream.log.storage.txn_index`); the index is fdatasynced before the
  recovery point moves past the frame, recovered past the recovery point on
  open, rebuilt from the frames when missing or damaged, and cut with the log.
* The cleaner's checkpoint (:mod:`kstream.log.storage.cleaner_checkpoint`) is never above
  the log end: a cut lowers it first, durably, and opening lowers one found above it, so
  offsets written again after a truncation never count as cleaned.
* An ``OSError`` from the disk raises :class:`LogDirOfflineError`; the caller
  takes the log dir offline. A failed fsync is never retried.

Reading is :mod:`kstream.log.storage.log_reader`'s job; this class is the write side.
The recovery point file is :mod:`kstream.log.storage.recovery_point`'s; opening,
cutting and indexing the segment files, :mod:`kstream.log.storage.segment_files`'s.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from kstream.errors import (
    CorruptBatchError,
    LogDirOfflineError,
    RecordTooLargeError,
    ReplicaDivergedError,
    ResourceExhaustedError,
)
from kstream.log.storage import disk
from kstream.log.storage import format as fmt
from kstream.log.storage.cleaner_checkpoint import lower_checkpoint
from kstream.log.storage.disk import fsync_dir
from kstream.log.storage.leader_epochs import LeaderEpochCache
from kstream.log.storage.lock import PartitionLock
from kstream.log.storage.log_config import LogConfig
from kstream.log.storage.records import Payload
from kstream.log.storage.recovery_point import RecoveryPointFile, Unreadable
from kstream.log.storage.retention import delete_expired_segments, list_segment_bases
from kstream.log.storage.segment import NO_TIMESTAMP, Segment, SegmentReplacedError
from kstream.log.storage.segment_files import SegmentFiles, missing, txn_entry
from kstream.log.storage.segment_swap import finish_swap

log = logging.getLogger(__name__)
T = TypeVar("T")

_MAX_REOPENS = 16
_PROCESS_LIMITS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM})


@dataclass(frozen=True, slots=True)
class EncodedBatch:
    """A batch ready to append: IPC payload plus the header fields the producer knows."""

    payload: Payload
    record_count: int
    min_timestamp: int
    max_timestamp: int
    attributes: int = 0
    producer_id: int = fmt.NO_PRODUCER_ID
    producer_epoch: int = -1
    base_sequence: int = fmt.NO_SEQUENCE

    @property
    def frame_size(self) -> int:
        return fmt.HEADER_SIZE + self.payload.size


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Where a batch landed."""

    base_offset: int
    log_append_time_ms: int
    segment_base_offset: int
    end_position: int


class PartitionLog:
    """Append side of one replica's log. Thread-safe and multi-process safe."""

    def __init__(self, directory: str, config: LogConfig, lock: PartitionLock):
        self.directory = directory
        self.config = config
        self._lock = lock
        self._active: Segment | None = None
        self._pid = os.getpid()
        self.truncated_bytes = 0
        self._unflushed_messages = 0
        self._first_unflushed_ms: int | None = None
        self._next_retention_check_ms = 0
        self._durable: tuple[int, int, int] | None = None
        self._seen_generation = -1
        self._epochs: LeaderEpochCache | None = None
        self._dir_unsynced = False
        self._points = RecoveryPointFile(directory)
        self._files = SegmentFiles(directory, config, lock, self._points)
        # A tiered topic's lake end offset (tier.delta.path): retention deletes only below it.
        # Set by the cluster room (Partition), which reads it from the metadata; a tiered log
        # without it deletes nothing by retention.
        self.retention_floor: Callable[[], int] | None = None

    # -- opening and recovery ------------------------------------------------

    def _ensure_open(self) -> Segment:
        """Under the lock: open (with recovery) on first use, else catch up with others."""
        for _ in range(_MAX_REOPENS):
            try:
                return self._open_or_catch_up()
            except SegmentReplacedError:
                if self._active is not None:
                    self._active.close()
                self._active = None
        raise OSError(f"segment files of {self.directory} keep being replaced under the lock")

    def _open_or_catch_up(self) -> Segment:
        active = self._active
        if active is not None and self._pid == os.getpid():
            changed = self._lock.generation != self._seen_generation
            if changed and active.replaced():  # another writer cut a torn tail: start over
                active.close()
                self._active = None
                return self._open_or_catch_up()
            if os.fstat(active.fd).st_nlink == 0:  # our file was unlinked
                if not os.path.exists(active.path):
                    raise missing(self.directory)  # deleted under us: the disk was lost
                raise SegmentReplacedError(active.path)
            if changed:  # another process may have rebuilt (replaced) the transaction index
                active.txn_index.forget()
            self._note_truncation(active, active.catch_up())
            if changed:
                # Another process may have rolled: its new segment starts at our next offset.
                # (A roll never leaves an empty segment behind, so an empty one has no successor.)
                while active.next_offset > active.base_offset and os.path.exists(
                        os.path.join(self.directory, fmt.segment_file_name(active.next_offset))):
                    successor = self._files.open(active.next_offset)
                    active.close()
                    self._note_truncation(successor, successor.catch_up())
                    self._active = active = successor
            self._seen_generation = self._lock.generation
            return active
        if active is not None:  # forked: nothing of the parent's files is ours
            active.close()
            self._active = None
        self._pid = os.getpid()
        if not os.path.isdir(self.directory):
            # Replica dirs are made with the topic (or by `log-dirs online`): a missing one
            # is a failed disk, never a reason to start an empty log.
            raise missing(self.directory)
        if finish_swap(self.directory):  # a clean killed after its swap was decided
            self._lock.bump_generation()
        bases = list_segment_bases(self.directory)
        if not bases:
            self._lock.bump_generation()
            # The directory is fsynced before the first flush acknowledges data in it.
            self._active = self._files.create(0, sync_dir=False)
            self._dir_unsynced = True
            self._seen_generation = self._lock.generation
            return self._active
        active = self._files.open(bases[-1])
        verify_from = 0
        point = self._points.read()
        if isinstance(point, fmt.RecoveryPoint) and point.segment_base == active.base_offset:
            verify_from = point.position
        self._note_truncation(active, active.open_existing(verify_tail_from=verify_from))
        self._files.recover_txn_indexes(bases, active, point)
        # Nothing is appended above a cleaner's end that a cut (or a torn tail) left past the log end.
        lower_checkpoint(self.directory, active.next_offset, "above the log end when opened")
        self._active = active
        self._seen_generation = self._lock.generation
        return active

    def _note_truncation(self, segment: Segment, truncated: int) -> None:
        if truncated:
            log.warning("recovered %s: truncated %d bytes of torn tail after offset %d",
                        segment.path, truncated, segment.next_offset)
            self.truncated_bytes += truncated

    def lost_durable_data_locked(self) -> bool:
        """Whether this replica lost frames it had made durable: it ends below its recovery
        point, or its files are gone (no recovery point and no leader-epoch checkpoint: both
        are written durably before anything they cover is acknowledged). A power loss never
        does this, it drops only what was not fsynced; a lost, emptied or replaced disk does.
        A damaged recovery point tells nothing (False). Caller holds the lock."""
        end = self.log_end_offset_locked()
        point = self._points.read()
        if isinstance(point, fmt.RecoveryPoint):
            return end < point.next_offset
        if point is None:
            return not os.path.exists(os.path.join(self.directory, fmt.LEADER_EPOCH_CHECKPOINT_FILE))
        return False

    def recovery_point(self) -> fmt.RecoveryPoint | Unreadable | None:
        """The recovery point as on disk (:meth:`RecoveryPointFile.read`; takes no lock,
        raises OSError as is)."""
        return self._points.read()

    def durable_offset_locked(self) -> int:
        """Offset below which this replica is fsynced: its recovery point, 0 when it never
        flushed, its log end when the recovery point is damaged (nothing better is known).
        Caller holds the lock."""
        end = self.log_end_offset_locked()  # a missing dir raises LogDirOfflineError here
        point = self._guard_io(self._points.read)
        if point is None:
            return 0
        return min(point.next_offset, end) if isinstance(point, fmt.RecoveryPoint) else end

    def open(self) -> None:
        """Open and recover now (otherwise the first append does it)."""
        with self._lock:
            self._guard_io(self._ensure_open)

    def log_end_offset(self) -> int:
        """Next offset to be assigned, as of now (takes the lock)."""
        with self._lock:
            return self._guard_io(self._ensure_open).next_offset

    # -- appending ------------------------------------------------------------

    def append(self, batch: EncodedBatch, leader_epoch: int = 0) -> AppendResult:
        """Append one batch as one frame and return where it landed (takes the lock).

        Does not fsync: call :meth:`flush` (acks=all) or :meth:`maybe_flush`.
        """
        self.check_size(batch)
        with self._lock:
            return self.append_locked(batch, leader_epoch)[0]

    def check_size(self, batch: EncodedBatch) -> None:
        if batch.frame_size > self.config.message_max_bytes:
            raise RecordTooLargeError(
                f"batch of {batch.frame_size} bytes exceeds the topic's message.max.bytes "
                f"({self.config.message_max_bytes}); send smaller batches or raise "
                "message.max.bytes on the topic"
            )

    def append_locked(self, batch: EncodedBatch, leader_epoch: int) -> tuple[AppendResult, bytes]:
        """As the leader: assign offsets and write the frame. Returns the header written,
        which followers copy byte for byte. Caller holds the partition lock."""
        return self._guard_io(lambda: self._append_new(batch, leader_epoch))

    def append_copy_locked(self, header: bytes, batch: EncodedBatch) -> AppendResult:
        """As a follower: write the leader's frame unchanged. Its base offset must be
        this replica's log end offset. Caller holds the partition lock."""
        return self._guard_io(lambda: self._append_copy(header, batch))

    def _append_new(self, batch: EncodedBatch, leader_epoch: int) -> tuple[AppendResult, bytes]:
        active = self._ensure_open()
        now_ms = int(time.time() * 1000)
        self._retention_due(now_ms)
        active = self._maybe_roll(active, batch.frame_size, batch.record_count, now_ms)
        base_offset = active.next_offset
        min_ts, max_ts = batch.min_timestamp, batch.max_timestamp
        attributes = batch.attributes
        if self.config.message_timestamp_type == "LogAppendTime":
            min_ts = max_ts = now_ms
            attributes |= fmt.LOG_APPEND_TIME
        header = fmt.pack_header(
            payload_size=batch.payload.size,
            attributes=attributes,
            base_offset=base_offset,
            record_count=batch.record_count,
            leader_epoch=leader_epoch,
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            min_timestamp=min_ts,
            max_timestamp=max_ts,
            schema_length=batch.payload.schema_length,
            payload_crc=batch.payload.crc,
        )
        return self._write(active, header, batch, base_offset, max_ts, now_ms, leader_epoch), header

    def _append_copy(self, header: bytes, batch: EncodedBatch) -> AppendResult:
        active = self._ensure_open()
        now_ms = int(time.time() * 1000)
        self._retention_due(now_ms)
        active = self._maybe_roll(active, batch.frame_size, batch.record_count, now_ms)
        frame = fmt.unpack_header(header)
        if frame.base_offset != active.next_offset:
            raise ReplicaDivergedError(
                f"replica {self.directory} ends at offset {active.next_offset} but the leader's next "
                f"frame starts at {frame.base_offset}; it must catch up before it rejoins the ISR")
        return self._write(active, header, batch, frame.base_offset, frame.max_timestamp, now_ms,
                           frame.leader_epoch)

    def _write(self, active: Segment, header: bytes, batch: EncodedBatch, base_offset: int,
               max_timestamp: int, now_ms: int, leader_epoch: int) -> AppendResult:
        latest = None if self._epochs is None else self._epochs.latest_epoch
        if latest is None or leader_epoch > latest:
            # A new epoch starts here, or another process recorded it first: re-read, then add.
            # Recorded (durably) before the frame, as Kafka does: an entry whose frame never
            # made it lies at or past the log end and is dropped when next loaded.
            self._epochs = LeaderEpochCache.load(self.directory, base_offset)
            self._epochs.assign(leader_epoch, base_offset)
        entry = txn_entry(header, batch.payload)  # (checked before the frame is written)
        active.append(header, batch.payload.parts, batch.payload.size, base_offset, batch.record_count,
                      max_timestamp)
        if entry is not None:
            self._append_txn_entry(active, entry)
        self._unflushed_messages += batch.record_count
        if self._first_unflushed_ms is None:
            self._first_unflushed_ms = now_ms
        return AppendResult(base_offset, now_ms, active.base_offset, active.size)

    def _append_txn_entry(self, active: Segment, entry: fmt.TxnIndexEntry) -> None:
        try:
            active.txn_index.append(entry)
        except FileNotFoundError:
            # Gone under us (it is derived data): rebuilt from the frames, this one included.
            log.warning("%s is missing; rebuilding it from the segment's frames", active.txn_index.path)
            self._files.rebuild_txn_index(active)

    def epochs(self) -> LeaderEpochCache:
        """This replica's leader epoch cache as on disk, checked against the log end
        (caller holds the lock)."""
        end = self._guard_io(self._ensure_open).next_offset
        self._epochs = LeaderEpochCache.load(self.directory, end)
        return self._epochs

    def truncate_to_locked(self, offset: int) -> None:
        """Cut the log so that ``offset`` is its end (a frame boundary): for a follower
        whose tail diverged. Files are replaced or deleted, never shrunk in place.
        Caller holds the lock."""
        self._guard_io(lambda: self._truncate_to(offset))

    def log_start_offset_locked(self) -> int:
        self._guard_io(self._ensure_open)
        bases = list_segment_bases(self.directory)
        return bases[0] if bases else 0

    def restart_at_locked(self, offset: int) -> None:
        """Drop every segment and start empty at ``offset`` (a follower too far behind)."""
        self._guard_io(lambda: self._truncate_to(offset, restart=True))

    def _truncate_to(self, offset: int, restart: bool = False) -> None:
        active = self._ensure_open()
        if offset >= active.next_offset and not restart:
            return
        self._lock.bump_generation()
        active.close()
        self._active = None
        self._epochs = None
        self._files.cut(offset, restart)

    def _retention_due(self, now_ms: int) -> None:
        """Apply retention at most every retention.check.interval.ms, before a write.

        A problem in an old segment must not fail (or half-fail) the append: it
        is logged, and retention tries again at the next interval.
        """
        if now_ms < self._next_retention_check_ms:
            return
        self._next_retention_check_ms = now_ms + self.config.retention_check_interval_ms
        try:
            self._apply_retention(now_ms)
        except CorruptBatchError as err:
            log.error("retention skipped for %s: %s", self.directory, err)

    def log_end_offset_locked(self) -> int:
        """Next offset to be assigned (caller holds the partition lock)."""
        return self._guard_io(self._ensure_open).next_offset

    def _maybe_roll(self, active: Segment, frame_size: int, record_count: int, now_ms: int) -> Segment:
        if active.size == 0:
            return active
        too_big = active.size + frame_size > self.config.segment_bytes
        too_old = (active.first_batch_timestamp != NO_TIMESTAMP
                   and now_ms - active.first_batch_timestamp >= self.config.segment_ms)
        # Index entries hold u32 relative offsets and positions: roll before one would not fit.
        unindexable = (active.next_offset + record_count - 1 - active.base_offset > fmt.MAX_RELATIVE_OFFSET
                       or active.size > fmt.MAX_INDEX_POSITION)
        if not (too_big or too_old or unindexable):
            return active
        # Seal: the old segment and its indexes are durable before the new name exists.
        active.flush()
        active.flush_indexes()
        self._lock.bump_generation()  # before the new name exists: others must re-check
        successor = self._files.create(active.next_offset)
        self._points.advance((successor.base_offset, 0, successor.base_offset))
        active.close()
        self._active = successor
        self._seen_generation = self._lock.generation
        return successor

    # -- durability -------------------------------------------------------------

    def flush(self) -> None:
        """fdatasync what this process knows of the active segment; advance the recovery point.

        Runs outside the write lock so concurrent writers share the disk's
        flush (the kernel coalesces them). Never retried on failure.
        """
        with self._lock:
            active = self._guard_io(self._ensure_open)
            fd = os.dup(active.fd)
            point = (active.base_offset, active.size, active.next_offset)
            txn_sync = self._guard_io(lambda: self._txn_sync_fd(active))
            self._sync_dir_if_needed()
        try:
            self._guard_io(lambda: disk.fdatasync(fd))
            if txn_sync is not None:  # before the recovery point moves past its entries
                self._guard_io(lambda: disk.fdatasync(txn_sync[0]))
                active.txn_index.synced(txn_sync[1])
        finally:
            os.close(fd)
            if txn_sync is not None:
                os.close(txn_sync[0])
        self._unflushed_messages = 0
        self._first_unflushed_ms = None
        if self._durable is None or point[:2] > self._durable[:2]:
            with self._lock:  # decided and written under the lock; synced outside it
                point_fd = self._guard_io(lambda: self._points.stage(point, only_forward=True))
            if point_fd is not None:
                try:
                    self._guard_io(lambda: disk.fdatasync(point_fd))
                finally:
                    os.close(point_fd)
            self._durable = point

    def flush_locked(self) -> None:
        """fsync under the lock the caller holds (no group commit); advance the recovery point."""
        active = self._guard_io(self._ensure_open)
        self._sync_dir_if_needed()
        self._guard_io(lambda: disk.fdatasync(active.fd))
        txn_sync = self._guard_io(lambda: self._txn_sync_fd(active))
        if txn_sync is not None:  # before the recovery point moves past its entries
            try:
                self._guard_io(lambda: disk.fdatasync(txn_sync[0]))
                active.txn_index.synced(txn_sync[1])
            finally:
                os.close(txn_sync[0])
        self._guard_io(lambda: self._points.advance(
            (active.base_offset, active.size, active.next_offset)))

    def _txn_sync_fd(self, active: Segment) -> tuple[int, tuple[int, ...]] | None:
        """Under the lock: a descriptor of the active segment's transaction index to fdatasync
        with the segment (None when this process already synced it as it is)."""
        try:
            return active.txn_index.sync_fd()
        except FileNotFoundError:
            self._files.rebuild_txn_index(active)  # rebuilt durably
            return None

    def _sync_dir_if_needed(self) -> None:
        """Make a lazily created first segment's name durable (once)."""
        if self._dir_unsynced:
            self._guard_io(lambda: fsync_dir(self.directory))
            self._dir_unsynced = False

    def maybe_flush(self) -> bool:
        """Apply ``flush.messages`` / ``flush.ms``; True when it flushed."""
        due = self._unflushed_messages >= self.config.flush_messages or (
            self._first_unflushed_ms is not None
            and time.time() * 1000 - self._first_unflushed_ms >= self.config.flush_ms
        )
        if due:
            self.flush()
        return due

    # -- retention ---------------------------------------------------------------

    def apply_retention(self) -> int:
        """Delete expired or excess sealed segments now; returns how many."""
        with self._lock:
            return self._guard_io(lambda: self._apply_retention(int(time.time() * 1000)))

    def _apply_retention(self, now_ms: int) -> int:
        keep_from = None
        if self.config.tiered:
            keep_from = 0 if self.retention_floor is None else self.retention_floor()
        return delete_expired_segments(self.directory, self.config, now_ms, keep_from)

    # -- helpers -----------------------------------------------------------------

    def _guard_io(self, action: Callable[[], T]) -> T:
        try:
            disk.check_writable(self.directory)
            return action()
        except OSError as err:
            if err.errno in _PROCESS_LIMITS:  # not the disk's fault: do not take the dir offline
                raise ResourceExhaustedError(
                    f"{err} while using {self.directory}; raise the open-files limit (ulimit -n) or "
                    "use fewer partitions per process (open.partitions.max)") from err
            name = errno.errorcode.get(err.errno or 0, "no errno")  # EROFS, ENOSPC, EIO: what to fix
            raise LogDirOfflineError(
                f"I/O error ({name}) on log dir of {self.directory}: {err}; the log dir is taken offline"
            ) from err

    def close(self) -> None:
        if self._active is not None:
            self._active.close()
            self._active = None


"""One segment of a replica: a log file of frames, its two sparse indexes and its transaction index.

Contract:

* Frames are appended at the end only, by the one process holding the
  partition's write lock; a frame is written with one ``pwritev``.
* The bytes of the file up to :attr:`Segment.size` are whole, checked frames
  with contiguous offsets; anything beyond is a torn tail that
  :meth:`Segment.recover` truncates ("bytes truncated" is returned, not raised).
* A segment file never shrinks in place (a cut copies the kept prefix to a
  new file renamed over the old), so readers may memory-map any segment.
* Indexes are derived; :meth:`recover` rebuilds them from the frames.
* The transaction index (:mod:`kstream.log.storage.txn_index`) gets an entry for each
  transactional frame from whoever writes it; :meth:`catch_up` adds the entries
  of frames a killed writer left without one.

A Segment object caches what this process knows of the file; the partition
log re-syncs it with :meth:`catch_up` under the write lock before appending.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from kstream.errors import CorruptBatchError
from kstream.log.storage import disk
from kstream.log.storage import format as fmt
from kstream.log.storage.disk import fsync_dir
from kstream.log.storage.frames import FrameWalk, find_frame_after, pread_from
from kstream.log.storage.index import OffsetIndex, TimeIndex
from kstream.log.storage.txn_index import TxnIndex

log = logging.getLogger(__name__)
NO_TIMESTAMP = -1


class SegmentReplacedError(Exception):
    """Internal: the file at the segment's path is not the one this object has open."""


def _nothing() -> None:
    pass


def _no_durable_data(base_offset: int) -> int | None:
    return 0


@dataclass(frozen=True, slots=True)
class Frame:
    """A checked frame: its header, where it is, and its payload bytes."""

    header: fmt.FrameHeader
    position: int
    payload: pa.Buffer


class Segment:
    """The files ``<base>.log``, ``<base>.index``, ``<base>.timeindex`` and ``<base>.txnindex``
    in a replica dir.

    Not thread-safe: the partition log serialises access.
    """

    def __init__(self, directory: str, base_offset: int, index_interval_bytes: int):
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.path = os.path.join(directory, fmt.segment_file_name(base_offset))
        self.offset_index = OffsetIndex(
            os.path.join(directory, fmt.segment_file_name(base_offset, fmt.OFFSET_INDEX_SUFFIX)),
            base_offset,
        )
        self.time_index = TimeIndex(
            os.path.join(directory, fmt.segment_file_name(base_offset, fmt.TIME_INDEX_SUFFIX)),
            base_offset,
        )
        self.txn_index = TxnIndex(directory, base_offset)
        # What this process knows of the file (valid prefix).
        self.size = 0
        self.next_offset = base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.first_batch_timestamp = NO_TIMESTAMP
        self._last_index_position = 0
        self._last_time_entry = NO_TIMESTAMP
        self._fd: int | None = None
        # Set by the owning partition log: announce a file change (before it
        # happens), and where the fsynced (never truncated) data of a segment ends
        # (None: unknown, the recovery point is unreadable).
        self.before_change: Callable[[], None] = _nothing
        self.durable_position: Callable[[int], int | None] = _no_durable_data

    # -- files ---------------------------------------------------------------

    @classmethod
    def create(cls, directory: str, base_offset: int, index_interval_bytes: int,
               sync_dir: bool = True) -> Segment:
        """Create an empty segment file; with ``sync_dir`` also make its name durable now
        (otherwise the caller must fsync the directory before acknowledging data in it)."""
        segment = cls(directory, base_offset, index_interval_bytes)
        fd = os.open(segment.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        os.close(fd)
        segment.txn_index.create()  # with the segment: a missing one is lost (or older), never "none yet"
        if sync_dir:
            fsync_dir(directory)
        return segment

    @property
    def fd(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR)
        return self._fd

    def file_size(self) -> int:
        return os.fstat(self.fd).st_size

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()

    def flush(self) -> None:
        """fdatasync the log file. An OSError here must take the log dir offline."""
        disk.fdatasync(self.fd)

    def flush_indexes(self) -> None:
        for index in (self.offset_index, self.time_index):
            if os.path.exists(index.path):
                fd = os.open(index.path, os.O_RDONLY)
                try:
                    disk.fsync(fd)
                finally:
                    os.close(fd)
        if self.txn_index.exists():
            self.txn_index.sync()

    def delete(self) -> None:
        """Unlink all files of the segment (open readers keep their view)."""
        self.close()
        for path in (self.path,):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()

    # -- appending -----------------------------------------------------------

    def append(self, header: bytes, payload_parts: Sequence[Any], payload_size: int, base_offset: int,
               record_count: int, max_timestamp: int) -> int:
        """Write one frame at the end with one pwritev; returns its position.

        Caller holds the write lock.
        """
        assert base_offset == self.next_offset, (base_offset, self.next_offset)
        position = self.size
        expected = len(header) + payload_size
        written = os.pwritev(self.fd, [header, *payload_parts], position)
        if written != expected:
            # The disk is full (the rest would fail with ENOSPC). The torn tail is cut by
            # the next writer or recovery; ENOSPC takes the log dir offline.
            raise OSError(errno.ENOSPC,
                          f"no space left on device: only {written} of {expected} bytes written; free "
                          "space on the disk, then bring its log dir back with `kstream log-dirs online ID`",
                          self.path)
        self._after_frame(position, expected, base_offset, record_count, max_timestamp, write_index=True)
        return position

    def _after_frame(self, position: int, frame_size: int, base_offset: int, record_count: int,
                     max_timestamp: int, *, write_index: bool) -> None:
        """Advance what we know past a frame, applying the shared index rule.

        Every process applies the rule to every frame, so all agree on which
        entries exist; only the frame's writer (``write_index``) appends them.
        """
        if position > 0 and (
            position // self.index_interval_bytes > self._last_index_position // self.index_interval_bytes
        ):
            self._last_index_position = position
            if write_index:
                self.offset_index.append(base_offset, position)
            if self.max_timestamp > self._last_time_entry:
                if write_index:
                    self.time_index.append(self.max_timestamp, base_offset)
                self._last_time_entry = self.max_timestamp
        if self.first_batch_timestamp == NO_TIMESTAMP:
            self.first_batch_timestamp = max_timestamp
        self.max_timestamp = max(self.max_timestamp, max_timestamp)
        self.size = position + frame_size
        self.next_offset = base_offset + record_count

    def catch_up(self) -> int:
        """Learn the frames other processes appended since we last looked.

        Caller holds the write lock, so every byte past :attr:`size` was
        written by a lock holder, which also wrote their index entries; a frame
        that does not fit is a torn tail left by a killed writer and is
        truncated. Returns the bytes truncated.
        """
        file_size = self.file_size()
        if file_size == self.size:
            return 0
        return self._scan_forward(file_size, verify_payload=False, write_index=False, truncate=True)

    # -- reading and recovery -----------------------------------------------

    def open_existing(self, verify_tail_from: int | None) -> int:
        """Learn a segment found on disk; returns the bytes truncated from its tail.

        ``verify_tail_from`` is a frame-boundary position (the recovery point)
        from which frames are re-checked with their payload checksums and a
        bad tail is truncated: this is the active segment. None means a sealed
        segment, scanned by header from its last index entry to learn its end;
        a bad frame there raises :class:`CorruptBatchError` and nothing changes.
        An index entry that does not name the frame at its position is a lying
        index: it is dropped and rebuilt from the segment's start.
        """
        file_size = self.file_size()
        if not self.offset_index.is_consistent(file_size):
            self._drop_indexes()
        limit = file_size if verify_tail_from is None else verify_tail_from
        start_offset, start = self.offset_index.entry_at_or_before_position(limit)
        if start and not self._frame_starts_at(start, start_offset, file_size):
            log.warning("%s: index entry (offset %d, position %d) does not match the segment; "
                        "rebuilding the index", self.offset_index.path, start_offset, start)
            self._drop_indexes()
            start_offset, start = self.base_offset, 0
        self._reset_to(start, start_offset)
        sealed = verify_tail_from is None
        return self._scan_forward(file_size, verify_payload=not sealed, write_index=True,
                                  truncate=not sealed)

    def _frame_starts_at(self, position: int, offset: int, file_size: int) -> bool:
        """Whether a valid frame with base offset ``offset`` starts at ``position``."""
        first = next(iter(FrameWalk(pread_from(self.fd), file_size, position)), None)
        return first is not None and first[1].base_offset == offset

    def _drop_indexes(self) -> None:
        self.offset_index.truncate_entries(0)
        self.time_index.truncate_entries(0)

    def _scan_forward(self, file_size: int, *, verify_payload: bool, write_index: bool,
                      truncate: bool) -> int:
        """Advance over whole, valid frames from :attr:`size`; handle the first bad one."""
        walk = FrameWalk(pread_from(self.fd), file_size, self.size, next_offset=self.next_offset,
                         verify_payload=verify_payload)
        transactional = []
        for position, header in walk:
            self._after_frame(position, header.frame_size, header.base_offset,
                              header.record_count, header.max_timestamp, write_index=write_index)
            if header.attributes & fmt.TRANSACTIONAL:
                transactional.append((position, header))
        if walk.problem is not None and not truncate:
            raise CorruptBatchError(f"sealed segment has a bad frame ({walk.problem})",
                                    path=self.path, position=walk.position, offset=self.next_offset)
        truncated = file_size - self.size
        if truncated:
            if self.replaced():
                # Another writer already cut this tail and renamed its copy over
                # ours: cutting again would clobber what it appended since.
                raise SegmentReplacedError(self.path)
            self._check_tail_is_torn(walk, file_size)
            self._replace_with_prefix(self.size)
            self.offset_index.truncate_to_position(self.size)
            self.time_index.truncate_to_offset(self.next_offset)
        if not write_index and self.txn_index.exists():
            # Catching up with other writers: give their transactional frames the entries a
            # killed one did not write (opening recovers the index as a whole: txn_index.recover).
            if truncated:
                self.txn_index.drop_from(self.next_offset)
            if transactional:
                self.txn_index.cover(transactional, pread_from(self.fd), self.path)
        return truncated

    def _check_tail_is_torn(self, walk: FrameWalk, file_size: int) -> None:
        """Raise rather than cut when what follows the last good frame may be fsynced data.

        Below the recovery point every frame was fsynced: a bad one there is
        corruption, and cutting would destroy acknowledged data. When the
        recovery point cannot be read (torn, garbage), a bad frame followed by
        a valid one is treated as corruption too; only a tail with no valid
        frame after the bad one is cut.
        """
        durable = self.durable_position(self.base_offset)
        if durable is None:
            after = find_frame_after(pread_from(self.fd), self.size, file_size)
            if after is not None:
                raise CorruptBatchError(
                    f"bad frame ({walk.problem}) followed by a valid frame at position {after}, and the "
                    "recovery point is unreadable: not truncating what may be fsynced data. Repair the "
                    "replica from an in-sync peer, or cut the file at this position by hand",
                    path=self.path, position=self.size, offset=self.next_offset)
        elif self.size < durable <= file_size:
            raise CorruptBatchError(
                f"bad frame ({walk.problem}) below the recovery point (fsynced data follows it); "
                "not truncating", path=self.path, position=self.size, offset=self.next_offset)

    def _reset_to(self, position: int, next_offset: int) -> None:
        """Restart what we know at frame boundary ``position``, keeping index entries before it."""
        self.size = position
        self.next_offset = next_offset
        if position == 0:
            self.offset_index.truncate_entries(0)
            self.time_index.truncate_entries(0)
            self._last_index_position = 0
            self._last_time_entry = NO_TIMESTAMP
            self.max_timestamp = NO_TIMESTAMP
            self.first_batch_timestamp = NO_TIMESTAMP
            return
        self.offset_index.truncate_to_position(position + 1)
        self.time_index.truncate_to_offset(next_offset + 1)
        last = self.offset_index.last_entry()
        self._last_index_position = last[1] if last else 0
        # Time entries hold the running max *before* their frame, so the last
        # one at or before ``position`` is exactly the max before it.
        last_time = self.time_index.last_timestamp()
        self.max_timestamp = NO_TIMESTAMP if last_time is None else last_time
        self._last_time_entry = self.max_timestamp
        first = next(iter(FrameWalk(pread_from(self.fd), position)), None)
        self.first_batch_timestamp = NO_TIMESTAMP if first is None else first[1].max_timestamp

    def cut_at_offset(self, offset: int) -> None:
        """Keep the frames before ``offset`` (a frame boundary in this segment); replaces the file."""
        walk = FrameWalk(pread_from(self.fd), self.file_size())
        position = 0
        for frame_position, header in walk:
            if header.base_offset >= offset:
                break
            position = frame_position + header.frame_size
        self._replace_with_prefix(position)
        self.offset_index.truncate_to_position(position)
        self.time_index.truncate_to_offset(offset)
        if self.txn_index.exists():
            self.txn_index.drop_from(offset)
        self.size, self.next_offset = position, offset

    def _replace_with_prefix(self, size: int) -> None:
        """Cut the file to ``size`` bytes without shrinking it in place.

        Readers memory-map segments; shrinking a mapped file would make their
        next access fault (SIGBUS). So the kept prefix is copied to a new file
        that is renamed over the old one: open readers keep the old inode,
        and everyone who opens the name afterwards sees the new one.
        """
        tmp = self.path + fmt.TMP_SUFFIX
        self.before_change()  # others must re-check before the name points elsewhere
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            copied = 0
            while copied < size:
                sent = os.copy_file_range(self.fd, out, size - copied, copied, copied)
                if sent == 0:
                    raise OSError(f"short copy of {self.path}: {copied} of {size} bytes")
                copied += sent
            disk.fsync(out)
        finally:
            os.close(out)
        os.rename(tmp, self.path)
        fsync_dir(self.directory)
        self.close()

    def replaced(self) -> bool:
        """True when the file at :attr:`path` is no longer the one this object has open."""
        try:
            return os.stat(self.path).st_ino != os.fstat(self.fd).st_ino
        except FileNotFoundError:
            return True

    def scan(self, position: int, end: int, verify_payload: bool
             ) -> Iterator[tuple[int, fmt.FrameHeader | None, str | None]]:
        """Yield (position, header, None) for valid frames in [position, end), then
        (position, None, problem) for the first bad one, if any."""
        walk = FrameWalk(pread_from(self.fd), end, position, verify_payload=verify_payload)
        for frame_position, header in walk:
            yield frame_position, header, None
        if walk.problem is not None:
            yield walk.position, None, walk.problem

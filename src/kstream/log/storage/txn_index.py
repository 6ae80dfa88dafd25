"""The transaction index: a replica's transactions, readable from its files alone.

Each segment has a ``<base offset>.txnindex`` (layout in :mod:`kstream.log.storage.format`):
one 24-byte entry per frame with the TRANSACTIONAL attribute, data or marker, in
offset order. It is derived data (the frames are the truth) and lets a reader with
no SQLite (the JVM reader, and the Python reader since issue 14) tell the last
stable offset (LSO) and the aborted transactions of a partition.

Writer side, :class:`TxnIndex` (one per :class:`~kstream.log.storage.segment.Segment`,
used under the partition lock):

* an entry is appended (one small write, no fsync) right after its frame, by
  whoever writes the frame: leader appends and follower copies alike;
* it is fdatasynced in the flush that fsyncs the segment, before the recovery
  point moves past its frame, so an entry below the recovery point is durable;
* a writer that learns frames another process wrote (catch-up) adds the entries
  a killed writer did not get to write, after cutting a torn entry at the end;
* recovery keeps the entries below the recovery point and re-derives the rest
  from the frames; a missing or damaged file is rebuilt from the frames (.tmp,
  fsync, rename, fsync the directory); truncation drops entries at/after the new
  log end (the recovery point is moved back first).

The reader side (the derivation rule of docs/FORMAT.md, "Transaction index") is
:mod:`kstream.log.storage.txn_index_reader`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable

from kstream.errors import CorruptBatchError
from kstream.log.storage import disk
from kstream.log.storage import format as fmt
from kstream.log.storage.frames import FrameWalk, Read, pread_from

log = logging.getLogger(__name__)

MAX_TXN_INDEX_BYTES = 1 << 30
"""Largest .txnindex read at once: one entry per frame of a segment of at most
2^31 - 1 bytes of frames of at least 68 bytes is below this."""


def txn_index_path(directory: str, base_offset: int) -> str:
    return os.path.join(directory, fmt.segment_file_name(base_offset, fmt.TXN_INDEX_SUFFIX))


def frame_entry(read: Read, position: int, header: fmt.FrameHeader, path: str) -> fmt.TxnIndexEntry | None:
    """The entry of the frame at ``position`` (None when it is not transactional). A marker
    whose payload is neither COMMIT nor ABORT raises CorruptBatchError."""
    kind = fmt.txn_entry_kind(header.attributes)
    if kind is None:
        return None
    if kind == 0:
        payload = read(position + fmt.HEADER_SIZE, header.payload_size)
        kind = fmt.marker_kind(payload, header.schema_length)
        if kind is None:
            raise CorruptBatchError("transaction marker whose payload is neither COMMIT nor ABORT",
                                    path=path, position=position, offset=header.base_offset)
    return fmt.TxnIndexEntry(kind, header.producer_id, header.base_offset)


def read_file(path: str) -> bytes | None:
    """The whole file, or None when it is missing."""
    try:
        with open(path, "rb") as f:
            return f.read(MAX_TXN_INDEX_BYTES)
    except FileNotFoundError:
        return None


# -- writer side ---------------------------------------------------------------------------


class TxnIndex:
    """``<base>.txnindex`` of one segment, as its writers see it. Not thread-safe; the
    caller holds the partition lock for everything but closing."""

    def __init__(self, directory: str, base_offset: int):
        self.directory = directory
        self.base_offset = base_offset
        self.path = txn_index_path(directory, base_offset)
        self._fd: int | None = None
        self._size = -1  # bytes of whole valid entries known to this process (-1: not read yet)
        self._last_offset = -1  # offset of the last of them
        self._synced: tuple[int, ...] | None = None  # the file's stat at our last fdatasync

    # -- files

    def create(self) -> None:
        """An empty index for a new segment (the caller fsyncs the directory). The segment's
        log file was just created exclusively, so an index already there is a leftover (an
        unlink a power loss undid): emptied."""
        self.close()
        self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC, 0o644)
        self._size, self._last_offset = 0, -1
        self._synced = _stat_key(os.fstat(self._fd))  # empty, and its name durable with the segment's

    def exists(self) -> bool:
        return os.path.exists(self.path)

    @property
    def fd(self) -> int:
        """Open for appending; FileNotFoundError when missing (rebuild it, never create it empty)."""
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND)
        return self._fd

    def forget(self) -> None:
        """Another process may have replaced the file (a rebuild): re-open and re-read it."""
        self.close()
        self._size = -1
        self._synced = None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def delete(self) -> None:
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    # -- appending

    def append(self, entry: fmt.TxnIndexEntry) -> None:
        """One write at the end of the file (O_APPEND); no fsync (see :meth:`sync_fd`)."""
        raw = fmt.pack_txn_entry(*entry)
        written = os.write(self.fd, raw)
        if written != len(raw):  # a partial entry ends the trusted part of the file
            raise OSError(f"short write to {self.path}: {written} of {len(raw)} bytes")
        if self._size >= 0:
            self._size += len(raw)
            self._last_offset = entry.offset

    def refresh(self) -> bool:
        """Learn the entries other writers appended since we last looked; True when the
        file is whole valid entries to its end (False: a torn entry follows them)."""
        if self._size < 0:
            self._size, self._last_offset = 0, -1
        end = os.fstat(self.fd).st_size
        if end == self._size:
            return True
        if end < self._size:  # cut by someone else: read it again from the start
            self._size, self._last_offset = 0, -1
        raw = os.pread(self.fd, min(end - self._size, MAX_TXN_INDEX_BYTES), self._size)
        entries, clean = fmt.unpack_txn_entries(raw)
        for entry in entries:
            if entry.offset <= self._last_offset:
                clean = False
                break
            self._size += fmt.TXN_INDEX_ENTRY_SIZE
            self._last_offset = entry.offset
        return clean and self._size == end

    def cover(self, frames: Iterable[tuple[int, fmt.FrameHeader]], read: Read, segment_path: str) -> None:
        """Frames another writer appended (``(position, header)``, transactional ones) each get
        their entry: a writer killed between a frame and its entry left none, or half of one."""
        clean = self.refresh()
        if not clean:  # the torn entry is past every frame's entry: nothing trusted lies there
            size, last_offset = self._size, self._last_offset
            self._cut(size)
            self._size, self._last_offset = size, last_offset
        for position, header in frames:
            if header.base_offset > self._last_offset:
                entry = frame_entry(read, position, header, segment_path)
                if entry is not None:
                    self.append(entry)

    def drop_from(self, offset: int) -> None:
        """Drop entries at or after ``offset`` (a cut log), in place: the caller has made sure
        readers trust none of them (they lie at/past the recovery point)."""
        raw = read_file(self.path)
        if raw is None:
            return
        entries, _ = fmt.unpack_txn_entries(raw)
        keep = sum(1 for entry in entries if entry.offset < offset)
        self._cut(keep * fmt.TXN_INDEX_ENTRY_SIZE)

    def _cut(self, size: int) -> None:
        os.ftruncate(self.fd, size)
        self.forget()

    def rebuild(self, entries: list[fmt.TxnIndexEntry], before_change: Callable[[], None]) -> None:
        """Replace the file by ``entries`` (.tmp, fsync, rename, fsync the directory).
        ``before_change`` tells other processes to re-open it (the lock generation)."""
        tmp = self.path + fmt.TMP_SUFFIX
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            raw = b"".join(fmt.pack_txn_entry(*entry) for entry in entries)
            if os.write(fd, raw) != len(raw):
                raise OSError(f"short write to {tmp}")
            disk.fsync(fd)
        finally:
            os.close(fd)
        before_change()
        self.forget()
        os.rename(tmp, self.path)
        disk.fsync_dir(self.directory)
        self._synced = _stat_key(os.fstat(self.fd))

    # -- durability

    def sync_fd(self) -> tuple[int, tuple[int, ...]] | None:
        """Under the lock: a duplicate descriptor to fdatasync before the recovery point moves
        past what the file now covers, and the file's state to pass to :meth:`synced` once
        that returned; None when this process already synced the file as it is now."""
        key = _stat_key(os.fstat(self.fd))
        if key == self._synced:
            return None
        return os.dup(self.fd), key

    def synced(self, key: tuple[int, ...]) -> None:
        self._synced = key

    def sync(self) -> None:
        """fdatasync now if needed (under the lock: a segment being sealed, a locked flush)."""
        pending = self.sync_fd()
        if pending is None:
            return
        fd, key = pending
        try:
            disk.fdatasync(fd)
            self.synced(key)
        finally:
            os.close(fd)


def entries_from_frames(read: Read, size: int, path: str, position: int = 0,
                        next_offset: int | None = None) -> tuple[list[fmt.TxnIndexEntry], FrameWalk]:
    """Entries of the transactional frames in [position, size) (the walk, for where it stopped)."""
    walk = FrameWalk(read, size, position, next_offset=next_offset)
    entries = []
    for frame_position, header in walk:
        entry = frame_entry(read, frame_position, header, path)
        if entry is not None:
            entries.append(entry)
    return entries, walk


def recover(index: TxnIndex, segment_fd: int, size: int, next_offset: int, trusted: tuple[int, int] | None,
            before_change: Callable[[], None]) -> None:
    """Writer recovery of a segment's index on open (caller holds the lock): the segment's
    frames [0, ``size``) end at ``next_offset``; ``trusted`` is (position, next_offset) of
    the recovery point when it lies in this segment (None: trust nothing, rebuild).

    Entries below the point are kept when the file is whole valid entries; the rest are
    dropped and derived again from the frames past the point. A missing or damaged file
    is rebuilt from all the frames."""
    read = pread_from(segment_fd)
    raw = read_file(index.path)
    entries, clean = fmt.unpack_txn_entries(raw or b"")
    if (raw is None or not clean or trusted is None or trusted[1] > next_offset
            or any(entry.offset < index.base_offset for entry in entries)):
        rebuilt, _ = entries_from_frames(read, size, index.path, 0, index.base_offset)
        if raw is None or not clean or entries != rebuilt:
            log.warning("%s: %s; rebuilding it from the segment's frames", index.path,
                        "missing" if raw is None else "torn, damaged or not matching the frames")
            index.rebuild(rebuilt, before_change)
        return
    position, point_offset = trusted
    kept = [entry for entry in entries if entry.offset < point_offset]
    derived, _ = entries_from_frames(read, size, index.path, position, point_offset)
    if entries != kept + derived:
        index.drop_from(point_offset)
        for entry in derived:
            index.append(entry)


def _stat_key(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        disk.fsync(fd)
    finally:
        os.close(fd)

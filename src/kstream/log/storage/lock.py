"""The write lock of one partition, shared by threads and processes.

The lock file also holds the partition's small shared state (layout in
:mod:`kstream.log.storage.format`): a mark once the topic is deleted (fencing old
writers), a generation number bumped whenever segment files or the
partition's metadata (leader, ISR) change other than by appending, and the
high watermark, stored with its bitwise complement so a reader that takes no
lock can tell a torn read and retry. The file is never fsynced: after a power
loss it may be empty, zeroed or old, and the high watermark is then rebuilt
from the replicas' logs (see ``Partition.high_watermark``).

Other processes are excluded by the lock kind every kstream writer takes
(:mod:`kstream.log.storage.file_lock`: ``flock`` and an open-file-description
lock, which Java's ``FileChannel.lock`` conflicts with; released by the kernel
when a holder dies, even by SIGKILL); a ``threading.Lock`` excludes other
threads of this process, which share the open file description and so its locks.
Re-opened after ``fork`` (the pid is checked), because a forked child must not
share its parent's lock.
"""

from __future__ import annotations

import os
import threading
import weakref
from types import TracebackType

from kstream.errors import TopicNotFoundError
from kstream.log.storage import file_lock
from kstream.log.storage import format as fmt

# Every lock of this process, so a forked child can close the inherited descriptors
# right away (os.register_at_fork), not only when it next takes the lock.
_LOCKS: weakref.WeakSet[PartitionLock] = weakref.WeakSet()
_HW_READS = 100  # re-reads of a high watermark that a writer is changing under us
_SAME_BAD_READS = 3  # the same bad value this often in a row is not a torn read: none is stored


class PartitionLock:
    """An exclusive lock on ``path`` (created, with its dir, when first taken or written; a
    reader of the high watermark creates nothing); use as a context manager."""

    def __init__(self, path: str):
        self.path = path
        self._fd: int | None = None
        self._pid = os.getpid()
        self._thread_lock = threading.Lock()
        self.generation = 0  # read from the lock file each time the lock is taken
        _LOCKS.add(self)

    def _after_fork(self) -> None:
        """In a forked child: drop the inherited descriptor (closing, never unlocking:
        the locks belong to the parent's open file description, and a child that
        kept it open would hold a dead parent's lock for as long as it lives)."""
        if self._fd is not None and self._pid != os.getpid():
            try:
                os.close(self._fd)
            except OSError:
                pass
        self._fd = None
        self._pid = os.getpid()
        self._thread_lock = threading.Lock()

    def _file(self) -> int:
        if self._fd is None:
            try:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except FileNotFoundError:  # the first lock file of the cluster: its dir too
                os.makedirs(os.path.dirname(self.path), exist_ok=True)
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        return self._fd

    def create_file(self) -> str:
        """Make sure the lock file (and its dir) exists, without taking the lock; its path.
        For a reader that waits on the file (inotify) for the high watermark to move: a
        file no writer made yet cannot be watched."""
        if self._pid != os.getpid():
            self._after_fork()
        self._file()
        return self.path

    def __enter__(self) -> PartitionLock:
        if self._pid != os.getpid():  # forked: nothing of the parent's lock is ours
            self._after_fork()
        self._thread_lock.acquire()
        try:
            fd = self._file()
            file_lock.lock_exclusive(fd)
        except BaseException:
            self._thread_lock.release()
            raise
        try:
            state = os.pread(fd, fmt.LOCK_STATE_SIZE, 0)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        deleted = fmt.LOCK_DELETED_POSITION
        if state[deleted:deleted + len(fmt.LOCK_DELETED_MARK)] == fmt.LOCK_DELETED_MARK:
            self.__exit__(None, None, None)
            raise TopicNotFoundError(
                f"the partition behind {self.path} was deleted; re-read the topic's metadata"
            )
        self.generation = (fmt.LOCK_GENERATION.unpack_from(state, fmt.LOCK_GENERATION_POSITION)[0]
                           if len(state) == fmt.LOCK_STATE_SIZE else 0)
        return self

    def bump_generation(self) -> None:
        """Tell the other holders that segment files changed (a roll or a replaced file).

        They compare :attr:`generation` with what they saw last, so an append
        needs no directory look-ups while nothing changed. Caller holds the lock.
        """
        self.generation += 1
        os.pwrite(self._file(), fmt.LOCK_GENERATION.pack(self.generation), fmt.LOCK_GENERATION_POSITION)

    def mark_deleted(self) -> None:
        """Fence every holder of this lock for good (the topic was deleted). Caller holds it."""
        os.pwrite(self._file(), fmt.LOCK_DELETED_MARK, fmt.LOCK_DELETED_POSITION)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            file_lock.unlock(self._file())
        finally:
            self._thread_lock.release()

    def write_high_watermark(self, offset: int) -> None:
        """Publish the high watermark (caller holds the lock)."""
        os.pwrite(self._file(), fmt.pack_high_watermark(offset), fmt.LOCK_HIGH_WATERMARK_POSITION)

    def _reader_fd(self) -> int | None:
        """The lock file's descriptor for a read that takes no lock, opened if need be (None
        when there is no lock file: readers never create one)."""
        if self._pid != os.getpid():  # forked: the inherited descriptor is the parent's
            self._after_fork()
        if self._fd is None:
            try:
                self._fd = os.open(self.path, os.O_RDWR)
            except FileNotFoundError:
                return None
        return self._fd

    def read_high_watermark(self) -> int | None:
        """The published high watermark; None if none is stored (never written, or lost or
        zeroed by a power loss: the caller rebuilds it from the logs). Takes no lock, and
        creates no file: a missing lock file holds none (readers never write)."""
        fd = self._reader_fd()
        if fd is None:
            return None
        last_bad, same_bad = b"", 0
        for _ in range(_HW_READS):
            raw = os.pread(fd, fmt.LOCK_HIGH_WATERMARK.size, fmt.LOCK_HIGH_WATERMARK_POSITION)
            if len(raw) < fmt.LOCK_HIGH_WATERMARK.size:
                return None
            value = fmt.unpack_high_watermark(raw)
            if value is not None:
                return value
            # Torn by a writer mid-pwrite (read again), or garbage that stays: none stored.
            same_bad = same_bad + 1 if raw == last_bad else 1
            last_bad = raw
            if same_bad >= _SAME_BAD_READS:
                return None
        raise OSError(f"high watermark in {self.path} keeps changing under a reader")

    def read_generation(self) -> int | None:
        """The generation as stored now, taking no lock and creating no file (None when there
        is no lock file yet): a reader caching what it derived from the segment files checks
        it, since it moves whenever they change other than by appending."""
        fd = self._reader_fd()
        if fd is None:
            return None
        raw = os.pread(fd, fmt.LOCK_GENERATION.size, fmt.LOCK_GENERATION_POSITION)
        return fmt.LOCK_GENERATION.unpack(raw)[0] if len(raw) == fmt.LOCK_GENERATION.size else None

    def deleted(self) -> bool:
        """Whether the topic behind this lock was deleted (its mark is set). Takes no lock and
        creates no file: a missing lock file is a partition no writer touched yet."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            mark = os.pread(fd, len(fmt.LOCK_DELETED_MARK), fmt.LOCK_DELETED_POSITION)
        finally:
            os.close(fd)
        return mark == fmt.LOCK_DELETED_MARK

    def close(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            os.close(self._fd)
        self._fd = None


def _close_inherited_locks() -> None:
    for lock in list(_LOCKS):
        lock._after_fork()


os.register_at_fork(after_in_child=_close_inherited_locks)

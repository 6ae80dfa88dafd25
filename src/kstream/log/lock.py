"""The write lock of one partition, shared by threads and processes.

The lock file also holds the partition's small shared state: byte 0 is 'X'
once the topic is deleted (fencing old writers), bytes 8-15 a generation
number bumped whenever segment files or the partition's metadata (leader,
ISR) change other than by appending, and bytes 16-31 the high watermark,
stored with its bitwise complement so a reader that takes no lock can tell a
torn read and retry.

``flock`` excludes other processes (and is released by the kernel when a
holder dies, even by SIGKILL); a ``threading.Lock`` excludes other threads of
this process, which share the open file description and so the flock.
Re-opened after ``fork`` (the pid is checked), because a forked child must not
share its parent's lock.
"""

from __future__ import annotations

import fcntl
import os
import struct
import threading
import weakref
from types import TracebackType

from kstream.errors import TopicNotFoundError

_DELETED = b"X"
# Every lock of this process, so a forked child can close the inherited descriptors
# right away (os.register_at_fork), not only when it next takes the lock.
_LOCKS: weakref.WeakSet[PartitionLock] = weakref.WeakSet()
_HW = struct.Struct("<qq")
_HW_POSITION = 16


class PartitionLock:
    """An exclusive lock on ``path`` (created if missing); use as a context manager."""

    def __init__(self, path: str):
        self.path = path
        self._fd: int | None = None
        self._pid = os.getpid()
        self._thread_lock = threading.Lock()
        self.generation = 0  # read from the lock file each time the lock is taken
        _LOCKS.add(self)

    def _after_fork(self) -> None:
        """In a forked child: drop the inherited descriptor (closing, never unlocking:
        the flock belongs to the parent's open file description, and a child that
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
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        return self._fd

    def __enter__(self) -> PartitionLock:
        if self._pid != os.getpid():  # forked: nothing of the parent's lock is ours
            self._after_fork()
        self._thread_lock.acquire()
        try:
            fd = self._file()
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            self._thread_lock.release()
            raise
        try:
            state = os.pread(fd, 16, 0)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        if state[:1] == _DELETED:
            self.__exit__(None, None, None)
            raise TopicNotFoundError(
                f"the partition behind {self.path} was deleted; re-read the topic's metadata"
            )
        self.generation = int.from_bytes(state[8:16], "little") if len(state) == 16 else 0
        return self

    def bump_generation(self) -> None:
        """Tell the other holders that segment files changed (a roll or a replaced file).

        They compare :attr:`generation` with what they saw last, so an append
        needs no directory look-ups while nothing changed. Caller holds the lock.
        """
        self.generation += 1
        os.pwrite(self._file(), self.generation.to_bytes(8, "little"), 8)

    def mark_deleted(self) -> None:
        """Fence every holder of this lock for good (the topic was deleted). Caller holds it."""
        os.pwrite(self._file(), _DELETED, 0)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            fcntl.flock(self._file(), fcntl.LOCK_UN)
        finally:
            self._thread_lock.release()

    def write_high_watermark(self, offset: int) -> None:
        """Publish the high watermark (caller holds the lock)."""
        os.pwrite(self._file(), _HW.pack(offset, ~offset), _HW_POSITION)

    def read_high_watermark(self) -> int | None:
        """The published high watermark, or None if none was ever written. Takes no lock."""
        fd = self._file()
        for _ in range(100):
            raw = os.pread(fd, _HW.size, _HW_POSITION)
            if len(raw) < _HW.size:
                return None
            value, check = _HW.unpack(raw)
            if check == ~value:
                return value
        raise OSError(f"high watermark in {self.path} keeps changing under a reader")

    def close(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            os.close(self._fd)
        self._fd = None


def _close_inherited_locks() -> None:
    for lock in list(_LOCKS):
        lock._after_fork()


os.register_at_fork(after_in_child=_close_inherited_locks)

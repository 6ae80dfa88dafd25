"""The write lock of one partition, shared by threads and processes.

The lock file also holds the partition's small shared state: byte 0 is 'X'
once the topic is deleted (fencing old writers), bytes 8-15 a generation
number bumped whenever segment files change other than by appending.

``flock`` excludes other processes (and is released by the kernel when a
holder dies, even by SIGKILL); a ``threading.Lock`` excludes other threads of
this process, which share the open file description and so the flock.
Re-opened after ``fork`` (the pid is checked), because a forked child must not
share its parent's lock.
"""

from __future__ import annotations

import fcntl
import os
import threading
from types import TracebackType

from kstream.errors import TopicNotFoundError

_DELETED = b"X"


class PartitionLock:
    """An exclusive lock on ``path`` (created if missing); use as a context manager."""

    def __init__(self, path: str):
        self.path = path
        self._fd: int | None = None
        self._pid = os.getpid()
        self._thread_lock = threading.Lock()
        self.generation = 0  # read from the lock file each time the lock is taken

    def _file(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        return self._fd

    def __enter__(self) -> PartitionLock:
        if self._pid != os.getpid():  # forked: nothing of the parent's lock is ours
            self._pid = os.getpid()
            self._thread_lock = threading.Lock()
            self._fd = None
        self._thread_lock.acquire()
        try:
            fd = self._file()
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            self._thread_lock.release()
            raise
        state = os.pread(fd, 16, 0)
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

    def close(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            os.close(self._fd)
        self._fd = None

"""Wake a waiting reader when a replica directory changes (Linux inotify, else polling).

A consumer with nothing to read blocks in :meth:`ChangeNotifier.wait` instead
of spinning: a new, renamed or deleted file in a watched directory wakes it
(a segment roll, retention, a replaced file), and so does a write to a watched
file (the partition's lock file, where the high watermark is published). Writes
inside a watched directory's files do not: an appended frame, its index entries
and the recovery point are not readable until the high watermark moves, and a
reader woken by each of them (three or more per acks=all batch) spent a fetch
round finding nothing, late for the wake that mattered. Without inotify
(another OS, or the watch limit reached) ``wait`` sleeps for a short, growing
interval, which is correct but slower to react.
"""

from __future__ import annotations

import ctypes
import os
import select
import time

_IN_MODIFY = 0x002
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_MOVED_TO = 0x080
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_DIRECTORY_MASK = _IN_CREATE | _IN_DELETE | _IN_MOVED_TO  # files appear or go; not writes inside them
_FILE_MASK = _IN_MODIFY
_POLL_START_S = 0.0002


def _load_libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the process's own symbols (glibc on Linux)
        libc.inotify_init1  # noqa: B018 - probe that the symbol exists
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _load_libc()  # a handle to the C library: the same in every process, fork-safe


class ChangeNotifier:
    """Watches directories; not thread-safe; re-created after fork by its owner.

    The inotify instance is made on the first :meth:`wait`, not before: a
    consumer that always finds data never pays for creating or closing it.
    That first wait returns at once, so the caller looks at the log again
    after the watches exist and no write can slip between look and watch.
    """

    def __init__(self, max_sleep_s: float):
        self.max_sleep_s = max_sleep_s
        self._fd = -1
        self._directories: list[str] = []
        self._polling = _LIBC is None
        self._sleep_s = _POLL_START_S
        self._poller: select.poll | None = None

    def watch(self, path: str) -> None:
        """Wake on ``path``: a directory when files are created, renamed in or deleted in it,
        a file when it is written."""
        if path in self._directories:
            return
        self._directories.append(path)
        if self._fd >= 0:
            self._add_watch(path)

    def _add_watch(self, path: str) -> None:
        assert _LIBC is not None
        mask = _DIRECTORY_MASK if os.path.isdir(path) else _FILE_MASK
        if _LIBC.inotify_add_watch(self._fd, os.fsencode(path), mask) < 0:
            self._polling = True  # e.g. fs.inotify.max_user_watches reached

    def _start(self) -> None:
        assert _LIBC is not None
        self._fd = _LIBC.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if self._fd >= 0:
            self._poller = select.poll()
            self._poller.register(self._fd, select.POLLIN)
        if self._fd < 0:
            self._polling = True
            return
        for directory in self._directories:
            self._add_watch(directory)

    def wait(self, timeout_s: float) -> bool:
        """Return when a watched path changed (True), or after ``timeout_s`` (False; also
        the first call, which makes the watches, and every call while polling)."""
        if timeout_s <= 0:
            return False
        if not self._polling and self._fd < 0:
            self._start()
            return False
        if self._polling:
            time.sleep(min(timeout_s, self._sleep_s))
            self._sleep_s = min(self.max_sleep_s, self._sleep_s * 2)
            return False
        # poll(), not select(): select() refuses descriptors past FD_SETSIZE (1024) with a
        # ValueError, and a process with many partitions open has that many.
        assert self._poller is not None
        if self._poller.poll(timeout_s * 1000):
            self.drain()
            return True
        return False

    def drain(self) -> None:
        """Forget pending events (the caller is about to look at the log anyway)."""
        self._sleep_s = _POLL_START_S
        if self._fd < 0:
            return
        try:
            while os.read(self._fd, 65536):
                pass
        except BlockingIOError:
            pass

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            self._poller = None
        self._directories.clear()

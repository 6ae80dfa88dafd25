"""A bounded memo of what was read out of segment files, kept across requests while each
file is the same.

The groups list asks, for every partition, its log end (a header scan of the active
segment) and the timestamp of the record at each committed offset (a frame decode); a
live console asks again every few seconds, and a :class:`~kstream.log.storage.log_reader.LogReader`
set-up per partition (list, open, map, index) was most of the page. Segment files are
append-only: a frame, once whole, never changes in place, and a writer that cuts a torn
tail or truncates a diverged follower writes a new file and renames it over the old one
(segment.py, log_reader.py). So an answer read from the bytes of one segment file holds
as long as the file at that path is the very same file with the very same size.

:class:`SegmentMemo` keys each answer on the segment's path, its identity from ``stat``
(device, inode, size, mtime, ctime) and the caller's key (e.g. an offset). On a miss it
runs ``compute(identity)``, which must read through descriptors it opens itself *after*
the first ``stat`` (a fresh reader), or reuse what such a read of the same identity gave
in the same evaluation; the memo stores the answer only when a second ``stat`` afterwards
shows the same identity: then the file did not grow or get replaced while it was read, and
the answer describes exactly the file the key names. An appended frame changes the size, a
replaced file the inode and times, so a stale answer is never served: such a partition is
read again, as without the memo. Bounded (``max_entries``, least recently used dropped
first), thread-safe (one lock; reading runs outside it), and a forked child starts empty
(``os.getpid`` is checked), as the house style asks.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")
MAX_ENTRIES_LIMIT = 1_000_000

Identity = tuple[str, int, int, int, int, int]


def identity(path: str) -> Identity:
    """The segment file's identity (FileNotFoundError when it is gone)."""
    stat = os.stat(path)
    return path, stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


class SegmentMemo(Generic[T]):
    """``memo.get(path, key, compute)`` = ``compute()``, reused while the segment file at
    ``path`` is the same file with the same size; see the module docstring."""

    def __init__(self, max_entries: int):
        assert 1 <= max_entries <= MAX_ENTRIES_LIMIT, max_entries
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[Identity, Hashable], T] = OrderedDict()
        self._pid = os.getpid()
        self.hits = self.misses = 0  # for tests and the benchmark

    def get(self, path: str, key: Hashable, compute: Callable[[Identity], T],
            before: Identity | None = None) -> T:
        """The memoized answer, or ``compute(identity)`` with the identity the file had
        before (stored only if the file did not change meanwhile). FileNotFoundError
        (nothing computed) when the file is gone. ``before``: the identity the caller
        took earlier in the same evaluation (the answer is then as of that ``stat``)."""
        before = identity(path) if before is None else before
        with self._lock:
            if self._pid != os.getpid():
                self._entries.clear()
                self._pid = os.getpid()
            found = self._entries.get((before, key), _MISSING)
            if found is not _MISSING:
                self._entries.move_to_end((before, key))
                self.hits += 1
                return found  # type: ignore[return-value]
        value = compute(before)
        try:
            unchanged = identity(path) == before
        except FileNotFoundError:
            unchanged = False  # gone meanwhile: answer this once, keep nothing
        with self._lock:
            self.misses += 1
            if unchanged:
                self._entries[(before, key)] = value
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


_MISSING = object()

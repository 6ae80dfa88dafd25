"""A bounded memo of what was parsed out of write-once files, kept across requests.

The groups page walks the offsets table's Delta commit files and reads the
Parquet files they add, for every group, on every load; a live console asks
again every few seconds. Those files are written once and never changed in
place: Delta commit files (``_delta_log/<version>.json``) and data files (named
by a UUID) are created whole and only ever deleted (log retention, vacuum). So
what was parsed from one can be kept, as long as it is still the same file.

:class:`FileMemo` keys each answer on the file's path *and* its identity from
one ``stat`` (device, inode, size, mtime): a file that is gone is a miss (the
caller then sees FileNotFoundError exactly as without the memo), and a file
replaced at the same path (which kstream never does; a restored backup might)
has a new identity and is parsed again. So an answer is never staler than the
file it came from. Bounded: at most ``max_entries`` answers, and with ``weigh``
at most ``max_weight`` in total (e.g. rows), the least recently used dropped
first. Thread-safe (one lock; parsing runs outside it); after a fork the child
starts empty (``os.getpid`` is checked), as the house style asks.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
MAX_ENTRIES_LIMIT = 1_000_000

_Identity = tuple[str, int, int, int, int]


class FileMemo(Generic[T]):
    """``memo.get(path)`` = ``parse(path)``, reused while the file at ``path`` is the same.
    FileNotFoundError (not cached) when the file is gone."""

    def __init__(self, parse: Callable[[str], T], max_entries: int,
                 weigh: Callable[[T], int] | None = None, max_weight: int = 0):
        assert 1 <= max_entries <= MAX_ENTRIES_LIMIT, max_entries
        assert (weigh is None) == (max_weight == 0) and max_weight >= 0, max_weight
        self._parse = parse
        self.max_entries = max_entries
        self._weigh = weigh
        self.max_weight = max_weight
        self._weight = 0
        self._lock = threading.Lock()
        self._entries: OrderedDict[_Identity, T] = OrderedDict()
        self._pid = os.getpid()
        self.hits = self.misses = 0  # for tests and the benchmark

    def get(self, path: str) -> T:
        stat = os.stat(path)  # FileNotFoundError: gone (deleted by retention or vacuum)
        key = (path, stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
        with self._lock:
            if self._pid != os.getpid():
                self._entries.clear()
                self._weight = 0
                self._pid = os.getpid()
            if key in self._entries:
                self._entries.move_to_end(key)
                self.hits += 1
                return self._entries[key]
        value = self._parse(path)
        weight = 0 if self._weigh is None else self._weigh(value)
        with self._lock:
            self.misses += 1
            if weight > self.max_weight:
                return value  # more than the whole budget: answered, not kept
            if key not in self._entries:
                self._entries[key] = value
                self._weight += weight
            while len(self._entries) > self.max_entries or self._weight > self.max_weight:
                _, dropped = self._entries.popitem(last=False)
                self._weight -= 0 if self._weigh is None else self._weigh(dropped)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._weight = 0

    def __len__(self) -> int:
        return len(self._entries)

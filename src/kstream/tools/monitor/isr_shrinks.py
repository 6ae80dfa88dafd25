"""ISR shrinks, derived from the sampler's ``isr_size`` samples as they are taken.

Kafka's brokers count ISR shrinks as they happen (``IsrShrinksPerSec``). kstream
has no broker to notice them; the sampler reads each partition's ``isr_size``
(in-sync replicas on online log dirs) every round. A shrink is a round whose
``isr_size`` of a partition is lower than the previous round's.
:class:`IsrShrinkTracker` is fed each round's sizes (:meth:`~IsrShrinkTracker.observe`
returns the partitions that shrank) and keeps the shrinks of the last
:data:`WINDOW_MS` in memory, so the overview page counts them without reading
the history (a scan of an hour of ``isr_size`` rows is 360,000 rows for 1,000
partitions at the default 10 s interval: far over a page's budget).

What it can miss: a shrink and its re-expansion between two rounds, and anything
while no sampler ran: the window starts at the tracker's first round
(:attr:`IsrShrinks.since_ms`). The sampler also writes a per-round
``isr_shrinks`` count to ``__kstream_metrics``, so a chart has the history.

Bounds: at most :data:`MAX_EVENTS` shrinks are kept (the oldest dropped first).
Thread-safe: the sampler's thread observes, pages read (one lock).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

WINDOW_MS = 3600_000
MAX_EVENTS = 100_000

Key = tuple[str, int]


@dataclass(frozen=True)
class IsrShrinks:
    """Shrinks per (topic, partition) (those with at least one) between ``since_ms`` and
    ``now_ms``; ``since_ms`` is None when no round was observed yet."""

    by_partition: dict[Key, int]
    since_ms: int | None
    now_ms: int

    @property
    def total(self) -> int:
        return sum(self.by_partition.values())


class IsrShrinkTracker:
    """Counts ISR shrinks round by round; see the module docstring."""

    def __init__(self, window_ms: int = WINDOW_MS, max_events: int = MAX_EVENTS):
        assert window_ms > 0 and max_events > 0, (window_ms, max_events)
        self.window_ms = window_ms
        self._previous: dict[Key, int] = {}
        self._events: deque[tuple[int, Key]] = deque(maxlen=max_events)
        self._first_ms: int | None = None
        self._lock = threading.Lock()

    def observe(self, now_ms: int, sizes: Mapping[Key, int]) -> list[Key]:
        """One round's ISR sizes; returns the partitions whose ISR is smaller than in the
        previous round (a partition new this round, or deleted, is no shrink)."""
        shrunk = [key for key, size in sizes.items() if size < self._previous.get(key, size)]
        with self._lock:
            if self._first_ms is None:
                self._first_ms = now_ms
            self._previous = dict(sizes)
            self._events.extend((now_ms, key) for key in shrunk)
            self._prune(now_ms)
        return shrunk

    def shrinks(self, now_ms: int) -> IsrShrinks:
        """The shrinks of the last :attr:`window_ms` before ``now_ms``."""
        with self._lock:
            self._prune(now_ms)
            counts: dict[Key, int] = {}
            for _, key in self._events:
                counts[key] = counts.get(key, 0) + 1
            since = None if self._first_ms is None else max(self._first_ms, now_ms - self.window_ms)
        return IsrShrinks(counts, since, now_ms)

    def _prune(self, now_ms: int) -> None:
        while self._events and self._events[0][0] < now_ms - self.window_ms:
            self._events.popleft()

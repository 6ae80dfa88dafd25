"""The log cleaner's I/O throttle (Kafka's ``log.cleaner.io.max.bytes.per.second``).

A clean counts every byte it reads (the plan's passes over the leader, each replica's
build) and writes (the cleaned segments) and, after each frame, sleeps as long as it
takes for the bytes so far to be at most ``limit`` per second since the clean began
(a token bucket whose bucket is empty when the clean starts: no burst). The caller
throttles only where it holds no partition lock (planning and building); the swap,
under the lock, is never throttled, so writers never wait for a sleep.

The limit is per clean (one process cleaning one partition); two processes cleaning
two partitions at once each get the whole limit (Kafka's is per broker, shared by its
cleaner threads).
"""

from __future__ import annotations

import time
from collections.abc import Callable

UNLIMITED = 1.7976931348623157e308
"""Kafka's default (Double.MaxValue): no throttle."""


class IoThrottle:
    """Hold a clean's bytes read + written to ``limit`` per second (see the module).
    ``clock`` and ``sleep`` are injectable (tests); a limit of :data:`UNLIMITED` never sleeps."""

    def __init__(self, limit: float, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if not limit > 0:
            raise ValueError(f"the cleaner's I/O limit must be above 0 bytes/s, got {limit}")
        self.limit = limit
        self.unlimited = limit >= UNLIMITED
        self._clock = clock
        self._sleep = sleep
        self._started = clock()
        self.bytes = 0
        self.slept = 0.0

    def spent(self, nbytes: int) -> None:
        """Count ``nbytes`` read or written; sleep until they fit under the limit."""
        self.bytes += nbytes
        if self.unlimited:
            return
        due = self._started + self.bytes / self.limit
        wait = due - self._clock()
        if wait > 0:
            self.slept += wait
            self._sleep(wait)


"""The console's live tails: how many may be open, and the threads they poll on.

A live tail (``GET /c/C/topics/T/tail``) holds a consumer for up to an hour and
polls it on a thread every 0.5 s. Unbounded, 300 open tails filled asyncio's
default thread pool, and a new tail (or anything else using that pool) waited
25 s for a thread. :class:`TailSlots` caps the tails open at once on the console
(``tail.max``) and per client address (``tail.max.per.client``): a tail past a
cap is refused with :class:`TooManyTailsError` (HTTP 429) before it opens
anything. The tails poll on an executor of their own with one thread per slot,
so a tail never waits for a thread and never takes one from the rest of the
console.

A client is the request's remote address: behind a proxy every browser is the
proxy, so there the per-client cap acts as a second console-wide cap.

Thread safety: :meth:`TailSlots.acquire` and :meth:`TailSlot.release` take a lock
(a slot is given back from the event loop, or from a finalizer on any thread).
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
from collections import Counter

from kstream.errors import KStreamError
from kstream.web.limits import ConsoleLimits


class TooManyTailsError(KStreamError):
    """A live tail refused because the console or its client has as many open as allowed."""


class TailSlot:
    """One open tail's place; :meth:`release` gives it back (once, however often called)."""

    __slots__ = ("_released", "_slots", "client")

    def __init__(self, slots: TailSlots, client: str):
        self._slots, self.client, self._released = slots, client, False

    def release(self) -> bool:
        """Give the slot back; True if this call did (False: it was already given back)."""
        return self._slots._give_back(self)


class TailSlots:
    """The live tails open on one console, by client, within its :class:`ConsoleLimits`."""

    def __init__(self, limits: ConsoleLimits):
        self.limits = limits
        self._lock = threading.Lock()
        self._by_client: Counter[str] = Counter()
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._pid = os.getpid()

    @property
    def open(self) -> int:
        """Tails holding a slot now."""
        with self._lock:
            return sum(self._by_client.values())

    def acquire(self, client: str) -> TailSlot:
        """A slot for a new tail of ``client``, or TooManyTailsError saying which cap and how to
        raise it."""
        with self._lock:
            total = sum(self._by_client.values())
            if total >= self.limits.tail_max:
                raise TooManyTailsError(
                    f"this console already serves {total} live tails, its most (--max-tails "
                    f"{self.limits.tail_max}); close a tail (a tab showing messages) or start the "
                    "console with a larger --max-tails")
            if self._by_client[client] >= self.limits.tail_max_per_client:
                raise TooManyTailsError(
                    f"client {client} already has {self._by_client[client]} live tails open, the most one "
                    f"client may (--max-tails-per-client {self.limits.tail_max_per_client}); close one "
                    "(another tab showing messages) or start the console with a larger --max-tails-per-client")
            self._by_client[client] += 1
            return TailSlot(self, client)

    def executor(self) -> concurrent.futures.Executor:
        """The tails' thread pool: one thread per slot, so an open tail always has one. Made on
        first use, and again in a forked child (threads do not survive a fork)."""
        with self._lock:
            if self._executor is None or self._pid != os.getpid():
                self._executor = concurrent.futures.ThreadPoolExecutor(self.limits.tail_max,
                                                                       thread_name_prefix="kstream-tail")
                self._pid = os.getpid()
            return self._executor

    def _give_back(self, slot: TailSlot) -> bool:
        with self._lock:
            if slot._released:  # TailSlot's state, guarded by this lock
                return False
            slot._released = True
            self._by_client[slot.client] -= 1
            if self._by_client[slot.client] <= 0:
                del self._by_client[slot.client]
            return True

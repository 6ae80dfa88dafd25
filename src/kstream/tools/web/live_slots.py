"""The console's live streams: how many of each kind may be open, and the threads they run on.

A live stream holds a request open and works on a thread at every step: a topic tail
(``GET /c/C/topics/T/tail``) holds a consumer for up to an hour and polls it every
0.5 s; a group's live lag (``GET /c/C/groups/G/live``) reads the group's offsets and
the partitions' ends every few seconds. Unbounded, 300 open tails filled asyncio's
default thread pool, and a new tail (or anything else using that pool) waited 25 s
for a thread. :class:`LiveSlots` caps the streams of one kind open at once on the
console and per client address (:class:`LiveKind`: for tails ``tail.max`` /
``tail.max.per.client``, for group streams ``group.live.max`` /
``group.live.max.per.client``): a stream past a cap is refused with
:class:`TooManyLiveStreamsError` (HTTP 429) before it opens anything. Each kind runs
on an executor of its own with one thread per slot, so a stream never waits for a
thread and never takes one from the rest of the console (or from the other kind).

A client is the request's remote address: behind a proxy every browser is the
proxy, so there the per-client cap acts as a second console-wide cap.

Thread safety: :meth:`LiveSlots.acquire` and :meth:`LiveSlot.release` take a lock
(a slot is given back from the event loop, or from a finalizer on any thread).
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
from collections import Counter
from dataclasses import dataclass

from kstream.errors import KStreamError


class TooManyLiveStreamsError(KStreamError):
    """A live stream refused because the console or its client has as many of its kind open
    as allowed."""


@dataclass(frozen=True)
class LiveKind:
    """One kind of live stream: its caps and the words its refusals use."""

    name: str  # "live tails": what the refusals count
    max_open: int
    max_per_client: int
    max_flag: str  # the `kstream console` flags that set the caps
    per_client_flag: str
    close_hint: str  # what the user may close: "a tab showing messages"
    thread_prefix: str


class LiveSlot:
    """One open stream's place; :meth:`release` gives it back (once, however often called)."""

    __slots__ = ("_released", "_slots", "client")

    def __init__(self, slots: LiveSlots, client: str):
        self._slots, self.client, self._released = slots, client, False

    def release(self) -> bool:
        """Give the slot back; True if this call did (False: it was already given back)."""
        return self._slots._give_back(self)


class LiveSlots:
    """The live streams of one :class:`LiveKind` open on one console, by client."""

    def __init__(self, kind: LiveKind):
        self.kind = kind
        self._lock = threading.Lock()
        self._by_client: Counter[str] = Counter()
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._pid = os.getpid()

    @property
    def open(self) -> int:
        """Streams holding a slot now."""
        with self._lock:
            return sum(self._by_client.values())

    def acquire(self, client: str) -> LiveSlot:
        """A slot for a new stream of ``client``, or TooManyLiveStreamsError saying which cap
        and how to raise it."""
        kind = self.kind
        with self._lock:
            total = sum(self._by_client.values())
            if total >= kind.max_open:
                raise TooManyLiveStreamsError(
                    f"this console already serves {total} {kind.name}, its most ({kind.max_flag} "
                    f"{kind.max_open}); close {kind.close_hint} or start the console with a larger "
                    f"{kind.max_flag}")
            if self._by_client[client] >= kind.max_per_client:
                raise TooManyLiveStreamsError(
                    f"client {client} already has {self._by_client[client]} {kind.name} open, the most one "
                    f"client may ({kind.per_client_flag} {kind.max_per_client}); close one (another "
                    f"{kind.close_hint.removeprefix('a ')}) or start the console with a larger "
                    f"{kind.per_client_flag}")
            self._by_client[client] += 1
            return LiveSlot(self, client)

    def executor(self) -> concurrent.futures.Executor:
        """This kind's thread pool: one thread per slot, so an open stream always has one. Made
        on first use, and again in a forked child (threads do not survive a fork)."""
        with self._lock:
            if self._executor is None or self._pid != os.getpid():
                self._executor = concurrent.futures.ThreadPoolExecutor(self.kind.max_open,
                                                                       thread_name_prefix=self.kind.thread_prefix)
                self._pid = os.getpid()
            return self._executor

    def _give_back(self, slot: LiveSlot) -> bool:
        with self._lock:
            if slot._released:  # LiveSlot's state, guarded by this lock
                return False
            slot._released = True
            self._by_client[slot.client] -= 1
            if self._by_client[slot.client] <= 0:
                del self._by_client[slot.client]
            return True

"""The Producer's background sender: sends batches that come due while the application makes
no call (librdkafka's broker thread does this for confluent-kafka).

A batch goes to the log when ``linger.ms`` passed, or (acks=all) when the fsync
of its partition's previous batch finished: a due batch is held while that
fsync runs (see ``Producer._send_expired``). Without this thread only the
application's next produce(), poll() or flush() noticed either, so a record
waited for the next call (at 1,000 records/s, up to a millisecond more; a
last record, until flush()).

One daemon thread per producer, started on the first wake (and started anew in
a forked child, which has none of its parent's threads). It sleeps until the
earliest linger deadline it was told of (:meth:`SendThread.wake_at`) or until
woken (:meth:`SendThread.wake`: an fsync of the producer's pipeline finished),
waking at least every ``MAX_SLEEP_S`` to see whether its producer is still
there. Each pass runs the producer's ``send_pass`` under the producer's lock (the
work poll(0) does: send what is due, settle what is fsynced) and never calls a user
callback: delivery reports stay queued for poll()/flush(), as confluent-kafka
serves them. The thread holds its producer through a weak reference, so a
producer dropped without close() is freed and the thread ends.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable

MAX_SLEEP_S = 1.0  # longest sleep between looks at whether the producer is still there

SendPass = Callable[[], "float | None"]  # one pass; the next deadline (time.time()), None: stop


class SendThread:
    """Wakes a producer's ``send_pass`` at its deadlines and when told to (see the module
    docstring). Thread-safe: :meth:`wake`, :meth:`wake_at` and :meth:`stop` may be called
    from any thread (the fsync threads call :meth:`wake`)."""

    __slots__ = ("__weakref__", "_condition", "_deadline", "_name", "_pid", "_send_pass", "_stopped",
                 "_thread", "_woken")

    def __init__(self, send_pass: weakref.WeakMethod[SendPass], name: str = "kstream-sender"):
        self._send_pass = send_pass
        self._name = name
        self._condition = threading.Condition(threading.Lock())
        self._deadline = float("inf")
        self._woken = False
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._pid = 0

    def wake(self) -> None:
        """Run a pass now (something the pass looks at changed: an fsync finished)."""
        with self._condition:
            self._woken = True
            self._start_locked()
            self._condition.notify()

    def wake_at(self, deadline: float) -> None:
        """Run a pass at ``deadline`` (time.time()) at the latest: a batch comes due then."""
        with self._condition:
            if deadline < self._deadline:
                self._deadline = deadline
                self._start_locked()
                self._condition.notify()

    def stop(self) -> None:
        """End the thread (after its current pass); later wakes do nothing."""
        with self._condition:
            self._stopped = True
            self._condition.notify()

    def _start_locked(self) -> None:
        if self._stopped or (self._thread is not None and self._pid == os.getpid()):
            return
        self._pid = os.getpid()
        self._thread = threading.Thread(target=_run, args=(weakref.ref(self),), name=self._name, daemon=True)
        self._thread.start()

    def _next(self) -> SendPass | None:
        """Sleep until the next pass is due; that pass (None: stop). The deadline and the wake
        are taken here, before the pass: a wake during the pass makes another one."""
        with self._condition:
            while not self._stopped and not self._woken:
                left = self._deadline - time.time()
                if left <= 0:
                    break
                self._condition.wait(min(left, MAX_SLEEP_S))
                if self._send_pass() is None:
                    return None
            if self._stopped:
                return None
            self._woken = False
            self._deadline = float("inf")
        return self._send_pass()

    def _passed(self, deadline: float | None) -> bool:
        """After a pass: remember its next deadline (a wake_at() during the pass may be earlier);
        False when the thread should end."""
        with self._condition:
            if deadline is None:
                self._stopped = True
                return False
            if deadline < self._deadline:
                self._deadline = deadline
            return not self._stopped


def _run(sender_ref: weakref.ref[SendThread]) -> None:
    """The thread's loop; it keeps neither its SendThread nor the producer alive between passes."""
    while True:
        sender = sender_ref()
        if sender is None:
            return
        send_pass = sender._next()
        if send_pass is None:
            return
        deadline = send_pass()
        del send_pass  # (no strong reference to the producer while asleep)
        if not sender._passed(deadline):
            return
        del sender

"""The Producer's delivery reports and its other callbacks (``error_cb``, ``stats_cb``,
``oauth_cb``): queued under the producer's lock, served by poll()/flush() without it.
(stats_cb's document is put together here too, from the producer's topics.)

A batch that was written (or failed) queues one report per record that asked for
one (:meth:`DeliveryReports.queue`): ``on_delivery(err, msg)`` with the record's
offset, or -1 and the batch's error. A failed batch also queues its error for
``error_cb`` (:meth:`DeliveryReports.failed`). :meth:`DeliveryReports.serve` runs
them all in the calling thread, in the order queued, without the producer's
lock (a callback may call produce()); a callback that raises leaves what was not
served yet first in line for the next poll().

Thread safety: ``queue`` and ``failed`` run under the producer's lock; ``serve``
takes it only to swap the queues out.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from kstream.client.producer_batches import DeliveryCallback, OpenBatch, TopicState
from kstream.client.stats import ClientStats, PartitionView
from kstream.errors import KStreamError
from kstream.message import TIMESTAMP_CREATE_TIME, KafkaError, Message, MessageSource

log = logging.getLogger("kstream.client.producer")  # (the name users configure logging by)


class DeliveryReports:
    """A producer's queued delivery reports and errors, and the callbacks that serve them."""

    __slots__ = ("client_id", "error_cb", "errors", "linger_s", "log", "oauth", "pending", "stats")

    def __init__(self, options: Mapping[str, Any], linger_s: float):
        self.log: logging.Logger | logging.LoggerAdapter[Any] = options["logger"] or log
        self.error_cb: Callable[[KafkaError], None] | None = options["error_cb"]
        self.errors: list[KafkaError] = []  # for error_cb, served by poll()/flush()
        self.pending: list[tuple[list[DeliveryCallback], KafkaError | None, list[Any]]] = []
        self.oauth = options["oauth"]
        self.stats = (ClientStats("producer", options["client.id"], options["statistics.interval.ms"],
                                  options["stats_cb"])
                      if options["stats_cb"] is not None and options["statistics.interval.ms"] > 0 else None)
        self.client_id = options["client.id"]
        self.linger_s = linger_s

    def waiting(self) -> int:
        """Reports queued and not served yet."""
        return sum(len(callbacks) for callbacks, _, _ in self.pending)

    def failed(self, err: KStreamError) -> KafkaError:
        """A batch's error as its delivery reports carry it, queued for ``error_cb`` too."""
        error = KafkaError(error_code(err), str(err), err)
        self.errors.append(error)
        return error

    def queue(self, topic: str, partition: int, batch: OpenBatch, offsets: list[tuple[int, int]],
              timestamps_ms: np.ndarray, error: KafkaError | None) -> None:
        """Delivery reports for the records that asked for one, served by the next poll().
        ``offsets``: (first record index, base offset) of each frame the batch went out in."""
        assert batch.callbacks is not None
        keys, headers, values = batch.keys, batch.headers, batch.values
        starts = [start for start, _ in offsets]
        last = len(offsets) - 1
        callbacks, records = [], []
        # librdkafka's latency: produce() to acknowledgement, here from when the record's batch
        # was opened (at most linger.ms before the record itself was produced).
        source = _DeliverySource(topic, partition, error, time.time() - (batch.deadline - self.linger_s))
        # Only the records that asked for a report are looked at (often one in thousands): the
        # frame holding record i is the last one starting at or before it (-1: not delivered).
        for i, cb in batch.callbacks.items():
            offset = -1
            if error is None and last >= 0:
                frame = last if i >= starts[last] else bisect.bisect_right(starts, i) - 1
                if frame >= 0:
                    start, base = offsets[frame]
                    offset = base + i - start
            callbacks.append(cb)
            records.append(Message((source, offset, None if keys is None else keys[i], values[i],
                                    None if headers is None else headers[i], int(timestamps_ms[i]))))
        self.pending.append((callbacks, error, records))

    def serve(self, lock: threading.RLock, stats_document: Callable[[], dict[str, Any]]) -> int:
        """Call error_cb, stats_cb and the delivery callbacks queued so far, in this thread and
        without ``lock`` (a callback may produce; another thread's poll() serves later ones);
        the number of delivery callbacks called."""
        if self.oauth is not None:
            self.oauth.refresh_if_due(self.log, self.error_cb)
        with lock:
            errors, self.errors = self.errors, []
            reports, self.pending = self.pending, []
            stats = None if self.stats is None else self.stats.render_if_due(stats_document)
        served = 0
        try:
            while errors:
                failure = errors.pop(0)
                self.log.warning("producer %s: %s", self.client_id, failure.str())
                if self.error_cb is not None:
                    self.error_cb(failure)
            if stats is not None:
                assert self.stats is not None
                self.stats.callback(stats)
            while reports:
                callbacks, error, records = reports.pop(0)
                for cb, record in zip(callbacks, records, strict=False):
                    assert cb is not None
                    cb(error, record)
                    served += 1
        except BaseException:
            with lock:  # a callback raised: what was not served yet is first in line again
                self.errors[:0] = errors
                self.pending[:0] = reports
            raise
        return served

    def stats_document(self, topics: Iterable[TopicState], waiting: int) -> dict[str, Any]:
        """stats_cb's JSON document (librdkafka's shape) of the partitions this producer sent
        to; ``waiting``: the producer's len()."""
        assert self.stats is not None
        by_name = {state.info.name: state for state in topics}
        views = []
        for (topic, partition) in sorted(self.stats.tx):
            state = by_name.get(topic)
            handle = state.partitions[partition] if state is not None else None
            batch = state.batches[partition] if state is not None else None
            view = PartitionView(topic, partition, msgq_cnt=len(batch.values) if batch else 0)
            if handle is not None:
                view.leader = handle.info.leader
                view.hi_offset = handle.high_watermark() or 0
            views.append(view)
        open_batches = [b for s in by_name.values() for b in s.batches if b is not None]
        return self.stats.document(views, msg_cnt=waiting, msg_size=sum(b.size for b in open_batches))


class _DeliverySource(MessageSource):
    """What the delivery reports of one batch share, with librdkafka's latency (seconds)."""

    __slots__ = ("latency",)

    def __init__(self, topic: str, partition: int, error: KafkaError | None, latency: float):
        super().__init__(topic, partition, TIMESTAMP_CREATE_TIME, error)
        self.latency = latency


def error_code(err: KStreamError) -> int:
    """The code a delivery report carries: the error's own (MSG_SIZE_TOO_LARGE,
    UNKNOWN_TOPIC_OR_PART for a partition deleted under the producer, ...), UNKNOWN for a
    plain KStreamError (``_FAIL``), as before codes were carried."""
    code = err.error.code()
    return KafkaError.UNKNOWN if code == KafkaError._FAIL else code

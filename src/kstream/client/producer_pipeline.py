"""The Producer's acks=all pipeline: batches written to their partition whose replicas' fsyncs
run on background threads while produce() goes on.

:meth:`AckPipeline.start` submits the fsync of a batch just written (``defer_fsync``)
on each of its partition's in-sync replicas, up to
``max.in.flight.requests.per.connection`` batches at once. When a batch's last
fsync returns, its fsync thread moves the high watermark past it if at least
``min.insync.replicas`` replicas fsynced it (readers see it without waiting for
the producer). :meth:`AckPipeline.settle` acknowledges batches oldest first, on
the producer's thread: a replica whose fsync failed takes its log dir offline;
too few fsynced replicas make the batch's error NotEnoughReplicas, and an
idempotent batch is then sent again (the same frames, fsynced this time). Its
delivery reports are queued in batch order.

Thread safety: every method runs under the producer's lock (on the application's
threads or the producer's background sender); only the fsyncs, the
high-watermark publication in :func:`_publish_when_synced` and
:meth:`FinishedSyncs.add` (which may wake the background sender) run on the
pool's threads.
"""

from __future__ import annotations

import functools
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np

from kstream.client.delivery_reports import DeliveryReports
from kstream.client.producer_batches import OpenBatch
from kstream.client.producer_sender import BatchSender
from kstream.errors import KStreamError
from kstream.log.cluster.partition import Partition
from kstream.log.storage.partition_log import EncodedBatch
from kstream.log.storage.thread_pool import LazyThreadPool
from kstream.message import KafkaError

SYNC_THREADS = 4  # a producer's background acks=all fsyncs (replicas x batches in flight share them)


@dataclass(slots=True)
class InFlight:
    """An acks=all batch written to its partition, its replicas' fsyncs still running."""

    handle: Partition
    in_sync: list[int]
    syncs: list[Future[bool]]
    topic: str
    partition: int
    batch: OpenBatch
    offsets: list[tuple[int, int]]
    timestamps_ms: np.ndarray
    sent: list[EncodedBatch]  # the frames as written (with their sequences), for a retry

    def done(self) -> bool:
        return all(sync.done() for sync in self.syncs)


class FinishedSyncs:
    """How many of a pipeline's fsyncs have finished: a count that moves whenever one does, so
    the producer can tell that nothing :meth:`AckPipeline.must_hold` looks at has changed
    without looking again (a batch held on every produce() call would otherwise ask, per record).
    Bumped on the fsync threads; holds no reference back to the pipeline (no cycle)."""

    __slots__ = ("_lock", "count", "wake")

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()
        # Called after each count while the producer holds a batch (its background sender).
        self.wake: Callable[[], None] | None = None

    def add(self, _: Future[bool]) -> None:
        with self._lock:
            self.count += 1
        wake = self.wake
        if wake is not None:
            wake()


class AckPipeline:
    """A producer's acks=all batches in flight, oldest first."""

    __slots__ = ("__weakref__", "_max_in_flight", "_reports", "_sender", "_syncers", "finished", "in_flight")

    def __init__(self, max_in_flight: int, sender: BatchSender, reports: DeliveryReports):
        self.in_flight: deque[InFlight] = deque()
        self.finished = FinishedSyncs()
        self._max_in_flight = max_in_flight
        self._sender = sender
        self._reports = reports
        self._syncers = LazyThreadPool(SYNC_THREADS, "kstream-ack")

    def records(self) -> int:
        """Records in batches not acknowledged yet."""
        return sum(len(f.batch.values) for f in self.in_flight)

    def start(self, handle: Partition, topic: str, partition: int, batch: OpenBatch,
              offsets: list[tuple[int, int]], timestamps_ms: np.ndarray, sent: list[EncodedBatch]) -> None:
        """Start fsyncing the batch just written on its in-sync replicas; its reports (or its
        NotEnoughReplicas error) come when :meth:`settle` finds the fsyncs done."""
        in_sync = list(handle.info.isr)
        syncs = [self._syncers.get().submit(handle.sync_replica, replica) for replica in in_sync]
        start, base = offsets[-1]
        _publish_when_synced(handle, syncs, base + len(batch.values) - start)
        for sync in syncs:
            sync.add_done_callback(self.finished.add)
        self.in_flight.append(InFlight(handle, in_sync, syncs, topic, partition, batch, offsets,
                                       timestamps_ms, sent))
        if len(self.in_flight) > self._max_in_flight:
            self.settle(wait=True, keep=self._max_in_flight)

    def must_hold(self, topic: str, partition: int) -> bool:
        """Whether a due batch of ``topic``/``partition`` should wait and collect more records:
        while that partition still has a batch being fsynced, or while ``max.in.flight``
        batches are (after settling the batches already synced). Once True, it stays True until
        :attr:`finished` moves (starting more batches only adds to what is in flight)."""
        if not self.in_flight:
            return False
        self.settle(wait=False)
        if len(self.in_flight) >= self._max_in_flight:
            return True
        return any(f.partition == partition and f.topic == topic and not f.done() for f in self.in_flight)

    def settle(self, wait: bool, keep: int = 0) -> None:
        """Acknowledge in-flight batches, oldest first, whose fsyncs finished (``wait``: wait
        for them, leaving at most ``keep`` in flight). A replica whose fsync failed takes its
        log dir offline; too few fsynced replicas make the batch's error NotEnoughReplicas."""
        while len(self.in_flight) > keep:
            head = self.in_flight[0]
            if not wait and not head.done():
                return
            self.in_flight.popleft()
            synced = [sync.result() for sync in head.syncs]
            error: KafkaError | None = None
            try:
                try:
                    head.handle.require_synced(head.handle.settle_syncs(head.in_sync, synced),
                                               f"the batch at offset {head.offsets[0][1]}")
                    # Visible before it is reported (the fsync threads may not have published yet).
                    start, base = head.offsets[-1]
                    head.handle.publish_high_watermark(base + len(head.batch.values) - start)
                except KStreamError as err:
                    if not head.sent:
                        raise
                    self._resend(head, err)
            except KStreamError as err:
                if head.batch.callbacks is None:
                    raise
                error = self._reports.failed(err)
            if head.batch.callbacks is not None:
                self._reports.queue(head.topic, head.partition, head.batch, head.offsets,
                                    head.timestamps_ms, error)

    def _resend(self, head: InFlight, error: KStreamError) -> None:
        """Retry an idempotent batch written but not acknowledged: the same frames, fsynced
        this time; the log keeps the first copy and the reports get its offsets."""
        bounds = [start for start, _ in head.offsets]
        sender = self._sender
        for i, encoded in enumerate(head.sent):
            base = sender.retrying(functools.partial(sender.resend_one, head.handle, encoded),
                                   first_error=error if i == 0 else None)
            head.offsets[i] = (bounds[i], base)

    def shutdown(self) -> None:
        """Stop the fsync threads (after the last batch was settled)."""
        self._syncers.shutdown(wait=True)


def _publish_when_synced(handle: Partition, syncs: list[Future[bool]], end: int) -> None:
    """Once the last fsync of a batch returns, on that fsync's thread: if enough replicas
    fsynced it (min.insync.replicas), move the high watermark past it, so readers see it
    without waiting for this producer's next poll(). Errors are left to :meth:`AckPipeline.settle`."""
    remaining = [len(syncs)]
    guard = threading.Lock()

    def done(_: Future[bool]) -> None:
        with guard:
            remaining[0] -= 1
            if remaining[0]:
                return
        synced = sum(1 for sync in syncs if not sync.cancelled() and sync.exception() is None and sync.result())
        if synced >= handle.config.min_insync_replicas:
            try:
                handle.publish_high_watermark(end)
            except (KStreamError, OSError):
                pass  # the batch is settled (and its error reported) on the producer's thread

    for sync in syncs:
        sync.add_done_callback(done)

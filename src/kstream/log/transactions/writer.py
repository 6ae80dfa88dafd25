"""One transactional producer's view of its open transaction: fencing and markers.

Used by the Producer. Under each partition's lock, before a transactional frame
is appended, it checks that the producer's transaction is still open at its
epoch and within ``transaction.timeout.ms`` (a zombie gets FencedError and
writes nothing), and records the partitions the transaction writes. Ending a
transaction decides it first (PrepareCommit/PrepareAbort, see
:mod:`kstream.log.transactions.store`), then writes a COMMIT or ABORT control frame to
each partition and completes it. Markers are always fsynced before the
transaction counts as ended.

A commit that carries consumer group offsets (``send_offsets_to_transaction``,
:mod:`kstream.log.transactions.pending_offsets`) applies them to the group offsets table after
its markers and before it is Complete (:func:`finish`), idempotently: whoever
finishes a decided transaction (the producer, a new instance, the expiry, a
writer of the group's offsets) finishes its offsets too. The group offsets table
lives in the groups layer, above this one: groups hand their applier in
(:func:`set_offsets_applier`, done when :mod:`kstream.groups.transactional_offsets`
is imported, as every client and the Spark sink do); this layer never imports it.

Markers are written through a guard checked under the partition lock: only
while the partition's open row exists and the decision still stands, so a
second party finishing the same decision (an expiry, a new instance) adds no
second marker and never ends a later transaction of the same producer id.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kstream.errors import KStreamError
from kstream.log.cluster.partition import flush_acked_together
from kstream.log.storage import format as fmt
from kstream.log.storage.faults import crash_point
from kstream.log.storage.partition_log import EncodedBatch
from kstream.log.storage.records import PayloadCodec, batch_from_records
from kstream.log.transactions import pending_offsets
from kstream.log.transactions.store import MAX_EPOCH, PREPARE_COMMIT, TransactionState, TransactionStore

if TYPE_CHECKING:
    from kstream.log.cluster.cluster import Cluster
    from kstream.log.cluster.partition import Partition

COMMIT_MARKER = fmt.COMMIT_MARKER  # the layout is format.py's
ABORT_MARKER = fmt.ABORT_MARKER

OffsetsApplier = Callable[["Cluster", TransactionStore, TransactionState, Any], None]
"""``(cluster, store, decided, groups)``: write a decided commit's pending group offsets to the
group offsets table, once per group (``groups``: the caller's ConsumerGroups, or None)."""

_offsets_applier: list[OffsetsApplier] = []  # at most one: the groups layer's


def set_offsets_applier(applier: OffsetsApplier) -> None:
    """Hand in the groups layer's applier of a commit's offsets (idempotent: the last one wins)."""
    _offsets_applier[:] = [applier]


class TxnWriter:
    """The open transaction of one transactional id in this process (an
    :class:`kstream.log.cluster.partition.AppendGuard`). Not thread-safe."""

    def __init__(self, store: TransactionStore, transactional_id: str, producer_id: int, epoch: int):
        self.store = store
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.epoch = epoch
        self.partitions: set[tuple[str, int]] = set()
        self.groups: Any = None  # the producer's ConsumerGroups once it sent offsets (reused to apply them)

    def before_append_locked(self, partition: Partition) -> None:
        """Fence a stale or timed-out producer; join the partition before the transaction's first frame there."""
        self.store.check_writable(self.transactional_id, self.epoch)
        key = (partition.topic, partition.partition)
        if key not in self.partitions:
            self.store.add_partition(self.transactional_id, self.epoch, self.producer_id, partition.topic,
                                     partition.partition, partition.log_end_offset_locked())
            self.partitions.add(key)

    def end(self, cluster: Cluster, commit: bool, check: Callable[[sqlite3.Connection], None] | None = None
            ) -> None:
        """Decide (FencedError if fenced or timed out; a commit first runs ``check`` in the
        deciding SQLite transaction), write the markers, complete."""
        decided = self.store.prepare(self.transactional_id, self.epoch, commit, check)
        crash_point("txn.prepared")
        if not finish(cluster, self.store, decided, self.groups):
            self.store.check_epoch(self.transactional_id, self.epoch)  # someone else moved it on
        self.partitions.clear()


def finish(cluster: Cluster, store: TransactionStore, decided: TransactionState, groups: Any = None) -> bool:
    """Apply a decided (Prepare) transaction: markers on its partitions, a commit's group
    offsets (through the applier the groups layer handed in, with ``groups``, a
    :class:`kstream.groups.ConsumerGroups` of the cluster, if the caller has one), then
    Complete. False when the decision no longer stands (someone else finished or fenced it)."""
    commit = decided.state == PREPARE_COMMIT
    write_markers(cluster, store, sorted(decided.partitions), decided.producer_id, decided.epoch,
                  commit, lambda: store.decision_stands(decided))
    crash_point("txn.markers-written")
    if commit and pending_offsets.has_pending(store.metadata, decided.transactional_id):
        if not _offsets_applier:
            # Never Complete without the offsets: the commit stays decided, for a finisher that has them.
            raise KStreamError(
                f"the transaction of {decided.transactional_id!r} carries consumer group offsets and this "
                "process has no applier for them: import kstream.groups before finishing transactions")
        _offsets_applier[0](cluster, store, decided, groups)
        crash_point("txn.offsets-applied")
    return store.complete(decided)


class _NothingToEndError(Exception):
    """The guard found nothing to end on this partition (raised before anything is written)."""


class _MarkerGuard:
    def __init__(self, store: TransactionStore, producer_id: int, still_decided: Callable[[], bool]):
        self.store = store
        self.producer_id = producer_id
        self.still_decided = still_decided

    def before_append_locked(self, partition: Partition) -> None:
        if not (self.store.is_open(partition.topic, partition.partition, self.producer_id)
                and self.still_decided()):
            raise _NothingToEndError


def write_markers(cluster: Cluster, store: TransactionStore, partitions: list[tuple[str, int]],
                  producer_id: int, epoch: int, commit: bool, still_decided: Callable[[], bool]) -> None:
    """A COMMIT/ABORT control frame on each partition the producer id still holds open (checked
    with ``still_decided`` under the partition lock), fsynced, then the partition is released."""
    marker = batch_from_records([COMMIT_MARKER if commit else ABORT_MARKER], None, None, None)
    frame = EncodedBatch(PayloadCodec().encode(marker), 1, 0, 0, fmt.CONTROL | fmt.TRANSACTIONAL,
                         producer_id, min(epoch, MAX_EPOCH))  # the same bytes on every partition
    guard = _MarkerGuard(store, producer_id, still_decided)
    for topic, number in partitions:
        handle = cluster.partition(topic, number)
        try:
            result = handle.append(frame, acks="all", txn=guard)
        except _NothingToEndError:
            continue
        finally:
            handle.close()
        store.end_partition(topic, number, producer_id, result.base_offset, aborted=not commit)


def write_markers_together(cluster: Cluster, store: TransactionStore,
                           writes: list[tuple[int, list[tuple[str, int]]]], epoch: int, commit: bool,
                           still_decided: Callable[[], bool],
                           also: Callable[[sqlite3.Connection], None] | None = None) -> None:
    """:func:`write_markers` for several producer ids (``writes``: producer id, its partitions)
    decided together, at the cost of about one: every marker is appended under its partition's
    lock and guard with its fsync deferred, then all the partitions are fsynced in parallel
    (:func:`~kstream.log.cluster.partition.flush_acked_together`), then every open row is
    ended, and ``also`` runs, in one SQLite transaction. Nothing is released before its marker
    is fsynced. A crash before that transaction leaves the rows open and the decision standing:
    whoever finishes it writes the markers again, as after a crash in :func:`write_markers`
    between a marker's fsync and its row's end (a marker of a transaction already ended is
    ignored by readers)."""
    marker = batch_from_records([COMMIT_MARKER if commit else ABORT_MARKER], None, None, None)
    handles: dict[tuple[str, int], Partition] = {}
    ends: list[tuple[str, int, int, int]] = []
    try:
        for producer_id, partitions in writes:
            frame = EncodedBatch(PayloadCodec().encode(marker), 1, 0, 0, fmt.CONTROL | fmt.TRANSACTIONAL,
                                 producer_id, min(epoch, MAX_EPOCH))
            guard = _MarkerGuard(store, producer_id, still_decided)
            for topic, number in sorted(partitions):
                handle = handles.get((topic, number))
                if handle is None:
                    handle = handles[(topic, number)] = cluster.partition(topic, number)
                try:
                    result = handle.append(frame, acks="all", txn=guard, defer_fsync=True)
                except _NothingToEndError:
                    continue
                ends.append((topic, number, producer_id, result.base_offset))
        flush_acked_together(list(handles.values()))
    finally:
        for handle in handles.values():
            handle.close()
    crash_point("sink.markers-fsynced")
    store.end_partitions(ends, aborted=not commit, also=also)


def abort_orphans(cluster: Cluster, store: TransactionStore, producer_ids: set[int] | None = None) -> int:
    """ABORT markers for open rows nobody holds (all, or those of ``producer_ids``)."""
    orphans = [o for o in store.orphans() if producer_ids is None or o[2] in producer_ids]
    for topic, partition, producer_id in orphans:
        write_markers(cluster, store, [(topic, partition)], producer_id, 0, False,
                      functools.partial(store.is_orphan, topic, partition, producer_id))
    return len(orphans)

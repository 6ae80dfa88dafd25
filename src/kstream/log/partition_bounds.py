"""A partition's bounds as every reader shows them: log start, LEO, HW, LSO and its holder.

The engine's face for the figures of one partition (docs/DESIGN.md, "Layout and
layers"): the fetcher, the Spark reader's planning, the CLI, the AdminClient,
groups, the monitor and the console all ask :func:`bounds` and none of them puts
the figures together itself, so a rule about them lives here once:

* **the log start and the LEO** are the leader replica's (:class:`LogReader`);
* **the high watermark** is the one published in the partition's lock file. That
  file is never fsynced: after a power cut it may be missing, zeroed or unreadable.
  Then the HW is rebuilt from the in-sync replicas' durable log ends
  (:meth:`kstream.log.cluster.partition.Partition.high_watermark`, the rule of
  docs/FORMAT.md) rather than shown as 0 or left out: a partition full of records
  never reads as empty. An empty log needs no rebuild (its HW is 0). The HW is never
  past the LEO;
* **the last stable offset** is what a read_committed reader reads up to: the
  leader's transaction index below the HW with the outcomes already fixed applied
  (:func:`kstream.log.transactions.view.visible_state`), and **the open
  transaction holding it** is named by its producer id (None: nothing holds it).

Readers never write (docs/TRANSACTIONS.md): :func:`bounds` creates and rewrites no
file (the lock file included) and writes nothing to SQLite.
"""

from __future__ import annotations

from dataclasses import dataclass

from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.metadata import TopicInfo
from kstream.log.cluster.partition import Partition
from kstream.log.storage.log_reader import LogReader
from kstream.log.transactions.store import TransactionStore
from kstream.log.transactions.view import visible_state


@dataclass(frozen=True)
class PartitionBounds:
    """One partition's offsets as a reader sees them now (``last_stable_offset <=
    high_watermark <= log_end_offset``).

    ``open_transaction`` is the producer id of the open transaction whose first offset
    is the LSO (None when no transaction holds it: the LSO is the HW)."""

    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    last_stable_offset: int
    open_transaction: int | None = None


def bounds(cluster: Cluster, topic: str | TopicInfo, partition: int, *,
           handle: Partition | None = None, store: TransactionStore | None = None,
           log_offsets: tuple[int, int] | None = None) -> PartitionBounds:
    """The bounds of ``topic``-``partition`` (of its leader replica) in the open ``cluster``.

    ``handle``: an open handle of that partition the caller keeps (a consumer's), whose HW
    check is then reused; else one is opened and closed here. ``store``: the cluster's
    transaction store (:meth:`TransactionStore.for_cluster`), when the caller has one.
    ``log_offsets``: (log start, log end) of the leader replica as the caller just read them
    from its files (the monitor's memoized reads of many partitions), else read here.
    Writes nothing. TopicNotFoundError / PartitionNotFoundError as
    :meth:`Cluster.partition`."""
    own = handle is None
    if handle is None:
        handle = cluster.partition(topic, partition)
    assert handle.partition == partition and handle.topic == (topic if isinstance(topic, str) else topic.name), \
        (handle.topic, handle.partition, topic, partition)
    try:
        name = handle.topic
        if log_offsets is None:
            reader = LogReader(handle.leader_dir, check_crcs=False)
            try:
                log_offsets = reader.log_start_offset(), reader.log_end_offset()
            finally:
                reader.close()
        start, end = log_offsets
        # The lost-HW rule: the handle rebuilds a missing or unreadable published HW from the
        # in-sync replicas' durable ends; an empty log has HW 0 and needs no look at all.
        high_watermark = 0 if end == 0 else min(handle.high_watermark() or 0, end)
        if store is None:
            store = TransactionStore.for_cluster(cluster)
        state = visible_state(handle.leader_dir, high_watermark, store, name, handle.partition)
        lso = state.last_stable_offset
        holder = None
        if lso < high_watermark:  # an open transaction holds it: the one that began there
            holder = min(pid for pid, first in state.open.items() if first == lso)
        return PartitionBounds(name, handle.partition, start, end, high_watermark, lso, holder)
    finally:
        if own:
            handle.close()

"""A Consumer's assignment: the partitions it reads, their fetch positions, pauses and stored offsets.

:class:`Assignment` owns one :class:`~kstream.client.fetcher.PartitionFetch` per
assigned partition (its handle, reader and fetch position), in assignment
order, with the round-robin cursor the read loop turns, the paused
partitions, and the offsets ``store_offsets()`` stored. It turns a requested
offset into a position: ``OFFSET_BEGINNING`` is the log start offset (a
tiered topic's: the lake's first offset when the lake holds records below it),
``OFFSET_END`` the visible end (the HW, or the LSO under read_committed), an
offset >= 0 itself, and anything else takes ``auto.offset.reset`` (with
``error``: no position, and a pending out-of-range error the read loop
reports once).

It knows nothing of the records a Consumer is handing out one by one: the
Consumer, which owns that cursor, settles it before it replaces, removes or
seeks a partition here. Not thread-safe: it lives in its Consumer's thread.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

from kstream.client.fetcher import PartitionFetch
from kstream.errors import OffsetOutOfRangeError, PartitionNotAssignedError
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.metadata import TopicInfo
from kstream.log.cluster.partition import Partition
from kstream.log.storage.change_notifier import ChangeNotifier
from kstream.log.storage.output import output_schema
from kstream.log.transactions.isolation import Isolation
from kstream.log.transactions.store import TransactionStore
from kstream.message import OFFSET_BEGINNING, OFFSET_END, OFFSET_INVALID, TopicPartition
from kstream.tiering.lake_reader import LakeFetch, partition_lake

PartitionKey = tuple[str, int]


class Assignment:
    """The assigned partitions of one Consumer. See the module docstring.

    ``partitions`` maps (topic, partition) to its fetch state; ``order`` is the assignment
    order (the read loop's round robin turns ``next`` over it); ``paused`` and ``stored``
    (store_offsets()) are kept per partition and dropped with it.
    """

    def __init__(self, cluster: Cluster, options: Mapping[str, Any], notifier: ChangeNotifier):
        self._cluster = cluster
        self._isolation_level = options["isolation.level"]
        self._check_crcs = options["check.crcs"]
        self._reset = options["auto.offset.reset"]
        self._notifier = notifier
        self._transaction_store: TransactionStore | None = None
        self.partitions: dict[PartitionKey, PartitionFetch] = {}
        self.order: list[PartitionKey] = []
        self.next = 0
        self.paused: set[PartitionKey] = set()
        self.stored: dict[PartitionKey, TopicPartition] = {}

    def topic_partitions(self) -> list[TopicPartition]:
        """The assigned partitions, in assignment order (offsets unset)."""
        return [TopicPartition(t, p) for t, p in self.order]

    def get(self, tp: TopicPartition) -> PartitionFetch:
        """The partition's fetch state; PartitionNotAssignedError if it is not assigned."""
        assigned = self.partitions.get((tp.topic, tp.partition))
        if assigned is None:
            raise PartitionNotAssignedError(f"{tp.topic}-{tp.partition} is not assigned to this "
                                            "consumer; assign() it first")
        return assigned

    def add(self, partitions: list[TopicPartition], committed: Mapping[PartitionKey, int]
            ) -> list[PartitionFetch]:
        """Assign ``partitions`` (each at its offset, or at ``committed``'s where it has one);
        returns the fetch states they replaced (closed: assigned again, the new offset wins)."""
        replaced = []
        for tp in partitions:
            key = (tp.topic, tp.partition)
            assigned = self._open(tp)
            assigned.fetch_offset = self.resolve(assigned, committed.get(key, tp.offset))
            old = self.partitions.get(key)
            if old is None:
                self.order.append(key)
            else:
                old.close()
                replaced.append(old)
            self.partitions[key] = assigned
            self.watch(assigned.handle)
        return replaced

    def _open(self, tp: TopicPartition) -> PartitionFetch:
        info = self._cluster.topic(tp.topic)
        handle = self._cluster.partition(info, tp.partition)
        schema = Cluster.topic_schema(info)
        lake = self._lake(info, tp.partition, schema)
        isolation = Isolation(self._isolation_level, self.transactions(), tp.topic, tp.partition,
                              functools.partial(_leader_dir, handle),  # the leader's dir: it may move
                              generation=handle.lock.read_generation)
        return PartitionFetch(tp.topic, tp.partition, handle, handle.reader(check_crcs=self._check_crcs),
                              output_schema(schema), schema is not None, isolation=isolation, lake=lake)

    def _lake(self, info: TopicInfo, partition: int, schema: pa.Schema | None) -> LakeFetch | None:
        """A tiered topic's partition's lake (its Delta table), None when the topic is not tiered."""
        return partition_lake(self._cluster, info, partition, schema)

    def remove(self, tp: TopicPartition) -> PartitionFetch | None:
        """Unassign one partition (its stored offset and pause with it); the closed fetch
        state, or None if it was not assigned."""
        key = (tp.topic, tp.partition)
        assigned = self.partitions.pop(key, None)
        if assigned is None:
            return None
        assigned.close()
        self.order.remove(key)
        self.stored.pop(key, None)
        self.paused.discard(key)
        return assigned

    def clear(self) -> None:
        """Unassign everything (stored offsets and pauses with it)."""
        for assigned in self.partitions.values():
            assigned.close()
        self.partitions.clear()
        self.order.clear()
        self.stored.clear()
        self.paused.clear()
        self.next = 0

    def resolve(self, assigned: PartitionFetch, offset: int) -> int:
        """The position ``offset`` asks for (see the module docstring)."""
        if offset == OFFSET_BEGINNING:
            return assigned.earliest_offset()
        if offset == OFFSET_END:
            return assigned.visible_end()
        if offset >= 0:
            return offset
        if self._reset == "error":
            # As librdkafka: no exception here, but the one-time _AUTO_OFFSET_RESET event
            # from poll() (see ReadLoop's reset); no position until seek().
            assigned.out_of_range = OffsetOutOfRangeError(
                f"no committed offset (no valid position) for {assigned.topic}-{assigned.partition}")
            return OFFSET_INVALID
        return assigned.earliest_offset() if self._reset == "earliest" else assigned.visible_end()

    def seek(self, assigned: PartitionFetch, offset: int) -> None:
        """Move a partition's position, dropping what was fetched and restarting a partition
        stopped at a corrupt frame or out of range."""
        assigned.chunks.clear()
        assigned.restart()
        assigned.eof_reported = False
        assigned.fetch_offset = self.resolve(assigned, offset)

    def watch(self, handle: Partition) -> None:
        """Wake on the high watermark moving (writes to the lock file: every append that makes
        records readable publishes it, acks=all after the fsync) and on segment files
        appearing or going in the leader's dir (not on writes inside them: a frame is not
        readable before the HW moves past it). The lock file is made when no writer made it
        yet (reading the HW does not make it; inotify needs it)."""
        self._notifier.watch(handle.leader_dir)
        self._notifier.watch(handle.lock.create_file())

    def follow_leaders(self) -> None:
        """After a metadata change: read each partition from its current leader."""
        for key in self.order:
            assigned = self.partitions[key]
            assigned.follow_leader(self._check_crcs)
            self.watch(assigned.handle)

    def transactions(self) -> TransactionStore:
        """The cluster's transaction store (opened on first use)."""
        if self._transaction_store is None:
            self._transaction_store = TransactionStore.for_cluster(self._cluster)
        return self._transaction_store

    @contextmanager
    def fetch_for(self, tp: TopicPartition) -> Iterator[PartitionFetch]:
        """The assigned partition, or a temporary handle to an unassigned one."""
        assigned = self.partitions.get((tp.topic, tp.partition))
        if assigned is not None:
            yield assigned
            return
        info = self._cluster.topic(tp.topic)
        handle = self._cluster.partition(info, tp.partition)
        temporary = PartitionFetch(tp.topic, tp.partition, handle, handle.reader(), output_schema(None), False,
                                   lake=self._lake(info, tp.partition, Cluster.topic_schema(info)))
        try:
            yield temporary
        finally:
            temporary.close()


def _leader_dir(handle: Partition) -> str:
    return handle.leader_dir

"""The Producer's cache of open partition handles, bounded by ``open.partitions.max``.

A handle (:class:`~kstream.log.cluster.partition.Partition`) holds open files
on every replica of its partition, so a producer writing to many partitions
keeps at most ``open.partitions.max`` of them open, least recently used
closed first. Handles live in their topic's ``TopicState.partitions`` (the
look-up the send path makes); this class keeps their use order.

Before a handle is closed, ``before_close`` (set by the producer: wait for
every acks=all fsync in flight) runs, so no background fsync still uses it. At
close, every handle is fsynced and released (:func:`flush_and_close`).
Not thread-safe: the caller holds the producer's lock.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable

from kstream.client.producer_batches import TopicState
from kstream.errors import TopicNotFoundError
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.partition import Partition

log = logging.getLogger(__name__)


class PartitionHandles:
    """Opens partitions on first use and closes the least recently used beyond ``max_open``."""

    __slots__ = ("_cluster", "_max_open", "_open", "before_close")

    def __init__(self, cluster: Cluster, max_open: int):
        self._cluster = cluster
        self._max_open = max_open
        self.before_close: Callable[[], None] = _nothing
        self._open: OrderedDict[tuple[str, int], TopicState] = OrderedDict()

    def get(self, state: TopicState, partition: int) -> Partition:
        """The topic's partition handle, opened if need be (and marked most recently used)."""
        handle = state.partitions[partition]
        key = (state.info.name, partition)
        if handle is None:
            handle = state.partitions[partition] = self._cluster.partition(state.info, partition)
            self._open[key] = state
            while len(self._open) > self._max_open:  # bound open files
                self.before_close()  # no fsync may still run on a handle we close
                (_topic, evicted), owner = self._open.popitem(last=False)
                old = owner.partitions[evicted]
                owner.partitions[evicted] = None
                if old is not None:
                    old.close()
        else:
            self._open.move_to_end(key)
        return handle

    def close_all(self, topics: Iterable[TopicState]) -> None:
        """fsync and release every handle of ``topics`` (the producer's close())."""
        for state in topics:
            for handle in state.partitions:
                if handle is not None:
                    flush_and_close(handle)


def _nothing() -> None:
    pass


def flush_and_close(handle: Partition) -> None:
    """fsync a partition at close, then release it. A partition deleted since this producer
    opened it has nothing left to make durable (its records went with the topic): that is
    no failure of close()."""
    try:
        handle.flush()
    except TopicNotFoundError as err:
        log.info("not flushing %s-%d at close: %s", handle.info.topic, handle.info.partition, err)
    finally:
        handle.close()

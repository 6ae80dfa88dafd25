"""Which partition a produced record or row goes to: the Producer's glue over the partitioners
and the cluster's topics.

:class:`TopicRouter` opens a topic for a producer (its metadata, created first
under the cluster's ``auto.create.topics.enable``, as a Kafka broker does) and
keeps its sticky partition for unkeyed records (KIP-794; with the ``murmur2``
partitioner, the partition of an empty key, as librdkafka's). produce() routes
one record inline (its hot path); :func:`route` does the same for a whole Arrow
table in produce_batch(), and :func:`plan_table` cuts the routed rows into the
frames to write: the call's ``partition`` if given,
else each row's ``partition`` column, else the murmur2 partition of its
``key`` (:mod:`kstream.client.partitioner`), else the topic's sticky
partition. -1 and None, as the argument or in the column, let the
partitioner choose; any other number outside the topic's partitions raises
PartitionNotFoundError (:func:`checked_partition`), before anything is
written. Not thread-safe: the producer calls a TopicRouter under its lock; the
functions take no lock and do no I/O.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kstream.client.partitioner import StickyPartitioner, partition_for_key, partitions_for_keys
from kstream.client.producer_batches import BatchEncoder, Piece, TopicState
from kstream.errors import InvalidRecordError, PartitionNotFoundError, TopicExistsError, TopicNotFoundError
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.metadata import TopicInfo
from kstream.log.storage.records import check_keys_for_compaction, to_stored_batch


class TopicRouter:
    """Opens a producer's topics and moves their sticky partitions on."""

    __slots__ = ("_cluster", "_log", "_null_key_hashed", "_sticky")

    def __init__(self, cluster: Cluster, partitioner: str, log: logging.Logger | logging.LoggerAdapter[Any]):
        self._cluster = cluster
        self._sticky = StickyPartitioner()
        self._null_key_hashed = partitioner == "murmur2"  # librdkafka's murmur2: one partition
        self._log = log

    def open(self, topic: str) -> TopicState:
        """A new TopicState for ``topic`` (TopicNotFoundError unless auto-created)."""
        info = self._topic_info(topic)
        config = self._cluster.log_config(info)
        state = TopicState(info, Cluster.topic_schema(info), config.message_max_bytes,
                           config.cleanup_policy)
        state.sticky = (partition_for_key(b"", info.num_partitions) if self._null_key_hashed
                        else self._sticky.partition(topic, info.num_partitions))
        return state

    def next_sticky(self, state: TopicState) -> None:
        """After a batch to the sticky partition: move on (murmur2: unkeyed records stay on the
        partition of an empty key, as librdkafka's murmur2 partitioner puts them)."""
        if self._null_key_hashed:
            return
        self._sticky.batch_sent(state.info.name, state.num_partitions, state.sticky)
        state.sticky = self._sticky.partition(state.info.name, state.num_partitions)

    def _topic_info(self, topic: str) -> TopicInfo:
        """The topic's metadata; with the cluster's auto.create.topics.enable, a missing topic
        is created first (num.partitions, default.replication.factor), as a Kafka broker does."""
        try:
            return self._cluster.topic(topic)
        except TopicNotFoundError:
            if not self._cluster.config.get("auto.create.topics.enable"):
                raise
        try:
            info = self._cluster.create_topic(topic)
            assert info is not None  # None only for validate_only
            self._log.info("auto-created topic %r (auto.create.topics.enable)", topic)
            return info
        except TopicExistsError:  # another producer created it first
            return self._cluster.topic(topic)


def plan_table(encoder: BatchEncoder, state: TopicState, table: pa.Table, partition: int | None
               ) -> tuple[list[tuple[int, Piece]], int]:
    """produce_batch()'s table as (partition, piece) frames to write, checked and cut to fit,
    and the time (ms) they were planned at."""
    if "topic" in table.column_names:
        raise InvalidRecordError("produce_batch(topic, table) takes the topic as an argument; "
                                 "drop the 'topic' column")
    routes = route(state, table, partition)
    if "partition" in table.column_names:
        table = table.drop_columns(["partition"])
    now_ms = int(time.time() * 1000)
    planned: list[tuple[int, Piece]] = []
    for target, rows in routes:
        part = table.take(rows) if rows is not None else table
        for chunk in part.combine_chunks().to_batches():
            stored = to_stored_batch(chunk, state.schema)
            if state.compacted is not None:
                check_keys_for_compaction(stored, state.info.name, state.compacted)
            planned.extend((target, piece) for piece in encoder.pieces(state, stored))
    return planned, now_ms


def route(state: TopicState, table: pa.Table, partition: int | None) -> list[tuple[int, np.ndarray | None]]:
    """The table's rows by target partition: (partition, row indices), None for all rows."""
    n = state.num_partitions
    if partition is not None and partition != -1:
        return [(checked_partition(state.info.name, n, partition), None)]
    if "partition" not in table.column_names and "key" not in table.column_names:
        return [(state.sticky, None)]
    targets = np.full(table.num_rows, -1, dtype=np.int32)
    if "partition" in table.column_names:
        column = table.column("partition")
        if not pa.types.is_integer(column.type):
            raise InvalidRecordError(f"column 'partition' has type {column.type}; expected an integer")
        # Range-check in the column's own type: a cast first would wrap 2**32+1 to 1.
        low, high = pc.min_max(column).values()
        for value in (low.as_py(), high.as_py()):
            if value is not None and not -1 <= value < n:
                raise _bad_partition(state.info.name, n, value, " (column 'partition')")
        targets = column.fill_null(-1).to_numpy().astype(np.int32)
    if "key" in table.column_names and (targets < 0).any():
        keys = table.column("key").combine_chunks()
        if keys.type not in (pa.binary(), pa.string(), pa.large_binary(), pa.large_string()):
            raise InvalidRecordError(f"column 'key' has type {keys.type}; expected binary or string")
        keyed = partitions_for_keys(keys, n)
        targets = np.where(targets < 0, keyed, targets)
    if (targets < 0).all():
        return [(state.sticky, None)]
    targets = np.where(targets < 0, state.sticky, targets)
    return [(int(p), np.nonzero(targets == p)[0]) for p in np.unique(targets)]


def checked_partition(topic: str, count: int, partition: Any) -> int:
    """An explicit partition number (an int, or a NumPy integer) of the topic, else
    PartitionNotFoundError. -1 and None (the partitioner chooses) are handled by callers."""
    if isinstance(partition, bool) or not isinstance(partition, (int, np.integer)):
        raise _bad_partition(topic, count, partition)
    if not 0 <= partition < count:
        raise _bad_partition(topic, count, partition)
    return int(partition)


def _bad_partition(topic: str, count: int, partition: Any, where: str = "") -> PartitionNotFoundError:
    return PartitionNotFoundError(
        f"partition {partition!r}{where} is not a partition of topic {topic!r}, which has "
        f"partitions 0..{count - 1}; give one of those, or -1 (or None) to let the partitioner choose")

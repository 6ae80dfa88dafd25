"""What a Consumer looks up about partitions without reading them: watermarks, offsets for times, lag, statistics.

:class:`PartitionLookups` answers through the engine's face
(:func:`kstream.log.partition_bounds.bounds`,
:func:`kstream.log.offset_for_timestamp`), on the assigned partition's open
handle when there is one, else on a temporary handle it closes again. The
``cached`` watermarks are the ones of the consumer's last fetch, as
librdkafka's cache is filled by fetch responses. Statistics (``stats_cb``)
put each assigned partition's positions beside its bounds and the group's
committed offset; they never wait on another process's open transaction.
Writes nothing. Not thread-safe: it lives in its Consumer's thread.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kstream.client.consumer_assignment import Assignment
from kstream.client.consumer_group import GroupSession
from kstream.client.stats import ClientStats, PartitionView
from kstream.errors import KStreamError
from kstream.log import offset_for_timestamp
from kstream.log.cluster.cluster import Cluster
from kstream.log.partition_bounds import bounds
from kstream.log.transactions.isolation import READ_COMMITTED
from kstream.message import OFFSET_INVALID, TopicPartition


class PartitionLookups:
    """One Consumer's partition lookups. See the module docstring."""

    def __init__(self, cluster: Cluster, assignment: Assignment, options: Mapping[str, Any],
                 logger: logging.Logger | logging.LoggerAdapter[Any], group: GroupSession | None):
        self._cluster = cluster
        self._assignment = assignment
        self._isolation_level = options["isolation.level"]
        self._auto_store = options["enable.auto.offset.store"]
        self._log = logger
        self._group = group

    def watermarks(self, tp: TopicPartition, cached: bool) -> tuple[int, int]:
        """(low, high): log start offset and high watermark; ``cached``: as of the last fetch of
        an assigned partition, (OFFSET_INVALID, OFFSET_INVALID) before any. A tiered topic's log
        start is its lake's first offset when the lake holds records below the log's (as Kafka's
        tiered storage counts remote segments, KIP-405)."""
        if cached:
            assigned = self._assignment.partitions.get((tp.topic, tp.partition))
            if assigned is None or assigned.fetched_end is None:
                return OFFSET_INVALID, OFFSET_INVALID
            return assigned.earliest_offset(), assigned.fetched_end
        with self._assignment.fetch_for(tp) as fetch:
            found = bounds(self._cluster, fetch.topic, fetch.partition, handle=fetch.handle,
                           store=fetch.isolation.store)
            low = found.log_start_offset if fetch.lake is None else fetch.lake.start_offset(found.log_start_offset)
            return low, found.high_watermark

    def offsets_for_times(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """Per partition, the earliest offset whose timestamp is >= tp.offset (ms) among the
        records the consumer would be handed (isolation.level); -1 if none. A tiered topic's
        lake is looked in first (it holds the offsets below the log's)."""
        result = []
        level = self._isolation_level
        for tp in partitions:
            with self._assignment.fetch_for(tp) as fetch:
                in_lake = None if fetch.lake is None else fetch.lake.offset_for_timestamp(tp.offset)
                if in_lake is not None:
                    result.append(TopicPartition(tp.topic, tp.partition, in_lake))
                    continue
                store = self._assignment.transactions() if level == READ_COMMITTED else None
                found = offset_for_timestamp(fetch.handle, tp.offset, level, store, fetch.reader)
            result.append(TopicPartition(tp.topic, tp.partition, -1 if found is None else found.offset))
        return result

    def records_lag(self) -> dict[TopicPartition, dict[str, float]]:
        """Per assigned partition: records-lag, -avg and -max since it was assigned."""
        assignment = self._assignment
        return {TopicPartition(t, p): assignment.partitions[(t, p)].lag.metrics() for t, p in assignment.order}

    def statistics(self, stats: ClientStats, positions: list[TopicPartition]) -> dict[str, Any]:
        """The statistics document of the assigned partitions at ``positions`` (the consumer's
        positions, in assignment order)."""
        assignment = self._assignment
        group = self._group
        committed: dict[tuple[str, int], int] = {}
        if group is not None and assignment.order:
            try:
                # statistics never wait on another process's open transaction (poll() would block)
                committed = {(tp.topic, tp.partition): tp.offset
                             for tp in group.committed(assignment.topic_partitions(), require_stable=False)}
            except KStreamError as err:
                self._log.warning("statistics: committed offsets of group %s unavailable: %s", group.group, err)
        views = []
        for tp in positions:
            key = (tp.topic, tp.partition)
            assigned = assignment.partitions[key]
            stored = assignment.stored.get(key)
            found = bounds(self._cluster, tp.topic, tp.partition, handle=assigned.handle,
                           store=assigned.isolation.store)
            views.append(PartitionView(
                tp.topic, tp.partition, leader=assigned.handle.info.leader,
                next_offset=assigned.fetch_offset, app_offset=tp.offset,
                stored_offset=tp.offset if self._auto_store else (stored.offset if stored else -1),
                committed_offset=max(-1, committed.get(key, -1)),
                lo_offset=found.log_start_offset, hi_offset=found.high_watermark,
                ls_offset=assigned.visible_end()))
        cgrp = None
        if group is not None:
            cgrp = {"state": "up" if group.member_id else "init",
                    "join_state": "steady" if assignment.order else "init", "stateage": 0,
                    "rebalance_age": 0, "rebalance_cnt": 0, "rebalance_reason": "",
                    "assignment_size": len(assignment.order)}
        return stats.document(views, cgrp=cgrp)

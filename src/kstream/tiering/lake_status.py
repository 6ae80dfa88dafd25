"""How far a tiered topic's partitions are in the lake, read without writing anything.

What ``kstream topics describe`` and the console show per partition of a tiered topic: the
local log start, the lake end offset recorded in the metadata (the tierer's cache of the
Delta log, never ahead of it), and the tierer's lag: the offsets that are sealed and stable
(below the last segment's base and the LSO) but not in the lake yet, and how long the oldest
of them has waited (the age of the segment holding the lake end: sealed segments are never
written after their roll, so their modification time is when they were sealed). The same
figures tell the tierer whether a partition is due (``tier.lag.ms`` / ``tier.lag.bytes``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.lake_offsets import LakeOffsets
from kstream.log.cluster.metadata import TopicInfo
from kstream.log.partition_bounds import PartitionBounds, bounds
from kstream.log.storage import format as fmt
from kstream.log.storage.retention import list_segment_bases
from kstream.log.transactions.store import TransactionStore


@dataclass(frozen=True)
class Untiered:
    """What of one replica is sealed, stable and not in the lake: ``[start, end)``, held in
    ``size_bytes`` of segment files, the oldest sealed ``age_ms`` ago (0 when nothing waits)."""

    start: int
    end: int
    size_bytes: int
    age_ms: int
    segment_bases: tuple[int, ...]  # the replica's segments, oldest first (the last is active)

    @property
    def lag_offsets(self) -> int:
        return max(0, self.end - self.start)


def untiered(directory: str, lake_end: int, partition_bounds: PartitionBounds, now_ms: int) -> Untiered:
    """The untiered part of the replica at ``directory`` whose lake holds offsets below
    ``lake_end``. Reads the directory listing and file sizes only."""
    bases = tuple(list_segment_bases(directory))
    start = max(lake_end, partition_bounds.log_start_offset)
    sealed_end = bases[-1] if bases else 0
    end = max(start, min(sealed_end, partition_bounds.last_stable_offset))
    size = 0
    age = 0
    if end > start:
        holding = [b for b in bases[:-1] if b <= start] or [bases[0]]
        first = holding[-1]
        for base in bases[:-1]:
            if base >= first and base < end:
                stat = os.stat(os.path.join(directory, fmt.segment_file_name(base)))
                size += stat.st_size
                if base == first:
                    age = max(0, now_ms - stat.st_mtime_ns // 1_000_000)
    return Untiered(start, end, size, age, bases)


@dataclass(frozen=True)
class PartitionTierStatus:
    """One partition of a tiered topic, as describe shows it."""

    partition: int
    log_start_offset: int
    lake_end_offset: int
    lag_offsets: int
    lag_age_ms: int
    lake_updated_ms: int | None


def tier_status(cluster: Cluster, info: TopicInfo, now_ms: int) -> list[PartitionTierStatus]:
    """Each partition's figures (see the module docstring). Writes nothing, makes nothing."""
    recorded = LakeOffsets(cluster.metadata).ends(info.name, info.topic_id)
    store = TransactionStore.for_cluster(cluster)
    out = []
    for number in range(info.num_partitions):
        handle = cluster.partition(info, number)
        try:
            partition_bounds = bounds(cluster, info, number, handle=handle, store=store)
            row = recorded.get(number)
            lake_end = 0 if row is None else row.end_offset
            waiting = untiered(handle.leader_dir, lake_end, partition_bounds, now_ms)
        finally:
            handle.close()
        out.append(PartitionTierStatus(number, partition_bounds.log_start_offset, lake_end,
                                       waiting.lag_offsets, waiting.age_ms,
                                       None if row is None else row.updated_ms))
    return out

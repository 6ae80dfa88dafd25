"""The topic page's figures: per partition what `kstream topics describe` prints, plus segments.

Built on :func:`kstream.client.admin.topics.details` (the CLI's describe), so the page
and the CLI agree: leader, replicas, ISR, log start, LEO, HW, per-replica log
ends and bytes, the LSO a reader sees (all the engine's
:func:`kstream.log.partition_bounds.bounds`); then the open transactions holding it
(read-only: an expired one is shown, not aborted, as in the CLI), and the segment count
from the leader directory's listing. A tiered topic adds, as describe does, each partition's
lake end and tier lag (:func:`kstream.tiering.tier_status`, read-only too).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import pyarrow as pa

from kstream.client.admin import topics as topic_ops
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import format as fmt
from kstream.log.transactions.store import Holder, TransactionStore
from kstream.tiering import PartitionTierStatus, tier_status


@dataclass(frozen=True)
class PartitionRow:
    details: topic_ops.PartitionDetails
    last_stable_offset: int
    holders: tuple[Holder, ...]
    segments: int


@dataclass(frozen=True)
class TopicView:
    name: str
    topic_id: str
    config: dict[str, str]
    schema: pa.Schema | None
    partitions: tuple[PartitionRow, ...]
    lake_path: str | None = None  # a tiered topic's Delta table
    lake: tuple[PartitionTierStatus, ...] = ()

    @property
    def size_bytes(self) -> int:
        return sum(row.details.size_bytes for row in self.partitions)


def _segments(directory: str) -> int:
    try:
        return sum(1 for name in os.listdir(directory) if fmt.parse_segment_file_name(name) is not None)
    except FileNotFoundError:
        return 0  # an offline log dir's replica: the page shows the leader as offline


def topic_view(cluster: Cluster, name: str) -> TopicView:
    """TopicNotFoundError (a KStreamError) if there is no such topic."""
    described = topic_ops.details(cluster, name)
    info = cluster.topic(name)
    store = TransactionStore.for_cluster(cluster)
    paths = cluster.log_dir_paths()
    rows = []
    for p in described.partitions:
        directory = os.path.join(paths[p.leader], fmt.replica_dir_name(name, p.id))
        rows.append(PartitionRow(p, p.last_stable_offset, tuple(store.holders(name, p.id)), _segments(directory)))
    assert len(rows) == info.num_partitions
    lake_path = cluster.log_config(info).tier_table_dir
    lake = () if lake_path is None else tuple(tier_status(cluster, info, int(time.time() * 1000)))
    return TopicView(name, described.topic_id, dict(described.config), described.schema, tuple(rows),
                     lake_path, lake)

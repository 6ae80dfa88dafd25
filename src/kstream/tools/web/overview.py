"""What the cluster pages show, read once per page: log dirs as brokers, topics, partitions.

A page builds one :class:`ClusterSnapshot` (every topic's placement from the
metadata store, the log dirs and their online flags) and derives its tables
from it, so a page costs one pass over the metadata, not a query per partition.
Sizes come from the leader replica directories (a directory scan each, no
file is opened). Everything here reads; nothing writes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kstream.client.admin.topics import tree_bytes
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.metadata import PartitionInfo, TopicInfo
from kstream.log.storage import format as fmt


@dataclass(frozen=True)
class LogDirRow:
    """A log dir as a broker: Kafka's broker figures where kstream has them."""

    id: int
    path: str
    online: bool
    size_bytes: int
    replicas: int
    leaders: int
    under_replicated: int  # partitions led here whose ISR is smaller than their replicas
    offline_partitions: int  # partitions whose leader is this log dir while it is offline


@dataclass(frozen=True)
class TopicRow:
    """A topic in the topics list."""

    name: str
    partitions: int
    replication_factor: int
    size_bytes: int
    under_replicated: int
    offline: int
    typed: bool

    @property
    def internal(self) -> bool:
        """kstream's own topics (``__kstream_metrics``), as Kafka's ``__consumer_offsets``."""
        return self.name.startswith("__")


@dataclass(frozen=True)
class ClusterSnapshot:
    """One read of the metadata: topics (by name, sorted) and log dirs (id, path, online)."""

    cluster_id: str
    topics: dict[str, TopicInfo]
    log_dirs: list[tuple[int, str, bool]]
    config: dict[str, object]

    @classmethod
    def read(cls, cluster: Cluster) -> ClusterSnapshot:
        topics = {name: cluster.topic(name) for name in cluster.list_topics()}
        paths = cluster.log_dir_paths()
        dirs = [(i, paths[i], online) for i, _, online in cluster.metadata.log_dirs()]
        return cls(cluster.cluster_id, topics, dirs, dict(cluster.config))

    def online(self) -> dict[int, bool]:
        return {i: online for i, _, online in self.log_dirs}

    def partitions(self) -> list[PartitionInfo]:
        return [p for info in self.topics.values() for p in info.partitions]


def is_under_replicated(p: PartitionInfo) -> bool:
    return len(p.isr) < len(p.replicas)


def is_offline(p: PartitionInfo, online: dict[int, bool]) -> bool:
    return not online.get(p.leader, False)


def leader_dir(snapshot: ClusterSnapshot, p: PartitionInfo) -> str:
    paths = {i: path for i, path, _ in snapshot.log_dirs}
    return os.path.join(paths[p.leader], fmt.replica_dir_name(p.topic, p.partition))


def log_dir_rows(snapshot: ClusterSnapshot) -> list[LogDirRow]:
    online = snapshot.online()
    rows = []
    for i, path, is_online in snapshot.log_dirs:
        mine = [p for p in snapshot.partitions() if i in p.replicas]
        led = [p for p in mine if p.leader == i]
        rows.append(LogDirRow(i, path, is_online, tree_bytes(path), len(mine), len(led),
                              sum(1 for p in led if is_under_replicated(p)),
                              sum(1 for p in led if is_offline(p, online))))
    return rows


def topic_rows(snapshot: ClusterSnapshot) -> list[TopicRow]:
    online = snapshot.online()
    rows = []
    for name, info in snapshot.topics.items():
        size = sum(tree_bytes(leader_dir(snapshot, p)) for p in info.partitions)
        rows.append(TopicRow(name, info.num_partitions, info.replication_factor, size,
                             sum(1 for p in info.partitions if is_under_replicated(p)),
                             sum(1 for p in info.partitions if is_offline(p, online)),
                             bool(info.schemas)))
    return rows

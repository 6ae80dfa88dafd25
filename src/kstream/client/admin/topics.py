"""Topics: what to create (NewTopic, NewPartitions) and how they are described.

``TopicDescription`` is confluent's (partitions as :class:`TopicPartitionInfo`
with log dirs as Nodes); :class:`TopicDetails` is kstream's fuller view
(offsets, sizes, per-replica log ends, config, schema) behind
``kstream topics describe``. Replica assignments name log dir ids.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from kstream._model import Node, TopicPartitionInfo
from kstream.client.cluster_metadata import log_dir_nodes, online_log_dirs
from kstream.errors import InvalidPartitionsError, KStreamError
from kstream.log.cluster.cluster import Cluster
from kstream.log.partition_bounds import bounds
from kstream.log.storage.log_reader import LogReader


class NewTopic:
    """A topic to create (confluent's signature). -1 takes the cluster's num.partitions /
    default.replication.factor; ``replica_assignment`` lists each partition's log dir ids
    (first = preferred leader). kstream's addition: ``schema`` makes a typed topic."""

    def __init__(self, topic: str, num_partitions: int = -1, replication_factor: int = -1,
                 replica_assignment: list[list[int]] | None = None,
                 config: Mapping[str, Any] | None = None, *, schema: pa.Schema | None = None):
        if not isinstance(topic, str):
            raise TypeError(f"NewTopic topic must be a string, got {type(topic).__name__}")
        if isinstance(replica_assignment, Mapping):
            # kstream's older positional order (topic, partitions, replicas, config, schema): a
            # dict cannot be confluent's replica assignment (a list), so it is the config.
            if isinstance(config, pa.Schema) and schema is None:
                schema, config = config, None
            if config is not None:
                raise TypeError("NewTopic got a dict for replica_assignment and a config; pass "
                                "config=... by name")
            replica_assignment, config = None, replica_assignment
        # (counts are checked by the cluster: an InvalidPartitionsError names the limits)
        if config is not None and not isinstance(config, Mapping):
            raise TypeError(f"NewTopic config must be a dict, got {type(config).__name__}")
        if replica_assignment is not None and not isinstance(replica_assignment, list):
            raise TypeError("NewTopic replica_assignment must be a list of lists of log dir ids")
        self.topic = topic
        self.num_partitions = num_partitions
        self.replication_factor = replication_factor
        self.replica_assignment = replica_assignment
        self.config: dict[str, Any] = dict(config or {})
        self.schema = schema

    def placements(self) -> list[tuple[int, ...]] | None:
        if self.replica_assignment is None:
            return None
        if self.num_partitions not in (-1, len(self.replica_assignment)):
            raise InvalidPartitionsError(
                f"NewTopic {self.topic!r}: num_partitions {self.num_partitions} but a replica "
                f"assignment for {len(self.replica_assignment)} partition(s)")
        return [tuple(replicas) for replicas in self.replica_assignment]

    def __repr__(self) -> str:
        return f"NewTopic(topic={self.topic},num_partitions={self.num_partitions})"

    def __hash__(self) -> int:
        return hash(self.topic)


class NewPartitions:
    """Grow ``topic`` to ``new_total_count`` partitions (``replica_assignment``: the new
    partitions' log dir ids)."""

    def __init__(self, topic: str, new_total_count: int,
                 replica_assignment: list[list[int]] | None = None):
        if not isinstance(topic, str):
            raise TypeError(f"NewPartitions topic must be a string, got {type(topic).__name__}")
        self.topic = topic
        self.new_total_count = new_total_count
        self.replica_assignment = replica_assignment

    def placements(self) -> list[tuple[int, ...]] | None:
        return None if self.replica_assignment is None else [tuple(r) for r in self.replica_assignment]

    def __repr__(self) -> str:
        return f"NewPartitions(topic={self.topic},new_total_count={self.new_total_count})"


class TopicDescription:
    """confluent's: ``name``, ``topic_id``, ``is_internal`` (False), ``partitions`` (a list of
    TopicPartitionInfo), ``authorized_operations`` (None unless asked for; then every topic
    operation, as Kafka without an authorizer)."""

    def __init__(self, name: str, topic_id: str, is_internal: bool,
                 partitions: list[TopicPartitionInfo], authorized_operations: list[Any] | None = None):
        self.name = name
        self.topic_id = topic_id
        self.is_internal = is_internal
        self.partitions = partitions
        self.authorized_operations = authorized_operations

    def __repr__(self) -> str:
        return f"TopicDescription(name={self.name!r}, partitions={len(self.partitions)})"


@dataclass(frozen=True)
class PartitionDetails:
    """One partition as `kstream topics describe` shows it."""

    id: int
    leader: int
    replicas: tuple[int, ...]
    isrs: tuple[int, ...]
    leader_epoch: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    size_bytes: int
    replica_log_end_offsets: Mapping[int, int] = field(default_factory=dict)
    last_stable_offset: int = 0
    open_transaction: int | None = None  # the producer id holding the LSO (None: nothing does)


@dataclass(frozen=True)
class TopicDetails:
    """A topic as `kstream topics describe` shows it (kstream's own view)."""

    name: str
    topic_id: str
    partitions: tuple[PartitionDetails, ...]
    config: Mapping[str, str]
    schema: pa.Schema | None


@dataclass(frozen=True)
class LogDirDescription:
    """One log dir as `kstream log-dirs describe` shows it."""

    id: int
    path: str
    online: bool
    replicas: int
    leaders: int
    size_bytes: int


def describe(cluster: Cluster, name: str) -> TopicDescription:
    """confluent's description of one topic (TopicNotFoundError if it does not exist)."""
    info = cluster.topic(name)
    nodes = log_dir_nodes(cluster)
    online = online_log_dirs(cluster)
    partitions = []
    for p in info.partitions:
        leader: Node | None = nodes[p.leader] if online.get(p.leader, False) else None
        partitions.append(TopicPartitionInfo(p.partition, leader, [nodes[r] for r in p.replicas],
                                             [nodes[r] for r in p.isr]))
    return TopicDescription(name, info.topic_id, False, partitions)


def details(cluster: Cluster, name: str) -> TopicDetails:
    """kstream's description: offsets, sizes and each replica's log end (-1: unreadable)."""
    info = cluster.topic(name)
    partitions = []
    for placement in info.partitions:
        handle = cluster.partition(info, placement.partition)
        ends = {}
        for replica, directory in handle.replica_dirs.items():
            replica_reader = LogReader(directory, check_crcs=False)
            try:
                ends[replica] = replica_reader.log_end_offset()
            except KStreamError:
                ends[replica] = -1  # unreadable (offline or corrupt): verify-replicas says more
            finally:
                replica_reader.close()
        try:
            found = bounds(cluster, info, placement.partition, handle=handle)
            partitions.append(PartitionDetails(
                placement.partition, placement.leader, placement.replicas, placement.isr,
                placement.leader_epoch, found.log_start_offset, found.log_end_offset,
                found.high_watermark, tree_bytes(handle.leader_dir), ends,
                found.last_stable_offset, found.open_transaction))
        finally:
            handle.close()
    return TopicDetails(name, info.topic_id, tuple(partitions), dict(info.config),
                        Cluster.topic_schema(info))


def log_dirs(cluster: Cluster) -> list[LogDirDescription]:
    replicas: dict[int, int] = {}
    leaders: dict[int, int] = {}
    for name in cluster.list_topics():
        for placement in cluster.topic(name).partitions:
            leaders[placement.leader] = leaders.get(placement.leader, 0) + 1
            for replica in placement.replicas:
                replicas[replica] = replicas.get(replica, 0) + 1
    paths = cluster.log_dir_paths()
    return [LogDirDescription(i, paths[i], online, replicas.get(i, 0), leaders.get(i, 0),
                              tree_bytes(paths[i]))
            for i, _, online in cluster.metadata.log_dirs()]


def tree_bytes(directory: str) -> int:
    total = 0
    for root, _, files in os.walk(directory):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except FileNotFoundError:
                pass
    return total

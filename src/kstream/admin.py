"""Admin: create, list, describe, alter and delete topics, confluent-kafka style.

Calls return ``{name: Future}`` like confluent-kafka's AdminClient; the work is
done before they return (the metadata store is local), so ``f.result()``
never waits, and raises the call's :class:`KStreamError` if it failed.
Only :meth:`Admin.create_topics` creates a cluster: the first one on a new
path creates it with the broker-side settings in the Admin's config
(``log.dirs``, ``num.partitions``, ...). Every other call on a path that holds
no cluster raises :class:`ClusterNotFoundError` and writes nothing.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pyarrow as pa

from kstream.client_config import client_options
from kstream.errors import ClusterNotFoundError, KStreamError
from kstream.log import replica_ops
from kstream.log.cluster import Cluster, check_partition_count, check_topic_name
from kstream.log.log_reader import LogReader
from kstream.log.metadata import PartitionInfo, TopicInfo
from kstream.options import Option

T = TypeVar("T")

_ADMIN_OPTIONS = {
    "cluster": Option("cluster", "str", None, "Cluster path (default: $KSTREAM_CLUSTER or ./data)."),
    "client.id": Option("client.id", "str", "kstream", "Name of this client."),
}


@dataclass
class NewTopic:
    """A topic to create; -1 takes the cluster's num.partitions / default.replication.factor.
    ``schema`` makes a typed topic whose values are these Arrow columns."""

    topic: str
    num_partitions: int = -1
    replication_factor: int = -1
    config: Mapping[str, Any] = field(default_factory=dict)
    schema: pa.Schema | None = None


@dataclass
class NewPartitions:
    topic: str
    new_total_count: int


@dataclass(frozen=True)
class PartitionDescription:
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


@dataclass(frozen=True)
class LogDirDescription:
    """One log dir as `kstream log-dirs describe` shows it."""

    id: int
    path: str
    online: bool
    replicas: int
    leaders: int
    size_bytes: int


@dataclass(frozen=True)
class TopicDescription:
    name: str
    topic_id: str
    partitions: tuple[PartitionDescription, ...]
    config: Mapping[str, str]
    schema: pa.Schema | None


def _done(action: Callable[[], T]) -> Future[T]:
    future: Future[T] = Future()
    try:
        future.set_result(action())
    except Exception as err:  # handed to the caller through the future, as confluent does
        future.set_exception(err)
    return future


class Admin:
    """Topic administration on one cluster."""

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any):
        options, self._broker = client_options(_ADMIN_OPTIONS, config, kwargs, "an Admin")
        self._path: str | None = options["cluster"]
        self._opened: Cluster | None = None
        try:
            self._opened = Cluster.open(self._path, self._broker)
        except ClusterNotFoundError:
            pass  # create_topics may create it; any other call raises (see `cluster`)

    @property
    def cluster(self) -> Cluster:
        """The open cluster; ClusterNotFoundError if there is none (yet) at the path."""
        if self._opened is None:
            self._opened = Cluster.open(self._path, self._broker)
        return self._opened

    def create_topics(self, new_topics: list[NewTopic], **_: Any) -> dict[str, Future[TopicInfo]]:
        """Create topics (and the cluster, with this Admin's broker-side settings, if the
        path holds none and a topic passes the checks that need no cluster)."""
        return {t.topic: _done(functools.partial(self._create_topic, t)) for t in new_topics}

    def _create_topic(self, new: NewTopic) -> TopicInfo:
        if self._opened is None:
            check_topic_name(new.topic)  # refuse what needs no cluster to refuse before making one
            if new.num_partitions not in (None, -1):
                check_partition_count(new.num_partitions, "num_partitions")
            self._opened = Cluster.open(self._path, self._broker, create=True)
        return self._opened.create_topic(new.topic, new.num_partitions, new.replication_factor,
                                         new.config, new.schema)

    def delete_topics(self, topics: list[str], **_: Any) -> dict[str, Future[None]]:
        return {name: _done(functools.partial(self._delete_topic, name)) for name in topics}

    def create_partitions(self, new_partitions: list[NewPartitions], **_: Any
                          ) -> dict[str, Future[TopicInfo]]:
        return {
            p.topic: _done(functools.partial(self._create_partitions, p))
            for p in new_partitions
        }

    def _delete_topic(self, name: str) -> None:
        self.cluster.delete_topic(name)

    def _create_partitions(self, new: NewPartitions) -> TopicInfo:
        return self.cluster.create_partitions(new.topic, new.new_total_count)

    def alter_topic_config(self, topic: str, config: Mapping[str, Any]) -> TopicInfo:
        """Set topic overrides; a value of None removes one (back to the cluster default)."""
        return self.cluster.alter_topic_config(topic, config)

    def evolve_schema(self, topic: str, schema: pa.Schema) -> TopicInfo:
        """Add nullable columns at the end of a typed topic's schema."""
        return self.cluster.evolve_schema(topic, schema)

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> dict[str, TopicInfo]:
        """Topic name -> stored metadata (all topics, or the one named)."""
        names = [topic] if topic else self.cluster.list_topics()
        return {name: self.cluster.topic(name) for name in names}

    def describe_topics(self, topics: list[str]) -> dict[str, Future[TopicDescription]]:
        return {name: _done(functools.partial(self.describe_topic, name)) for name in topics}

    def describe_topic(self, name: str) -> TopicDescription:
        info = self.cluster.topic(name)
        partitions = []
        for placement in info.partitions:
            handle = self.cluster.partition(info, placement.partition)
            ends = {}
            for replica, directory in handle.replica_dirs.items():
                replica_reader = LogReader(directory, check_crcs=False)
                try:
                    ends[replica] = replica_reader.log_end_offset()
                except KStreamError:
                    ends[replica] = -1  # unreadable (offline or corrupt): verify-replicas says more
                finally:
                    replica_reader.close()
            reader = LogReader(handle.leader_dir, check_crcs=False)
            try:
                partitions.append(PartitionDescription(
                    placement.partition, placement.leader, placement.replicas, placement.isr,
                    placement.leader_epoch, reader.log_start_offset(), ends[placement.leader],
                    handle.high_watermark() or 0, _tree_bytes(handle.leader_dir), ends))
            finally:
                reader.close()
                handle.close()
        return TopicDescription(name, info.topic_id, tuple(partitions), dict(info.config),
                                Cluster.topic_schema(info))

    # -- log dirs and replicas -------------------------------------------------------

    def describe_log_dirs(self) -> list[LogDirDescription]:
        replicas: dict[int, int] = {}
        leaders: dict[int, int] = {}
        for name in self.cluster.list_topics():
            for placement in self.cluster.topic(name).partitions:
                leaders[placement.leader] = leaders.get(placement.leader, 0) + 1
                for replica in placement.replicas:
                    replicas[replica] = replicas.get(replica, 0) + 1
        paths = self.cluster.log_dir_paths()
        return [LogDirDescription(i, paths[i], online, replicas.get(i, 0), leaders.get(i, 0),
                                  _tree_bytes(paths[i]))
                for i, _, online in self.cluster.metadata.log_dirs()]

    def take_log_dir_offline(self, log_dir_id: int) -> int:
        """Controlled shutdown of a log dir; returns partitions moved off it."""
        return self.cluster.take_log_dir_offline(log_dir_id)

    def set_log_dir_online(self, log_dir_id: int) -> None:
        self.cluster.set_log_dir_online(log_dir_id)

    def elect_leaders(self, topics: list[str] | None = None) -> int:
        """Preferred leader election; returns partitions whose leader changed."""
        return replica_ops.elect_preferred_leaders(self.cluster, topics)

    def sync_replicas(self, topics: list[str] | None = None) -> dict[str, int]:
        """Catch up out-of-sync replicas on online log dirs (what `kstream replicator` runs)."""
        return replica_ops.sync_all(self.cluster, topics)

    def reassign_partition(self, topic: str, partition: int, replicas: list[int]) -> PartitionInfo:
        return replica_ops.reassign(self.cluster, topic, partition, replicas)

    def verify_replicas(self, topics: list[str] | None = None) -> list[replica_ops.ReplicaMismatch]:
        return replica_ops.verify_replicas(self.cluster, topics)

    def close(self) -> None:
        if self._opened is not None:
            self._opened.close()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _tree_bytes(directory: str) -> int:
    total = 0
    for root, _, files in os.walk(directory):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except FileNotFoundError:
                pass
    return total

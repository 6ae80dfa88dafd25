"""Admin: create, list, describe, alter and delete topics, confluent-kafka style.

Calls return ``{name: Future}`` like confluent-kafka's AdminClient; the work is
done before they return (the metadata store is local), so ``f.result()``
never waits, and raises the call's :class:`KStreamError` if it failed.
The Admin that first opens a cluster path creates the cluster with the
broker-side settings in its config (``log.dirs``, ``num.partitions``, ...).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pyarrow as pa

from kstream.client_config import open_client
from kstream.log.cluster import Cluster
from kstream.log.log_reader import LogReader
from kstream.log.metadata import TopicInfo
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
        _, self._cluster = open_client(_ADMIN_OPTIONS, config, kwargs, "an Admin")

    @property
    def cluster(self) -> Cluster:
        return self._cluster

    def create_topics(self, new_topics: list[NewTopic], **_: Any) -> dict[str, Future[TopicInfo]]:
        return {
            t.topic: _done(lambda t=t: self._cluster.create_topic(
                t.topic, t.num_partitions, t.replication_factor, t.config, t.schema))
            for t in new_topics
        }

    def delete_topics(self, topics: list[str], **_: Any) -> dict[str, Future[None]]:
        return {name: _done(lambda name=name: self._cluster.delete_topic(name)) for name in topics}

    def create_partitions(self, new_partitions: list[NewPartitions], **_: Any
                          ) -> dict[str, Future[TopicInfo]]:
        return {
            p.topic: _done(lambda p=p: self._cluster.create_partitions(p.topic, p.new_total_count))
            for p in new_partitions
        }

    def alter_topic_config(self, topic: str, config: Mapping[str, Any]) -> TopicInfo:
        """Set topic overrides; a value of None removes one (back to the cluster default)."""
        return self._cluster.alter_topic_config(topic, config)

    def evolve_schema(self, topic: str, schema: pa.Schema) -> TopicInfo:
        """Add nullable columns at the end of a typed topic's schema."""
        return self._cluster.evolve_schema(topic, schema)

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> dict[str, TopicInfo]:
        """Topic name -> stored metadata (all topics, or the one named)."""
        names = [topic] if topic else self._cluster.list_topics()
        return {name: self._cluster.topic(name) for name in names}

    def describe_topics(self, topics: list[str]) -> dict[str, Future[TopicDescription]]:
        return {name: _done(lambda name=name: self.describe_topic(name)) for name in topics}

    def describe_topic(self, name: str) -> TopicDescription:
        info = self._cluster.topic(name)
        partitions = []
        for placement in info.partitions:
            handle = self._cluster.partition(info, placement.partition)
            reader: LogReader = handle.reader(check_crcs=False)
            try:
                end = reader.log_end_offset()
                partitions.append(PartitionDescription(
                    placement.partition, placement.leader, placement.replicas, placement.isr,
                    placement.leader_epoch, reader.log_start_offset(), end, handle.high_watermark() or 0,
                    _directory_bytes(handle.leader_dir)))
            finally:
                reader.close()
                handle.close()
        return TopicDescription(name, info.topic_id, tuple(partitions), dict(info.config),
                                Cluster.topic_schema(info))

    def close(self) -> None:
        self._cluster.close()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _directory_bytes(directory: str) -> int:
    try:
        return sum(entry.stat().st_size for entry in os.scandir(directory) if entry.is_file())
    except FileNotFoundError:
        return 0

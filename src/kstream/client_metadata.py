"""``list_topics()`` for Producer and Consumer: confluent-kafka's ClusterMetadata of a cluster.

Log dirs stand for brokers: a :class:`BrokerMetadata` per log dir (``id`` the
log dir id, ``host`` its path, ``port`` -1), partition leaders, replicas and
ISRs are log dir ids. A topic asked for by name that does not exist is listed
with ``error`` UNKNOWN_TOPIC_OR_PART and no partitions, as a broker answers.

(A stand-in until the AdminClient's ``kstream.admin.metadata.cluster_metadata``
lands; the shapes are confluent's.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kstream.errors import TopicNotFoundError
from kstream.log.cluster import Cluster
from kstream.message import KafkaError


@dataclass
class BrokerMetadata:
    id: int
    host: str
    port: int = -1

    def __str__(self) -> str:
        return f"{self.host}:{self.port}/{self.id}"


@dataclass
class PartitionMetadata:
    id: int
    leader: int
    replicas: list[int]
    isrs: list[int]
    error: Any = None


@dataclass
class TopicMetadata:
    topic: str
    partitions: dict[int, PartitionMetadata] = field(default_factory=dict)
    error: Any = None

    def __str__(self) -> str:
        return self.topic


@dataclass
class ClusterMetadata:
    cluster_id: str | None = None
    controller_id: int = -1
    brokers: dict[int, BrokerMetadata] = field(default_factory=dict)
    topics: dict[str, TopicMetadata] = field(default_factory=dict)
    orig_broker_id: int = -1
    orig_broker_name: str | None = None


def cluster_metadata(cluster: Cluster, topic: str | None = None) -> ClusterMetadata:
    """The cluster's brokers (log dirs) and topics (one, if ``topic`` is given)."""
    brokers = {log_dir_id: BrokerMetadata(log_dir_id, path)
               for log_dir_id, path in cluster.log_dir_paths().items()}
    metadata = ClusterMetadata(cluster.cluster_id, min(brokers, default=-1), brokers,
                               orig_broker_id=min(brokers, default=-1), orig_broker_name="embedded")
    for name in [topic] if topic is not None else cluster.list_topics():
        try:
            info = cluster.topic(name)
        except TopicNotFoundError as err:
            metadata.topics[name] = TopicMetadata(name, {}, KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART,
                                                                       str(err), err))
            continue
        metadata.topics[name] = TopicMetadata(name, {
            p.partition: PartitionMetadata(p.partition, p.leader, list(p.replicas), list(p.isr))
            for p in info.partitions})
    return metadata

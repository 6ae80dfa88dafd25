"""Cluster metadata as confluent's ``list_topics()`` returns it.

:func:`cluster_metadata` builds a :class:`ClusterMetadata` from an open
cluster; the AdminClient, Producer and Consumer ``list_topics`` all call it.
Log dirs stand for brokers (broker id = log dir id, host = its path, port -1);
kstream has no controller (the metadata store decides), so ``controller_id``
is -1. A partition whose leader's log dir is offline (its last in-sync replica
is there) has leader -1 and the error LEADER_NOT_AVAILABLE; an unknown topic
asked for by name comes back with UNKNOWN_TOPIC_OR_PART and nothing is
created (kstream never auto-creates topics). Reads only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kstream._model import Node
from kstream.errors import TopicNotFoundError
from kstream.message import KafkaError

if TYPE_CHECKING:
    from kstream.log.cluster.cluster import Cluster
    from kstream.log.cluster.metadata import PartitionInfo


class BrokerMetadata:
    """A "broker": one log dir."""

    def __init__(self, id: int, host: str, port: int = -1):
        self.id = id
        self.host = host
        self.port = port

    def __repr__(self) -> str:
        return f"BrokerMetadata({self.id}, {self.host}:{self.port})"

    def __str__(self) -> str:
        return f"{self.host}:{self.port}/{self.id}"


class PartitionMetadata:
    """One partition: ``id``, ``leader`` (log dir id, -1 when offline), ``replicas``, ``isrs``,
    ``error`` (a KafkaError or None)."""

    def __init__(self, id: int, leader: int, replicas: list[int], isrs: list[int],
                 error: KafkaError | None = None):
        self.id = id
        self.leader = leader
        self.replicas = replicas
        self.isrs = isrs
        self.error = error

    def __repr__(self) -> str:
        error = f", {self.error}" if self.error is not None else ""
        return f"PartitionMetadata({self.id}{error})"

    def __str__(self) -> str:
        return str(self.id)


class TopicMetadata:
    """One topic: ``topic``, ``partitions`` (id -> PartitionMetadata), ``error``."""

    def __init__(self, topic: str, partitions: dict[int, PartitionMetadata] | None = None,
                 error: KafkaError | None = None):
        self.topic = topic
        self.partitions = partitions if partitions is not None else {}
        self.error = error

    def __repr__(self) -> str:
        error = f", {self.error}" if self.error is not None else ""
        return f"TopicMetadata({self.topic}, {len(self.partitions)} partitions{error})"

    def __str__(self) -> str:
        return self.topic


class ClusterMetadata:
    """``cluster_id``, ``controller_id`` (-1), ``brokers`` (id -> BrokerMetadata), ``topics``
    (name -> TopicMetadata), ``orig_broker_id``/``orig_broker_name`` (who answered: the path)."""

    def __init__(self, cluster_id: str, brokers: dict[int, BrokerMetadata],
                 topics: dict[str, TopicMetadata], orig_broker_name: str):
        self.cluster_id = cluster_id
        self.controller_id = -1
        self.brokers = brokers
        self.topics = topics
        self.orig_broker_id = -1
        self.orig_broker_name = orig_broker_name

    def __repr__(self) -> str:
        return f"ClusterMetadata({self.cluster_id})"

    def __str__(self) -> str:
        return str(self.cluster_id)


class GroupMember:
    """A member as the deprecated ``list_groups`` reports it."""

    def __init__(self, id: str, client_id: str, client_host: str, metadata: bytes = b"",
                 assignment: bytes = b""):
        self.id = id
        self.client_id = client_id
        self.client_host = client_host
        self.metadata = metadata
        self.assignment = assignment


class GroupMetadata:
    """A group as the deprecated ``list_groups`` reports it."""

    def __init__(self, broker: BrokerMetadata | None, id: str, error: KafkaError | None, state: str,
                 protocol_type: str, protocol: str, members: list[GroupMember]):
        self.broker = broker
        self.id = id
        self.error = error
        self.state = state
        self.protocol_type = protocol_type
        self.protocol = protocol
        self.members = members

    def __repr__(self) -> str:
        return f"GroupMetadata({self.id})"

    def __str__(self) -> str:
        return self.id


class DescribeClusterResult:
    """``controller`` (None: kstream has none), ``nodes`` (the log dirs), ``cluster_id``,
    ``authorized_operations`` (None unless asked for; then every cluster operation, as Kafka
    without an authorizer)."""

    def __init__(self, controller: Node | None, nodes: list[Node], cluster_id: str,
                 authorized_operations: list[Any] | None = None):
        self.controller = controller
        self.nodes = nodes
        self.cluster_id = cluster_id
        self.authorized_operations = authorized_operations


def log_dir_nodes(cluster: Cluster) -> dict[int, Node]:
    """Every log dir as a Node (id -> Node), online or not."""
    paths = cluster.log_dir_paths()
    return {i: Node(i, paths[i]) for i in sorted(paths)}


def online_log_dirs(cluster: Cluster) -> dict[int, bool]:
    return {log_dir: online for log_dir, _, online in cluster.metadata.log_dirs()}


def partition_metadata(placement: PartitionInfo, online: dict[int, bool]) -> PartitionMetadata:
    """A placement as PartitionMetadata; offline when the leader's log dir is offline."""
    if online.get(placement.leader, False):
        return PartitionMetadata(placement.partition, placement.leader, list(placement.replicas),
                                 list(placement.isr))
    error = KafkaError(KafkaError.LEADER_NOT_AVAILABLE,
                        f"partition {placement.topic}-{placement.partition} is offline: its leader's "
                        f"log dir {placement.leader} is offline (bring it back with "
                        f"`kstream log-dirs online {placement.leader}`)")
    return PartitionMetadata(placement.partition, -1, list(placement.replicas),
                             [r for r in placement.isr if online.get(r, False)], error)


def cluster_metadata(cluster: Cluster, topic: str | None = None) -> ClusterMetadata:
    """The metadata of every topic, or of ``topic`` only (with UNKNOWN_TOPIC_OR_PART if it
    does not exist); what confluent's ``list_topics`` returns. Reads only."""
    online = online_log_dirs(cluster)
    brokers = {node.id: BrokerMetadata(node.id, node.host) for node in log_dir_nodes(cluster).values()}
    topics: dict[str, TopicMetadata] = {}
    for name in [topic] if topic is not None else cluster.list_topics():
        try:
            info = cluster.topic(name)
        except TopicNotFoundError as err:
            topics[name] = TopicMetadata(name, {}, KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, str(err)))
            continue
        topics[name] = TopicMetadata(name, {p.partition: partition_metadata(p, online)
                                            for p in info.partitions})
    return ClusterMetadata(cluster.cluster_id, brokers, topics, f"kstream:{cluster.path}")

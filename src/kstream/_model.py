"""Shared value types of the confluent-kafka API (its ``confluent_kafka._model``).

Small, plain types used by the admin client and, through ``kstream``'s
top-level re-exports, by user code: :class:`Node`, :class:`TopicCollection`,
:class:`TopicPartitionInfo`, :class:`ConsumerGroupTopicPartitions` and the
enums :class:`ConsumerGroupState`, :class:`ConsumerGroupType`,
:class:`IsolationLevel`, :class:`ElectionType`. Enum values are librdkafka's,
so code that stores or compares them keeps working. A log dir plays the part
of a broker (a :class:`Node`'s id is the log dir id, its host the path).
"""

from __future__ import annotations

from enum import Enum
from functools import total_ordering
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kstream.message import TopicPartition


@total_ordering
class _OrderedEnum(Enum):
    def __lt__(self, other: object) -> bool:
        if not isinstance(other, type(self)):
            return NotImplemented
        return bool(self.value < other.value)


class ConsumerGroupState(_OrderedEnum):
    """A consumer group's state (librdkafka's numbering)."""

    UNKNOWN = 0
    PREPARING_REBALANCING = 1
    COMPLETING_REBALANCING = 2
    STABLE = 3
    DEAD = 4
    EMPTY = 5

    @classmethod
    def from_kstream(cls, state: str) -> ConsumerGroupState:
        """The state of a kstream group row (``Stable``, ``PreparingRebalance``...)."""
        return _KSTREAM_STATES.get(state, cls.UNKNOWN)


_KSTREAM_STATES = {
    "Empty": ConsumerGroupState.EMPTY,
    "Stable": ConsumerGroupState.STABLE,
    "PreparingRebalance": ConsumerGroupState.PREPARING_REBALANCING,
    "CompletingRebalance": ConsumerGroupState.COMPLETING_REBALANCING,
    "Dead": ConsumerGroupState.DEAD,
}


class ConsumerGroupType(_OrderedEnum):
    """The rebalance protocol of a group; kstream's groups are all CLASSIC (eager)."""

    UNKNOWN = 0
    CONSUMER = 1
    CLASSIC = 2


class IsolationLevel(_OrderedEnum):
    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


class ElectionType(_OrderedEnum):
    PREFERRED = 0
    UNCLEAN = 1


class Node:
    """A broker; in kstream a log dir (``id`` = log dir id, ``host`` = its path, no port)."""

    def __init__(self, id: int, host: str, port: int = -1, rack: str | None = None):
        self.id = id
        self.id_string = str(id)
        self.host = host
        self.port = port
        self.rack = rack

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Node) and (self.id, self.host, self.port) == (other.id, other.host, other.port)

    def __hash__(self) -> int:
        return hash((self.id, self.host, self.port))

    def __repr__(self) -> str:
        return f"Node(id={self.id}, host={self.host!r}, port={self.port})"

    def __str__(self) -> str:
        # confluent-kafka's shape, so printed nodes read the same with either library.
        return f"({self.id}) {self.host}:{self.port} {f'(Rack - {self.rack})' if self.rack else ''}"


class TopicCollection:
    """Topic names, as describe_topics takes them."""

    def __init__(self, topic_names: list[str]):
        self.topic_names = topic_names


class TopicPartitionInfo:
    """One partition as describe_topics reports it: leader, replicas and ISR as Nodes."""

    def __init__(self, id: int, leader: Node | None, replicas: list[Node], isr: list[Node]):
        self.id = id
        self.leader = leader
        self.replicas = replicas
        self.isr = isr

    def __repr__(self) -> str:
        return (f"TopicPartitionInfo(id={self.id}, leader={self.leader}, "
                f"replicas={self.replicas}, isr={self.isr})")


class ConsumerGroupTopicPartitions:
    """A group id and (optionally) its partitions, for the group offsets calls."""

    def __init__(self, group_id: Any = None, topic_partitions: list[TopicPartition] | None = None):
        self.group_id = group_id
        self.topic_partitions = topic_partitions

    def __hash__(self) -> int:
        return hash(self.group_id)

    def __repr__(self) -> str:
        return (f"ConsumerGroupTopicPartitions(group_id={self.group_id!r}, "
                f"topic_partitions={self.topic_partitions!r})")

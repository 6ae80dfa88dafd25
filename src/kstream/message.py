"""Records and positions as confluent-kafka shapes them: Message, TopicPartition, KafkaError.

``Message`` is a tuple underneath (cheap to build a million of) with
confluent-kafka's accessor methods, so porting code keeps ``msg.value()``.
"""

from __future__ import annotations

import builtins
from typing import Any

OFFSET_BEGINNING = -2
OFFSET_END = -1
OFFSET_STORED = -1000
OFFSET_INVALID = -1001

TIMESTAMP_NOT_AVAILABLE = 0
TIMESTAMP_CREATE_TIME = 1
TIMESTAMP_LOG_APPEND_TIME = 2


class KafkaError:
    """An error or event attached to a Message or a delivery report (not an exception)."""

    _PARTITION_EOF = -191
    _BAD_MSG = -199  # librdkafka's: a corrupt message (checksum or framing)
    MSG_SIZE_TOO_LARGE = 10
    UNKNOWN_TOPIC_OR_PART = 3
    KAFKA_STORAGE_ERROR = 56
    UNKNOWN = -1

    __slots__ = ("_code", "_reason", "exception")

    def __init__(self, code: int, reason: str = "", exception: BaseException | None = None):
        self._code = code
        self._reason = reason
        self.exception = exception

    def code(self) -> int:
        return self._code

    def str(self) -> str:
        return self._reason

    def name(self) -> builtins.str:  # (``str`` is the method above, in this class)
        return _ERROR_NAMES.get(self._code, "UNKNOWN")

    def fatal(self) -> bool:
        return False

    def retriable(self) -> bool:
        return False

    def __repr__(self) -> builtins.str:
        return f"KafkaError{{code={self.name()},val={self._code},str=\"{self._reason}\"}}"

    __str__ = __repr__


_ERROR_NAMES = {
    KafkaError._PARTITION_EOF: "_PARTITION_EOF",
    KafkaError._BAD_MSG: "_BAD_MSG",
    KafkaError.MSG_SIZE_TOO_LARGE: "MSG_SIZE_TOO_LARGE",
    KafkaError.UNKNOWN_TOPIC_OR_PART: "UNKNOWN_TOPIC_OR_PART",
    KafkaError.KAFKA_STORAGE_ERROR: "KAFKA_STORAGE_ERROR",
}


class MessageSource:
    """What the records of one fetched batch share: topic, partition, timestamp type, error."""

    __slots__ = ("error", "partition", "timestamp_type", "topic")

    def __init__(self, topic: str, partition: int, timestamp_type: int = TIMESTAMP_CREATE_TIME,
                 error: KafkaError | None = None):
        self.topic = topic
        self.partition = partition
        self.timestamp_type = timestamp_type
        self.error = error


class Message(tuple):
    """One consumed or delivered record.

    A tuple underneath, (source, offset, key, value, headers, timestamp ms),
    whose shared :class:`MessageSource` holds topic, partition, timestamp type
    and error: building a million of them stays cheap.
    """

    __slots__ = ()

    def topic(self) -> str:
        return self[0].topic

    def partition(self) -> int:
        return self[0].partition

    def offset(self) -> int:
        return self[1]

    def key(self) -> Any:
        return self[2]

    def value(self) -> Any:
        return self[3]

    def headers(self) -> list[tuple[str, bytes | None]] | None:
        return self[4]

    def timestamp(self) -> tuple[int, int]:
        """(timestamp type, milliseconds since the epoch)."""
        return self[0].timestamp_type, self[5]

    def error(self) -> KafkaError | None:
        return self[0].error

    def latency(self) -> float | None:
        """Seconds from produce() to the delivery report (delivery reports only)."""
        return getattr(self[0], "latency", None)

    def leader_epoch(self) -> int | None:
        """Epoch of the leader that appended the record (consumed records only)."""
        return getattr(self[0], "leader_epoch", None)

    def __len__(self) -> int:
        value = self[3]
        return 0 if value is None else len(value)

    def __repr__(self) -> str:
        return (f"Message(topic={self.topic()!r}, partition={self.partition()}, offset={self[1]}, "
                f"key={self[2]!r}, value={_short(self[3])})")


def make_message(topic: str, partition: int, offset: int, key: Any = None, value: Any = None,
                 headers: Any = None, timestamp_type: int = TIMESTAMP_CREATE_TIME,
                 timestamp_ms: int = 0, error: KafkaError | None = None) -> Message:
    source = MessageSource(topic, partition, timestamp_type, error)
    return Message((source, offset, key, value, headers, timestamp_ms))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class TopicPartition:
    """A topic, a partition, and an offset (meaning depends on the call)."""

    __slots__ = ("error", "leader_epoch", "metadata", "offset", "partition", "topic")

    def __init__(self, topic: str, partition: int = -1, offset: int = OFFSET_INVALID,
                 metadata: str | None = None, leader_epoch: int | None = None):
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.metadata = metadata
        self.leader_epoch = leader_epoch
        self.error: KafkaError | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TopicPartition) and (self.topic, self.partition, self.offset) == (
            other.topic, other.partition, other.offset)

    def __lt__(self, other: TopicPartition) -> bool:
        return (self.topic, self.partition, self.offset) < (other.topic, other.partition, other.offset)

    def __hash__(self) -> int:
        return hash((self.topic, self.partition))

    def __repr__(self) -> str:
        return f"TopicPartition{{topic={self.topic},partition={self.partition},offset={self.offset}}}"

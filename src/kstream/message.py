"""Records and positions as confluent-kafka shapes them: Message, TopicPartition, constants.

``Message`` has confluent-kafka's accessors (``msg.value()``) and, as in
confluent-kafka >= 2, a keyword constructor and setters, so users' own tests
can build messages. Consumers build a million of them: the records of one
fetched batch share one :class:`MessageSource` (topic, partition, timestamp
type, error), and a message holds only its own offset, key, value, headers
and timestamp. ``KafkaError`` lives in :mod:`kstream.error` and is
re-exported here, where it used to be.
"""

from __future__ import annotations

import copy
from typing import Any

from kstream.error import KafkaError  # re-exported: it used to live here
from kstream.errors import ConfigError

# Logical offsets (librdkafka's RD_KAFKA_OFFSET_*).
OFFSET_BEGINNING = -2
OFFSET_END = -1
OFFSET_STORED = -1000
OFFSET_INVALID = -1001

# Message.timestamp() types (librdkafka's RD_KAFKA_TIMESTAMP_*).
TIMESTAMP_NOT_AVAILABLE = 0
TIMESTAMP_CREATE_TIME = 1
TIMESTAMP_LOG_APPEND_TIME = 2

_PARTITION_UNASSIGNED = -1  # librdkafka's RD_KAFKA_PARTITION_UA: "no partition (yet)"


class MessageSource:
    """What the records of one fetched batch share: topic, partition, timestamp type, error."""

    __slots__ = ("error", "partition", "timestamp_type", "topic")

    def __init__(self, topic: str | None, partition: int | None,
                 timestamp_type: int = TIMESTAMP_CREATE_TIME, error: KafkaError | None = None):
        self.topic = topic
        self.partition = partition
        self.timestamp_type = timestamp_type
        self.error = error

    def replace(self, **changes: Any) -> MessageSource:
        """A copy with ``changes`` (a setter on one message must not change its batch-mates);
        a subclass's extra fields (a batch's leader epoch or latency) are copied too."""
        source = copy.copy(self)
        for name, value in changes.items():
            setattr(source, name, value)
        return source


class _OwnSource(MessageSource):
    """The source of a message built with the keyword constructor (or :func:`make_message`):
    its own, with the latency and leader epoch given (a consumed or delivered message reads
    those from its batch's source; a message keeps no slots for them)."""

    __slots__ = ("latency", "leader_epoch")

    def __init__(self, topic: str | None, partition: int | None, timestamp_type: int,
                 error: KafkaError | None, latency: float | None, leader_epoch: int | None):
        super().__init__(topic, partition, timestamp_type, error)
        self.latency = latency
        self.leader_epoch = leader_epoch


class Message:
    """One consumed or delivered record, or an error/event (``error()`` is not None).

    ``Message(topic=None, partition=None, offset=None, key=None, value=None,
    headers=None, error=None, timestamp=(TIMESTAMP_NOT_AVAILABLE, 0),
    latency=None, leader_epoch=None)`` as in confluent-kafka (positionally in
    that order too). Accessors return None for what is not available: a
    negative partition, offset, latency or leader epoch reads as None.
    ``len(msg)`` is the value's length. Not thread-safe to mutate (the setters),
    safe to share read-only.
    """

    # Six slots, the fewest that hold what differs between records: a message built per record
    # (poll(): a million a second) costs a store per slot. Latency and leader epoch are its source's.
    __slots__ = ("_headers", "_key", "_offset", "_source", "_timestamp", "_value")

    def __init__(self, topic: Any = None, partition: int | None = None, offset: int | None = None,
                 key: Any = None, value: Any = None, headers: Any = None,
                 error: KafkaError | None = None, timestamp: tuple[int, int] | None = None,
                 latency: float | None = None, leader_epoch: int | None = None):
        if type(topic) is tuple:
            # kstream's consumer builds messages from rows (source, offset, key, value,
            # headers, timestamp ms): map(Message, rows), no keyword parsing per record.
            (self._source, self._offset, self._key, self._value, self._headers,
             self._timestamp) = topic
            return
        timestamp_type, timestamp_ms = (TIMESTAMP_NOT_AVAILABLE, 0) if timestamp is None else timestamp
        self._source = _OwnSource(topic, partition, timestamp_type, error, latency, leader_epoch)
        self._offset = offset
        self._key = key
        self._value = value
        self._headers = headers
        self._timestamp = timestamp_ms

    def topic(self) -> str | None:
        return self._source.topic

    def partition(self) -> int | None:
        partition = self._source.partition
        return None if partition is None or partition < 0 else partition

    def offset(self) -> int | None:
        offset = self._offset
        return None if offset is None or offset < 0 else offset

    def key(self) -> Any:
        return self._key

    def value(self) -> Any:
        return self._value

    def headers(self) -> list[tuple[str, bytes | None]] | None:
        return self._headers

    def timestamp(self) -> tuple[int, int]:
        """(timestamp type, milliseconds since the epoch); ignore the time if the type is
        ``TIMESTAMP_NOT_AVAILABLE``."""
        return self._source.timestamp_type, self._timestamp

    def error(self) -> KafkaError | None:
        return self._source.error

    def latency(self) -> float | None:
        """Seconds from produce() to the delivery report (delivery reports only): its
        source's (one ``latency`` for a batch's reports, or the one given to the constructor)."""
        latency = getattr(self._source, "latency", None)
        return None if latency is None or latency < 0 else latency

    def leader_epoch(self) -> int | None:
        """Epoch of the leader that appended the record: its source's (its batch's, or the
        one given to the constructor)."""
        epoch = getattr(self._source, "leader_epoch", None)
        return None if epoch is None or epoch < 0 else epoch

    def set_headers(self, headers: Any) -> None:
        self._headers = headers

    def set_key(self, key: Any) -> None:
        self._key = key

    def set_value(self, value: Any) -> None:
        self._value = value

    def set_topic(self, topic: str) -> None:
        self._source = self._source.replace(topic=topic)

    def set_error(self, error: KafkaError | None) -> None:
        self._source = self._source.replace(error=error)

    def _fields(self) -> tuple[Any, ...]:
        return (self.topic(), self.partition(), self.offset(), self._key, self._value,
                self._headers, self.error(), self.timestamp(), self.latency(), self.leader_epoch())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash((self._source.topic, self._source.partition, self._offset))

    def __len__(self) -> int:
        value = self._value
        return 0 if value is None else len(value)

    def __repr__(self) -> str:
        return (f"Message(topic={self.topic()!r}, partition={self.partition()}, "
                f"offset={self.offset()}, key={_short(self._key)}, value={_short(self._value)}"
                + (f", error={self.error()!r})" if self.error() is not None else ")"))


def make_message(topic: str, partition: int, offset: int, key: Any = None, value: Any = None,
                 headers: Any = None, timestamp_type: int = TIMESTAMP_CREATE_TIME,
                 timestamp_ms: int = 0, error: KafkaError | None = None,
                 latency: float | None = None) -> Message:
    """A message of its own (not sharing a batch's source): events and delivery reports."""
    return Message((_OwnSource(topic, partition, timestamp_type, error, latency, None), offset, key, value,
                    headers, timestamp_ms))


def position_after(message: Message) -> TopicPartition:
    """Where a consumer goes on after ``message``: its partition at offset + 1 (with the
    message's leader epoch), what ``commit(message=...)`` and ``store_offsets(message=...)``
    record. ConfigError for a message without topic, partition or offset (one built by hand)."""
    topic, partition, offset = message.topic(), message.partition(), message.offset()
    if topic is None or partition is None or offset is None:
        raise ConfigError(f"{message!r} has no topic, partition and offset to commit or store")
    return TopicPartition(topic, partition, offset + 1, leader_epoch=message.leader_epoch())


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class TopicPartition:
    """A topic, a partition, and an offset (its meaning depends on the call), as confluent-kafka's.

    ``TopicPartition(topic, partition=-1, offset=OFFSET_INVALID, metadata=None,
    leader_epoch=None)``; ``error`` is set by calls that report per-partition
    results. As in confluent-kafka, equality, ordering and hash look at topic
    and partition only, so ``tp in consumer.assignment()`` holds whatever the
    offsets; compare ``.offset`` to compare offsets.
    """

    __slots__ = ("error", "leader_epoch", "metadata", "offset", "partition", "topic")

    def __init__(self, topic: str, partition: int = _PARTITION_UNASSIGNED,
                 offset: int = OFFSET_INVALID, metadata: str | None = None,
                 leader_epoch: int | None = None):
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.metadata = metadata
        self.leader_epoch = None if leader_epoch is None or leader_epoch < 0 else leader_epoch
        self.error: KafkaError | None = None

    def _key(self) -> tuple[str, int]:
        return self.topic, self.partition

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TopicPartition):
            return NotImplemented
        return self._key() == other._key()

    def __ne__(self, other: object) -> bool:
        if not isinstance(other, TopicPartition):
            return NotImplemented
        return self._key() != other._key()

    def __lt__(self, other: TopicPartition) -> bool:
        return self._key() < other._key()

    def __le__(self, other: TopicPartition) -> bool:
        return self._key() <= other._key()

    def __gt__(self, other: TopicPartition) -> bool:
        return self._key() > other._key()

    def __ge__(self, other: TopicPartition) -> bool:
        return self._key() >= other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"TopicPartition{{topic={self.topic},partition={self.partition},offset={self.offset},"
                f"leader_epoch={self.leader_epoch},error={self.error}}}")

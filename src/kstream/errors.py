"""The one error hierarchy of kstream.

Every failure a user can cause or meet (bad options, bad bytes on disk, a
missing topic, a failed disk) is a :class:`KStreamError`; ``assert`` is kept
for programmer errors. Messages say what was wrong and what to do.

Every KStreamError is also confluent-kafka's ``KafkaException``
(:mod:`kstream.error`): ``args[0]`` is a ``KafkaError`` carrying the librdkafka
code that the class names in ``error_name`` (``TopicNotFoundError`` ->
``UNKNOWN_TOPIC_OR_PART``), so code ported from confluent-kafka that catches
``KafkaException`` and looks at ``err.args[0].code()`` keeps working, while
``str(err)`` stays kstream's message. A new class sets ``error_name`` to a name
of :class:`kstream.error.KafkaError` (checked when the class is defined) and is
appended at the end of this file.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kstream.error import KafkaError, KafkaException, code_of


class KStreamError(KafkaException):
    """Base class of every error kstream raises on purpose.

    ``KStreamError(message)``: ``args[0]`` is ``KafkaError(code, message)``
    with the class's code and flags; ``str(err)`` is ``message``. Built from a
    ``KafkaError`` instead, it keeps that error (its code and reason).
    """

    error_name: ClassVar[str] = "_FAIL"
    """librdkafka name of the code this error carries (a ``KafkaError`` attribute)."""
    error_retriable: ClassVar[bool] = False
    """True if retrying the failed call may succeed (``KafkaError.retriable()``)."""
    error_fatal: ClassVar[bool] = False
    """True if the client that raised it cannot be used any more (``KafkaError.fatal()``)."""
    error_txn_requires_abort: ClassVar[bool] = False
    """True if the open transaction must be aborted (``KafkaError.txn_requires_abort()``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        try:
            code_of(cls.error_name)
        except KeyError:
            raise TypeError(f"{cls.__name__}.error_name {cls.error_name!r} is not a librdkafka "
                            "error name (an attribute of kstream.error.KafkaError)") from None

    def __init__(self, message: object = "", *details: object) -> None:
        if isinstance(message, KafkaError):
            error = message
        else:
            error = KafkaError(code_of(self.error_name), str(message), fatal=self.error_fatal,
                               retriable=self.error_retriable,
                               txn_requires_abort=self.error_txn_requires_abort)
        super().__init__(error, *details)

    @property
    def error(self) -> KafkaError:
        """The ``KafkaError`` this exception carries (``args[0]``)."""
        return self.args[0]

    def __str__(self) -> str:
        return self.error.str()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.error.str()!r}, code={self.error.name()})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuild without calling __init__ (subclasses take other arguments), so errors
        # cross process boundaries (Spark workers, multiprocessing) intact.
        return _restore, (type(self), self.args, self.__dict__)


def _restore(cls: type[KStreamError], args: tuple[Any, ...], state: dict[str, Any]) -> KStreamError:
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class ConfigError(KStreamError, ValueError):
    """An option has a bad name or value; the message names both and what is allowed."""

    error_name = "_INVALID_ARG"


class ClusterError(KStreamError):
    """The cluster path is missing, not a kstream cluster, or of another format version."""

    error_name = "_TRANSPORT"  # the client cannot use its cluster, as a broker it cannot reach


class ClusterNotFoundError(ClusterError):
    """No kstream cluster at the path given (and the call may not create one)."""

    error_name = "_ALL_BROKERS_DOWN"  # nothing there to talk to


class TopicNotFoundError(KStreamError):
    """The topic does not exist (the message lists the topics that do)."""

    error_name = "UNKNOWN_TOPIC_OR_PART"


class TopicExistsError(KStreamError):
    """A topic of that name already exists."""

    error_name = "TOPIC_ALREADY_EXISTS"


class PartitionNotFoundError(KStreamError):
    """The partition number is not in the topic."""

    error_name = "_UNKNOWN_PARTITION"


class InvalidRecordError(KStreamError, ValueError):
    """A record or batch given to a producer is malformed (types, columns, schema)."""

    error_name = "INVALID_RECORD"


class RecordTooLargeError(InvalidRecordError):
    """A record or batch is larger than ``message.max.bytes``."""

    error_name = "MSG_SIZE_TOO_LARGE"


class OffsetOutOfRangeError(KStreamError):
    """The requested offset is below the log start or above the log end offset."""

    error_name = "OFFSET_OUT_OF_RANGE"


class CorruptBatchError(KStreamError):
    """Stored bytes fail their checksum or framing.

    Carries the file ``path``, the byte ``position`` in it and the ``offset``
    (base offset of the frame) where known, so an operator can find it.
    """

    error_name = "_BAD_MSG"

    def __init__(self, message: str, *, path: str, position: int, offset: int | None = None):
        where = f"{path} at position {position}"
        if offset is not None:
            where += f" (offset {offset})"
        super().__init__(f"{message}: {where}")
        self.path = path
        self.position = position
        self.offset = offset


class ResourceExhaustedError(KStreamError):
    """The process ran out of something that is not the disk's fault (file descriptors,
    memory); the log dir stays online."""

    error_name = "_CRIT_SYS_RESOURCE"


class LogDirOfflineError(KStreamError):
    """A log dir failed (I/O error, missing, failed fsync) and was taken offline."""

    error_name = "KAFKA_STORAGE_ERROR"


class PartitionOfflineError(LogDirOfflineError):
    """The partition's last in-sync replica is on an offline log dir: no write can succeed
    until an operator brings that dir back (retrying does not help)."""


class ReplicaDivergedError(KStreamError):
    """A follower replica does not end where the leader's next frame starts."""

    error_name = "_LOG_TRUNCATION"


class NotEnoughReplicasError(KStreamError):
    """Fewer in-sync replicas than ``min.insync.replicas`` for an ``acks=all`` write."""

    error_name = "NOT_ENOUGH_REPLICAS"
    error_retriable = True  # as in Kafka: the ISR may grow back


class OutOfOrderSequenceError(KStreamError):
    """An idempotent producer's sequence number skipped ahead: records were lost in between."""

    error_name = "OUT_OF_ORDER_SEQUENCE_NUMBER"


class FencedError(KStreamError):
    """A newer producer, member or query took over; this one may not write."""

    error_name = "_FENCED"


class SchemaError(InvalidRecordError):
    """A typed topic's schema change or a batch's schema is incompatible."""


class GroupBusyError(KStreamError):
    """A consumer group has active members (or a running Spark query) that an operation
    would disturb; the message says who and what to do."""

    error_name = "NON_EMPTY_GROUP"


class NotSupportedError(KStreamError):
    """A confluent-kafka / Kafka feature kstream does not have on purpose (ACLs, SCRAM,
    quotas, ...); the message names the feature and what kstream offers instead."""

    error_name = "_NOT_IMPLEMENTED"


class InvalidPartitionsError(ConfigError):
    """A partition count is out of range, or a new count does not grow the topic."""

    error_name = "INVALID_PARTITIONS"


class InvalidReplicationFactorError(ConfigError):
    """A replication factor (or replica assignment) the cluster's online log dirs cannot hold."""

    error_name = "INVALID_REPLICATION_FACTOR"


class GroupNotFoundError(KStreamError):
    """No consumer group of that name (no members and no committed offsets)."""

    error_name = "GROUP_ID_NOT_FOUND"


class IllegalGenerationError(FencedError):
    """Offsets sent to a transaction (``send_offsets_to_transaction``) name a consumer group
    member that left the group or a generation the group has moved past (it rebalanced and
    the partitions may be someone else's): refused, nothing of them is committed. The
    producer is not fenced: abort the transaction and carry on from the group's offsets."""

    error_name = "ILLEGAL_GENERATION"
    error_txn_requires_abort = True


class UnstableOffsetCommitError(KStreamError):
    """A group's committed offsets are held by a transaction that carries offsets for the
    group and could not be ended in time (Kafka's UNSTABLE_OFFSET_COMMIT): try again."""

    error_name = "UNSTABLE_OFFSET_COMMIT"
    error_retriable = True  # as in librdkafka

class PartitionNotAssignedError(ConfigError):
    """A call that needs an assigned partition (seek, store_offsets, ...) got one that is not."""

    error_name = "_UNKNOWN_PARTITION"


class NoOffsetError(KStreamError):
    """commit() found no offset to commit (nothing consumed or stored since assignment)."""

    error_name = "_NO_OFFSET"


class InvalidHeaderError(InvalidRecordError, TypeError):
    """Record headers are not a list of (str, bytes | str | None) pairs or a dict of them
    (a TypeError too, as confluent-kafka raises)."""

    error_name = "_INVALID_ARG"


class AvroNotAvailableError(NotSupportedError, ImportError):
    """confluent-kafka's legacy Avro clients (``kstream.avro.AvroProducer``/``AvroConsumer``)
    are not supported: no Schema Registry. An ImportError too, as confluent-kafka reports
    its Avro support missing, so code falling back on ``except ImportError`` does so here."""


class CheckpointError(KStreamError):
    """A Spark streaming checkpoint the sink cannot trust: its ``metadata`` file (the query's id)
    is missing or not Spark's, or it was rolled back behind a batch the sink already committed."""

    error_name = "_STATE"


class MetadataStorageError(ClusterError):
    """The cluster's metadata.db cannot be read or written: its disk is full, an I/O error,
    a read-only file system, or its WAL file was removed. The message names the file and
    says what to do; the failed call changed nothing."""

    error_name = "KAFKA_STORAGE_ERROR"


class ValueTooLargeError(KStreamError):
    """A typed record's value converts to more Python objects than ``decode.max.items``
    allows (Arrow stores a list of nulls, of empty structs or of zero-width binaries in no
    bytes, so a small record can hold millions of values): it is not converted. Read it as
    Arrow (``poll_batch()``), or raise the limit."""

    error_name = "_VALUE_DESERIALIZATION"


class InvalidConfigError(ConfigError):
    """A topic config an admin call sets (alter_configs, incremental_alter_configs) has an
    unknown name or a bad value: the code a Kafka broker answers with, ``INVALID_CONFIG``
    (a client's own bad option stays ``ConfigError``, librdkafka's ``_INVALID_ARG``)."""

    error_name = "INVALID_CONFIG"


class InvalidTransactionTimeoutError(ConfigError):
    """``init_transactions()`` of a producer whose ``transaction.timeout.ms`` is above the
    cluster's ``transaction.max.timeout.ms``: the code a Kafka broker answers with, fatal as
    librdkafka makes it (the producer's transactional calls raise it again: make a new one)."""

    error_name = "INVALID_TRANSACTION_TIMEOUT"
    error_fatal = True


class ProducerFencedError(FencedError):
    """A transactional producer was fenced: a newer instance of its ``transactional.id`` took
    over, or its transaction passed its ``transaction.timeout.ms`` and was aborted. Fatal, as
    librdkafka makes ``_FENCED``: the producer cannot be used any more (close it, make a new one)."""

    error_fatal = True

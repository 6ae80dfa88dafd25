"""The one error hierarchy of kstream.

Every failure a user can cause or meet (bad options, bad bytes on disk, a
missing topic, a failed disk) is a :class:`KStreamError`; ``assert`` is kept
for programmer errors. Messages say what was wrong and what to do.
"""

from __future__ import annotations


class KStreamError(Exception):
    """Base class of every error kstream raises on purpose."""


class ConfigError(KStreamError, ValueError):
    """An option has a bad name or value; the message names both and what is allowed."""


class ClusterError(KStreamError):
    """The cluster path is missing, not a kstream cluster, or of another format version."""


class ClusterNotFoundError(ClusterError):
    """No kstream cluster at the path given (and the call may not create one)."""


class TopicNotFoundError(KStreamError):
    """The topic does not exist (the message lists the topics that do)."""


class TopicExistsError(KStreamError):
    """A topic of that name already exists."""


class PartitionNotFoundError(KStreamError):
    """The partition number is not in the topic."""


class InvalidRecordError(KStreamError, ValueError):
    """A record or batch given to a producer is malformed (types, columns, schema)."""


class RecordTooLargeError(InvalidRecordError):
    """A record or batch is larger than ``message.max.bytes``."""


class OffsetOutOfRangeError(KStreamError):
    """The requested offset is below the log start or above the log end offset."""


class CorruptBatchError(KStreamError):
    """Stored bytes fail their checksum or framing.

    Carries the file ``path``, the byte ``position`` in it and the ``offset``
    (base offset of the frame) where known, so an operator can find it.
    """

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


class LogDirOfflineError(KStreamError):
    """A log dir failed (I/O error, missing, failed fsync) and was taken offline."""


class PartitionOfflineError(LogDirOfflineError):
    """The partition's last in-sync replica is on an offline log dir: no write can succeed
    until an operator brings that dir back (retrying does not help)."""


class ReplicaDivergedError(KStreamError):
    """A follower replica does not end where the leader's next frame starts."""


class NotEnoughReplicasError(KStreamError):
    """Fewer in-sync replicas than ``min.insync.replicas`` for an ``acks=all`` write."""


class OutOfOrderSequenceError(KStreamError):
    """An idempotent producer's sequence number skipped ahead: records were lost in between."""


class FencedError(KStreamError):
    """A newer producer, member or query took over; this one may not write."""


class SchemaError(InvalidRecordError):
    """A typed topic's schema change or a batch's schema is incompatible."""


class GroupBusyError(KStreamError):
    """A consumer group has active members (or a running Spark query) that an operation
    would disturb; the message says who and what to do."""


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

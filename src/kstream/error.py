"""confluent-kafka's error model: ``KafkaError`` codes and the ``KafkaException`` family.

The counterpart of ``confluent_kafka.error`` (plus the ``KafkaError`` and
``KafkaException`` that confluent-kafka defines in its C module):

- :class:`KafkaError` is an error *value* (not an exception): a librdkafka
  error code (``rd_kafka_resp_err_t``: negative codes are local to the client,
  ``_PARTITION_EOF``; the others are Kafka protocol errors,
  ``UNKNOWN_TOPIC_OR_PART``), a reason, and the fatal / retriable /
  transaction-requires-abort flags. It compares equal to its int code.
  Messages and delivery reports carry one in ``error()``.
- :class:`KafkaException` is the exception: ``args[0]`` is a ``KafkaError``.
  Every error kstream raises on purpose (:class:`kstream.errors.KStreamError`)
  is one, so ``except KafkaException`` catches them all.
- :class:`ConsumeError`, :class:`ProduceError` and the (de)serialization errors
  keep confluent-kafka's shapes for code that raises or catches them.

This module is imported by ``kstream.errors`` and therefore by everything: it
imports nothing from kstream.
"""

from __future__ import annotations

import builtins
from typing import Any


class KafkaError:
    """An error or event code with a reason, as confluent-kafka's ``KafkaError``.

    ``KafkaError(error, reason=None, fatal=False, retriable=False,
    txn_requires_abort=False)``: without a reason, :meth:`str` is librdkafka's
    description of the code. Equal to (and hashed as) its int code, so
    ``err == KafkaError._PARTITION_EOF`` and ``err.code() == 3`` both work.
    ``exception`` (a kstream addition) is the Python exception behind the
    error, where there is one (a corrupt batch's :class:`CorruptBatchError`).
    Immutable once built; safe to share between threads.
    """

    # librdkafka's rd_kafka_resp_err_t, by name (librdkafka's own table, rdkafka.h).
    _BEGIN = -200
    _BAD_MSG = -199
    _BAD_COMPRESSION = -198
    _DESTROY = -197
    _FAIL = -196
    _TRANSPORT = -195
    _CRIT_SYS_RESOURCE = -194
    _RESOLVE = -193
    _MSG_TIMED_OUT = -192
    _PARTITION_EOF = -191
    _UNKNOWN_PARTITION = -190
    _FS = -189
    _UNKNOWN_TOPIC = -188
    _ALL_BROKERS_DOWN = -187
    _INVALID_ARG = -186
    _TIMED_OUT = -185
    _QUEUE_FULL = -184
    _ISR_INSUFF = -183
    _NODE_UPDATE = -182
    _SSL = -181
    _WAIT_COORD = -180
    _UNKNOWN_GROUP = -179
    _IN_PROGRESS = -178
    _PREV_IN_PROGRESS = -177
    _EXISTING_SUBSCRIPTION = -176
    _ASSIGN_PARTITIONS = -175
    _REVOKE_PARTITIONS = -174
    _CONFLICT = -173
    _STATE = -172
    _UNKNOWN_PROTOCOL = -171
    _NOT_IMPLEMENTED = -170
    _AUTHENTICATION = -169
    _NO_OFFSET = -168
    _OUTDATED = -167
    _TIMED_OUT_QUEUE = -166
    _UNSUPPORTED_FEATURE = -165
    _WAIT_CACHE = -164
    _INTR = -163
    _KEY_SERIALIZATION = -162
    _VALUE_SERIALIZATION = -161
    _KEY_DESERIALIZATION = -160
    _VALUE_DESERIALIZATION = -159
    _PARTIAL = -158
    _READ_ONLY = -157
    _NOENT = -156
    _UNDERFLOW = -155
    _INVALID_TYPE = -154
    _RETRY = -153
    _PURGE_QUEUE = -152
    _PURGE_INFLIGHT = -151
    _FATAL = -150
    _INCONSISTENT = -149
    _GAPLESS_GUARANTEE = -148
    _MAX_POLL_EXCEEDED = -147
    _UNKNOWN_BROKER = -146
    _NOT_CONFIGURED = -145
    _FENCED = -144
    _APPLICATION = -143
    _ASSIGNMENT_LOST = -142
    _NOOP = -141
    _AUTO_OFFSET_RESET = -140
    _LOG_TRUNCATION = -139
    _INVALID_DIFFERENT_RECORD = -138
    _END = -100
    UNKNOWN = -1
    NO_ERROR = 0
    OFFSET_OUT_OF_RANGE = 1
    INVALID_MSG = 2
    UNKNOWN_TOPIC_OR_PART = 3
    INVALID_MSG_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_FOR_PARTITION = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MSG_SIZE_TOO_LARGE = 10
    STALE_CTRL_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    UNKNOWN_TOPIC_ID = 100
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118

    __slots__ = ("_code", "_fatal", "_reason", "_retriable", "_txn_requires_abort", "exception")

    def __init__(self, error: int, reason: builtins.str | None = None, fatal: Any = False,
                 retriable: bool = False, txn_requires_abort: bool = False, *,
                 exception: BaseException | None = None):
        if isinstance(fatal, BaseException):
            # kstream 0.1 took the cause as the third positional argument; confluent's
            # third argument is ``fatal``. Accept both until every caller passes exception=.
            exception, fatal = fatal, False
        self._code = int(error)
        self._reason = reason if reason is not None else description(self._code)
        self._fatal = bool(fatal)
        self._retriable = bool(retriable)
        self._txn_requires_abort = bool(txn_requires_abort)
        self.exception = exception

    def code(self) -> int:
        """The error code, to compare with ``KafkaError.<NAME>``."""
        return self._code

    def name(self) -> builtins.str:
        """The code's librdkafka name (``"_PARTITION_EOF"``), ``"ERR_<code>?"`` if unknown."""
        return code_name(self._code)

    def str(self) -> builtins.str:
        """The human-readable reason."""
        return self._reason

    def fatal(self) -> bool:
        """True if the client that reported it cannot be used any more."""
        return self._fatal

    def retriable(self) -> bool:
        """True if the failed operation may succeed when retried."""
        return self._retriable

    def txn_requires_abort(self) -> bool:
        """True if the current transaction must be aborted before the producer goes on."""
        return self._txn_requires_abort

    def _other_code(self, other: object) -> int | None:
        if isinstance(other, KafkaError):
            return other._code
        if isinstance(other, int):
            return other
        return None

    def __eq__(self, other: object) -> bool:
        code = self._other_code(other)
        return NotImplemented if code is None else self._code == code

    def __ne__(self, other: object) -> bool:
        code = self._other_code(other)
        return NotImplemented if code is None else self._code != code

    def __lt__(self, other: object) -> bool:
        code = self._other_code(other)
        return NotImplemented if code is None else self._code < code

    def __le__(self, other: object) -> bool:
        code = self._other_code(other)
        return NotImplemented if code is None else self._code <= code

    def __gt__(self, other: object) -> bool:
        code = self._other_code(other)
        return NotImplemented if code is None else self._code > code

    def __ge__(self, other: object) -> bool:
        code = self._other_code(other)
        return NotImplemented if code is None else self._code >= code

    def __hash__(self) -> int:
        return hash(self._code)

    def __repr__(self) -> builtins.str:
        fatal = "FATAL," if self._fatal else ""
        return f'KafkaError{{{fatal}code={self.name()},val={self._code},str="{self._reason}"}}'

    __str__ = __repr__


# librdkafka's rd_kafka_err2str() text for each code (what str() says without a reason).
_DESCRIPTIONS = {
    "_BAD_MSG": "Local: Bad message format",
    "_BAD_COMPRESSION": "Local: Invalid compressed data",
    "_DESTROY": "Local: Broker handle destroyed",
    "_FAIL": "Local: Communication failure with broker",
    "_TRANSPORT": "Local: Broker transport failure",
    "_CRIT_SYS_RESOURCE": "Local: Critical system resource failure",
    "_RESOLVE": "Local: Host resolution failure",
    "_MSG_TIMED_OUT": "Local: Message timed out",
    "_PARTITION_EOF": "Broker: No more messages",
    "_UNKNOWN_PARTITION": "Local: Unknown partition",
    "_FS": "Local: File or filesystem error",
    "_UNKNOWN_TOPIC": "Local: Unknown topic",
    "_ALL_BROKERS_DOWN": "Local: All broker connections are down",
    "_INVALID_ARG": "Local: Invalid argument or configuration",
    "_TIMED_OUT": "Local: Timed out",
    "_QUEUE_FULL": "Local: Queue full",
    "_ISR_INSUFF": "Local: ISR count insufficient",
    "_NODE_UPDATE": "Local: Broker node update",
    "_SSL": "Local: SSL error",
    "_WAIT_COORD": "Local: Waiting for coordinator",
    "_UNKNOWN_GROUP": "Local: Unknown group",
    "_IN_PROGRESS": "Local: Operation in progress",
    "_PREV_IN_PROGRESS": "Local: Previous operation in progress",
    "_EXISTING_SUBSCRIPTION": "Local: Existing subscription",
    "_ASSIGN_PARTITIONS": "Local: Assign partitions",
    "_REVOKE_PARTITIONS": "Local: Revoke partitions",
    "_CONFLICT": "Local: Conflicting use",
    "_STATE": "Local: Erroneous state",
    "_UNKNOWN_PROTOCOL": "Local: Unknown protocol",
    "_NOT_IMPLEMENTED": "Local: Not implemented",
    "_AUTHENTICATION": "Local: Authentication failure",
    "_NO_OFFSET": "Local: No offset stored",
    "_OUTDATED": "Local: Outdated",
    "_TIMED_OUT_QUEUE": "Local: Timed out in queue",
    "_UNSUPPORTED_FEATURE": "Local: Required feature not supported by broker",
    "_WAIT_CACHE": "Local: Awaiting cache update",
    "_INTR": "Local: Operation interrupted",
    "_KEY_SERIALIZATION": "Local: Key serialization error",
    "_VALUE_SERIALIZATION": "Local: Value serialization error",
    "_KEY_DESERIALIZATION": "Local: Key deserialization error",
    "_VALUE_DESERIALIZATION": "Local: Value deserialization error",
    "_PARTIAL": "Local: Partial response",
    "_READ_ONLY": "Local: Read-only object",
    "_NOENT": "Local: No such entry",
    "_UNDERFLOW": "Local: Read underflow",
    "_INVALID_TYPE": "Local: Invalid type",
    "_RETRY": "Local: Retry operation",
    "_PURGE_QUEUE": "Local: Purged in queue",
    "_PURGE_INFLIGHT": "Local: Purged in flight",
    "_FATAL": "Local: Fatal error",
    "_INCONSISTENT": "Local: Inconsistent state",
    "_GAPLESS_GUARANTEE": "Local: Gap-less ordering would not be guaranteed if proceeding",
    "_MAX_POLL_EXCEEDED": "Local: Maximum application poll interval (max.poll.interval.ms) "
                          "exceeded",
    "_UNKNOWN_BROKER": "Local: Unknown broker",
    "_NOT_CONFIGURED": "Local: Functionality not configured",
    "_FENCED": "Local: This instance has been fenced by a newer instance",
    "_APPLICATION": "Local: Application generated error",
    "_ASSIGNMENT_LOST": "Local: Group partition assignment lost",
    "_NOOP": "Local: No operation performed",
    "_AUTO_OFFSET_RESET": "Local: No offset to automatically reset to",
    "_LOG_TRUNCATION": "Local: Partition log truncation detected",
    "_INVALID_DIFFERENT_RECORD": "Local: an invalid record in the same batch caused the failure of"
                                 " this message too.",
    "UNKNOWN": "Unknown broker error",
    "NO_ERROR": "Success",
    "OFFSET_OUT_OF_RANGE": "Broker: Offset out of range",
    "INVALID_MSG": "Broker: Invalid message",
    "UNKNOWN_TOPIC_OR_PART": "Broker: Unknown topic or partition",
    "INVALID_MSG_SIZE": "Broker: Invalid message size",
    "LEADER_NOT_AVAILABLE": "Broker: Leader not available",
    "NOT_LEADER_FOR_PARTITION": "Broker: Not leader for partition",
    "REQUEST_TIMED_OUT": "Broker: Request timed out",
    "BROKER_NOT_AVAILABLE": "Broker: Broker not available",
    "REPLICA_NOT_AVAILABLE": "Broker: Replica not available",
    "MSG_SIZE_TOO_LARGE": "Broker: Message size too large",
    "STALE_CTRL_EPOCH": "Broker: StaleControllerEpochCode",
    "OFFSET_METADATA_TOO_LARGE": "Broker: Offset metadata string too large",
    "NETWORK_EXCEPTION": "Broker: Broker disconnected before response received",
    "COORDINATOR_LOAD_IN_PROGRESS": "Broker: Coordinator load in progress",
    "COORDINATOR_NOT_AVAILABLE": "Broker: Coordinator not available",
    "NOT_COORDINATOR": "Broker: Not coordinator",
    "TOPIC_EXCEPTION": "Broker: Invalid topic",
    "RECORD_LIST_TOO_LARGE": "Broker: Message batch larger than configured server segment size",
    "NOT_ENOUGH_REPLICAS": "Broker: Not enough in-sync replicas",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": "Broker: Message(s) written to insufficient number of in-"
                                        "sync replicas",
    "INVALID_REQUIRED_ACKS": "Broker: Invalid required acks value",
    "ILLEGAL_GENERATION": "Broker: Specified group generation id is not valid",
    "INCONSISTENT_GROUP_PROTOCOL": "Broker: Inconsistent group protocol",
    "INVALID_GROUP_ID": "Broker: Invalid group.id",
    "UNKNOWN_MEMBER_ID": "Broker: Unknown member",
    "INVALID_SESSION_TIMEOUT": "Broker: Invalid session timeout",
    "REBALANCE_IN_PROGRESS": "Broker: Group rebalance in progress",
    "INVALID_COMMIT_OFFSET_SIZE": "Broker: Commit offset data size is not valid",
    "TOPIC_AUTHORIZATION_FAILED": "Broker: Topic authorization failed",
    "GROUP_AUTHORIZATION_FAILED": "Broker: Group authorization failed",
    "CLUSTER_AUTHORIZATION_FAILED": "Broker: Cluster authorization failed",
    "INVALID_TIMESTAMP": "Broker: Invalid timestamp",
    "UNSUPPORTED_SASL_MECHANISM": "Broker: Unsupported SASL mechanism",
    "ILLEGAL_SASL_STATE": "Broker: Request not valid in current SASL state",
    "UNSUPPORTED_VERSION": "Broker: API version not supported",
    "TOPIC_ALREADY_EXISTS": "Broker: Topic already exists",
    "INVALID_PARTITIONS": "Broker: Invalid number of partitions",
    "INVALID_REPLICATION_FACTOR": "Broker: Invalid replication factor",
    "INVALID_REPLICA_ASSIGNMENT": "Broker: Invalid replica assignment",
    "INVALID_CONFIG": "Broker: Configuration is invalid",
    "NOT_CONTROLLER": "Broker: Not controller for cluster",
    "INVALID_REQUEST": "Broker: Invalid request",
    "UNSUPPORTED_FOR_MESSAGE_FORMAT": "Broker: Message format on broker does not support request",
    "POLICY_VIOLATION": "Broker: Policy violation",
    "OUT_OF_ORDER_SEQUENCE_NUMBER": "Broker: Broker received an out of order sequence number",
    "DUPLICATE_SEQUENCE_NUMBER": "Broker: Broker received a duplicate sequence number",
    "INVALID_PRODUCER_EPOCH": "Broker: Producer attempted an operation with an old epoch",
    "INVALID_TXN_STATE": "Broker: Producer attempted a transactional operation in an invalid state",
    "INVALID_PRODUCER_ID_MAPPING": "Broker: Producer attempted to use a producer id which is not "
                                   "currently assigned to its transactional id",
    "INVALID_TRANSACTION_TIMEOUT": "Broker: Transaction timeout is larger than the maximum value "
                                   "allowed by the broker's max.transaction.timeout.ms",
    "CONCURRENT_TRANSACTIONS": "Broker: Producer attempted to update a transaction while another "
                               "concurrent operation on the same transaction was ongoing",
    "TRANSACTION_COORDINATOR_FENCED": "Broker: Indicates that the transaction coordinator sending "
                                      "a WriteTxnMarker is no longer the current coordinator for a"
                                      " given producer",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "Broker: Transactional Id authorization failed",
    "SECURITY_DISABLED": "Broker: Security features are disabled",
    "OPERATION_NOT_ATTEMPTED": "Broker: Operation not attempted",
    "KAFKA_STORAGE_ERROR": "Broker: Disk error when trying to access log file on disk",
    "LOG_DIR_NOT_FOUND": "Broker: The user-specified log directory is not found in the broker "
                         "config",
    "SASL_AUTHENTICATION_FAILED": "Broker: SASL Authentication failed",
    "UNKNOWN_PRODUCER_ID": "Broker: Unknown Producer Id",
    "REASSIGNMENT_IN_PROGRESS": "Broker: Partition reassignment is in progress",
    "DELEGATION_TOKEN_AUTH_DISABLED": "Broker: Delegation Token feature is not enabled",
    "DELEGATION_TOKEN_NOT_FOUND": "Broker: Delegation Token is not found on server",
    "DELEGATION_TOKEN_OWNER_MISMATCH": "Broker: Specified Principal is not valid Owner/Renewer",
    "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED": "Broker: Delegation Token requests are not allowed on "
                                            "this connection",
    "DELEGATION_TOKEN_AUTHORIZATION_FAILED": "Broker: Delegation Token authorization failed",
    "DELEGATION_TOKEN_EXPIRED": "Broker: Delegation Token is expired",
    "INVALID_PRINCIPAL_TYPE": "Broker: Supplied principalType is not supported",
    "NON_EMPTY_GROUP": "Broker: The group is not empty",
    "GROUP_ID_NOT_FOUND": "Broker: The group id does not exist",
    "FETCH_SESSION_ID_NOT_FOUND": "Broker: The fetch session ID was not found",
    "INVALID_FETCH_SESSION_EPOCH": "Broker: The fetch session epoch is invalid",
    "LISTENER_NOT_FOUND": "Broker: No matching listener",
    "TOPIC_DELETION_DISABLED": "Broker: Topic deletion is disabled",
    "FENCED_LEADER_EPOCH": "Broker: Leader epoch is older than broker epoch",
    "UNKNOWN_LEADER_EPOCH": "Broker: Leader epoch is newer than broker epoch",
    "UNSUPPORTED_COMPRESSION_TYPE": "Broker: Unsupported compression type",
    "STALE_BROKER_EPOCH": "Broker: Broker epoch has changed",
    "OFFSET_NOT_AVAILABLE": "Broker: Leader high watermark is not caught up",
    "MEMBER_ID_REQUIRED": "Broker: Group member needs a valid member ID",
    "PREFERRED_LEADER_NOT_AVAILABLE": "Broker: Preferred leader was not available",
    "GROUP_MAX_SIZE_REACHED": "Broker: Consumer group has reached maximum size",
    "FENCED_INSTANCE_ID": "Broker: Static consumer fenced by other consumer with same "
                          "group.instance.id",
    "ELIGIBLE_LEADERS_NOT_AVAILABLE": "Broker: Eligible partition leaders are not available",
    "ELECTION_NOT_NEEDED": "Broker: Leader election not needed for topic partition",
    "NO_REASSIGNMENT_IN_PROGRESS": "Broker: No partition reassignment is in progress",
    "GROUP_SUBSCRIBED_TO_TOPIC": "Broker: Deleting offsets of a topic while the consumer group is "
                                 "subscribed to it",
    "INVALID_RECORD": "Broker: Broker failed to validate record",
    "UNSTABLE_OFFSET_COMMIT": "Broker: There are unstable offsets that need to be cleared",
    "THROTTLING_QUOTA_EXCEEDED": "Broker: Throttling quota has been exceeded",
    "PRODUCER_FENCED": "Broker: There is a newer producer with the same transactionalId which "
                       "fences the current one",
    "RESOURCE_NOT_FOUND": "Broker: Request illegally referred to resource that does not exist",
    "DUPLICATE_RESOURCE": "Broker: Request illegally referred to the same resource twice",
    "UNACCEPTABLE_CREDENTIAL": "Broker: Requested credential would not meet criteria for "
                               "acceptability",
    "INCONSISTENT_VOTER_SET": "Broker: Indicates that the either the sender or recipient of a "
                              "voter-only request is not one of the expected voters",
    "INVALID_UPDATE_VERSION": "Broker: Invalid update version",
    "FEATURE_UPDATE_FAILED": "Broker: Unable to update finalized features due to server error",
    "PRINCIPAL_DESERIALIZATION_FAILURE": "Broker: Request principal deserialization failed during "
                                         "forwarding",
    "UNKNOWN_TOPIC_ID": "Broker: Unknown topic id",
    "FENCED_MEMBER_EPOCH": "Broker: The member epoch is fenced by the group coordinator",
    "UNRELEASED_INSTANCE_ID": "Broker: The instance ID is still used by another member in the "
                              "consumer group",
    "UNSUPPORTED_ASSIGNOR": "Broker: The assignor or its version range is not supported by the "
                            "consumer group",
    "STALE_MEMBER_EPOCH": "Broker: The member epoch is stale",
    "UNKNOWN_SUBSCRIPTION_ID": "Broker: Client sent a push telemetry request with an invalid or "
                               "outdated subscription ID",
    "TELEMETRY_TOO_LARGE": "Broker: Client sent a push telemetry request larger than the maximum "
                           "size the broker will accept",
}

_NAMES: dict[int, str] = {
    value: name for name, value in vars(KafkaError).items()
    if isinstance(value, int) and not isinstance(value, bool) and name.lstrip("_").isupper()
}
_CODES: dict[str, int] = {name: value for value, name in _NAMES.items()}


def code_name(code: int) -> str:
    """librdkafka's name of ``code`` (``rd_kafka_err2name``): ``"ERR_<code>?"`` if unknown."""
    return _NAMES.get(code, f"ERR_{code}?")


def description(code: int) -> str:
    """librdkafka's description of ``code`` (``rd_kafka_err2str``): ``"Err-<code>?"`` if unknown."""
    name = _NAMES.get(code)
    return _DESCRIPTIONS.get(name, f"Err-{code}?") if name else f"Err-{code}?"


def code_of(name: str) -> int:
    """The code named ``name`` (``"UNKNOWN_TOPIC_OR_PART"`` -> 3); KeyError if there is none."""
    return _CODES[name]


class KafkaException(Exception):  # noqa: N818 - confluent-kafka's name
    """The exception of confluent-kafka's API: ``args[0]`` is a :class:`KafkaError`.

    ``str()`` of a bare ``KafkaException(KafkaError(...))`` is the error's
    repr, as in confluent-kafka; kstream's own errors (subclasses, see
    :mod:`kstream.errors`) print their message instead.
    """


class _KafkaClientError(KafkaException):
    """A KafkaException raised by a client call, with the exception behind it and,
    for consumers, the message it was about."""

    def __init__(self, kafka_error: KafkaError, exception: BaseException | None = None,
                 kafka_message: Any = None) -> None:
        super().__init__(kafka_error)
        self.exception = exception
        self.kafka_message = kafka_message

    @property
    def code(self) -> int:
        return self.args[0].code()

    @property
    def name(self) -> str:
        return self.args[0].name()


class ConsumeError(_KafkaClientError):
    """A message could not be consumed (``kafka_message`` holds it, where there is one)."""


class ProduceError(_KafkaClientError):
    """A message could not be produced."""

    def __init__(self, kafka_error: KafkaError, exception: BaseException | None = None) -> None:
        super().__init__(kafka_error, exception, None)


class SerializationError(KafkaException):
    """A key or value could not be (de)serialized (``kstream.serialization``)."""


class KeySerializationError(ProduceError, SerializationError):
    """The serializer of a message key failed (``exception`` is why)."""

    def __init__(self, exception: BaseException | None = None) -> None:
        super().__init__(KafkaError(KafkaError._KEY_SERIALIZATION, str(exception)), exception)


class ValueSerializationError(ProduceError, SerializationError):
    """The serializer of a message value failed (``exception`` is why)."""

    def __init__(self, exception: BaseException | None = None) -> None:
        super().__init__(KafkaError(KafkaError._VALUE_SERIALIZATION, str(exception)), exception)


class KeyDeserializationError(ConsumeError, SerializationError):
    """The deserializer of a consumed message's key failed (``kafka_message`` is the message)."""

    def __init__(self, exception: BaseException | None = None, kafka_message: Any = None) -> None:
        super().__init__(KafkaError(KafkaError._KEY_DESERIALIZATION, str(exception)),
                         exception, kafka_message)


class ValueDeserializationError(ConsumeError, SerializationError):
    """The deserializer of a consumed message's value failed (``kafka_message`` is the message)."""

    def __init__(self, exception: BaseException | None = None, kafka_message: Any = None) -> None:
        super().__init__(KafkaError(KafkaError._VALUE_DESERIALIZATION, str(exception)),
                         exception, kafka_message)


__all__ = [
    "ConsumeError",
    "KafkaError",
    "KafkaException",
    "KeyDeserializationError",
    "KeySerializationError",
    "ProduceError",
    "SerializationError",
    "ValueDeserializationError",
    "ValueSerializationError",
]

"""kstream: an embedded, Kafka-style commit log of Arrow record batches for PySpark.

The public API mirrors confluent-kafka (Producer, Consumer, Admin, Message,
TopicPartition) with Arrow-native additions (``Producer.produce_batch``,
``Consumer.poll_batch``). See README.md and docs/.

Importing the package loads only the error classes: every other name here is
imported on first use (module ``__getattr__``), so ``import kstream.log.storage.segment``
(or a Spark worker unpickling a storage-engine object) does not pull in the
clients, consumer groups and their Delta table (deltalake), or Spark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kstream._lazy import lazy_exports
from kstream._version import __version__
from kstream.error import KafkaError, KafkaException
from kstream.errors import (
    CheckpointError,
    ClusterError,
    ClusterNotFoundError,
    ConfigError,
    CorruptBatchError,
    FencedError,
    GroupBusyError,
    IllegalGenerationError,
    InvalidRecordError,
    KStreamError,
    LogDirOfflineError,
    MetadataStorageError,
    NotEnoughReplicasError,
    NotSupportedError,
    OffsetOutOfRangeError,
    PartitionNotFoundError,
    PartitionOfflineError,
    RecordTooLargeError,
    SchemaError,
    TopicExistsError,
    TopicNotFoundError,
    UnstableOffsetCommitError,
)

if TYPE_CHECKING:  # what the lazy names are, for type checkers and editors
    from kstream._model import (
        ConsumerGroupState,
        ConsumerGroupTopicPartitions,
        ConsumerGroupType,
        ElectionType,
        IsolationLevel,
        Node,
        TopicCollection,
        TopicPartitionInfo,
    )
    from kstream._version import libversion, version
    from kstream.admin import Admin, AdminClient, NewPartitions, NewTopic, TopicDescription
    from kstream.client.consumer import Consumer
    from kstream.client.deserializing_consumer import DeserializingConsumer
    from kstream.client.producer import BatchResult, Producer
    from kstream.client.serializing_producer import SerializingProducer
    from kstream.client.share_consumer import ShareConsumer
    from kstream.client.table import Table
    from kstream.groups import ConsumerGroups, OffsetCommit
    from kstream.message import (
        OFFSET_BEGINNING,
        OFFSET_END,
        OFFSET_INVALID,
        OFFSET_STORED,
        TIMESTAMP_CREATE_TIME,
        TIMESTAMP_LOG_APPEND_TIME,
        TIMESTAMP_NOT_AVAILABLE,
        Message,
        TopicPartition,
    )
    from kstream.messages import Messages
    from kstream.sink.real_time import with_source_position, write_real_time
    from kstream.source.query_lag import QueryPartitionLag, query_lag
    from kstream.spark_setup import spark_builder, spark_session
    from kstream.throttle_event import ThrottleEvent


# Public name -> the module that defines it (imported on first use).
_LAZY = {
    "Admin": "kstream.admin",
    "AdminClient": "kstream.admin",
    "ConsumerGroupState": "kstream._model",
    "ConsumerGroupTopicPartitions": "kstream._model",
    "ConsumerGroupType": "kstream._model",
    "ElectionType": "kstream._model",
    "IsolationLevel": "kstream._model",
    "Node": "kstream._model",
    "TopicCollection": "kstream._model",
    "TopicPartitionInfo": "kstream._model",
    "BatchResult": "kstream.client.producer",
    "Consumer": "kstream.client.consumer",
    "ConsumerGroups": "kstream.groups",
    "DeserializingConsumer": "kstream.client.deserializing_consumer",
    "Message": "kstream.message",
    "Messages": "kstream.messages",
    "NewPartitions": "kstream.admin",
    "NewTopic": "kstream.admin",
    "OFFSET_BEGINNING": "kstream.message",
    "OFFSET_END": "kstream.message",
    "OFFSET_INVALID": "kstream.message",
    "OFFSET_STORED": "kstream.message",
    "OffsetCommit": "kstream.groups",
    "Producer": "kstream.client.producer",
    "QueryPartitionLag": "kstream.source.query_lag",
    "SerializingProducer": "kstream.client.serializing_producer",
    "ShareConsumer": "kstream.client.share_consumer",
    "TIMESTAMP_CREATE_TIME": "kstream.message",
    "TIMESTAMP_LOG_APPEND_TIME": "kstream.message",
    "TIMESTAMP_NOT_AVAILABLE": "kstream.message",
    "Table": "kstream.client.table",
    "ThrottleEvent": "kstream.throttle_event",
    "TopicDescription": "kstream.admin",
    "TopicPartition": "kstream.message",
    "libversion": "kstream._version",
    "query_lag": "kstream.source.query_lag",
    "spark_builder": "kstream.spark_setup",
    "spark_session": "kstream.spark_setup",
    "version": "kstream._version",
    "with_source_position": "kstream.sink.real_time",
    "write_real_time": "kstream.sink.real_time",
}


__all__ = [
    "OFFSET_BEGINNING",
    "OFFSET_END",
    "OFFSET_INVALID",
    "OFFSET_STORED",
    "TIMESTAMP_CREATE_TIME",
    "TIMESTAMP_LOG_APPEND_TIME",
    "TIMESTAMP_NOT_AVAILABLE",
    "Admin",
    "AdminClient",
    "BatchResult",
    "CheckpointError",
    "ClusterError",
    "ClusterNotFoundError",
    "ConfigError",
    "Consumer",
    "ConsumerGroupState",
    "ConsumerGroupTopicPartitions",
    "ConsumerGroupType",
    "ConsumerGroups",
    "CorruptBatchError",
    "DeserializingConsumer",
    "ElectionType",
    "FencedError",
    "GroupBusyError",
    "IllegalGenerationError",
    "InvalidRecordError",
    "IsolationLevel",
    "KStreamError",
    "KafkaError",
    "KafkaException",
    "LogDirOfflineError",
    "Message",
    "Messages",
    "MetadataStorageError",
    "NewPartitions",
    "NewTopic",
    "Node",
    "NotEnoughReplicasError",
    "NotSupportedError",
    "OffsetCommit",
    "OffsetOutOfRangeError",
    "PartitionNotFoundError",
    "PartitionOfflineError",
    "Producer",
    "QueryPartitionLag",
    "RecordTooLargeError",
    "SchemaError",
    "SerializingProducer",
    "ShareConsumer",
    "Table",
    "ThrottleEvent",
    "TopicCollection",
    "TopicDescription",
    "TopicExistsError",
    "TopicNotFoundError",
    "TopicPartition",
    "TopicPartitionInfo",
    "UnstableOffsetCommitError",
    "__version__",
    "libversion",
    "query_lag",
    "spark_builder",
    "spark_session",
    "version",
    "with_source_position",
    "write_real_time",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)

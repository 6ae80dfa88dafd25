"""kstream: an embedded, Kafka-style commit log of Arrow record batches for PySpark.

The public API mirrors confluent-kafka (Producer, Consumer, Admin, Message,
TopicPartition) with Arrow-native additions (``Producer.produce_batch``,
``Consumer.poll_batch``). See README.md and docs/.
"""

from kstream.admin import Admin, NewPartitions, NewTopic, TopicDescription
from kstream.consumer import Consumer
from kstream.errors import (
    ClusterError,
    ConfigError,
    CorruptBatchError,
    FencedError,
    GroupBusyError,
    InvalidRecordError,
    KStreamError,
    LogDirOfflineError,
    NotEnoughReplicasError,
    OffsetOutOfRangeError,
    PartitionNotFoundError,
    RecordTooLargeError,
    SchemaError,
    TopicExistsError,
    TopicNotFoundError,
)
from kstream.groups import ConsumerGroups, OffsetCommit
from kstream.message import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    OFFSET_STORED,
    KafkaError,
    Message,
    TopicPartition,
)
from kstream.producer import BatchResult, Producer
from kstream.source.lag import QueryPartitionLag, query_lag

__version__ = "0.1.0"

__all__ = [
    "OFFSET_BEGINNING",
    "OFFSET_END",
    "OFFSET_INVALID",
    "OFFSET_STORED",
    "Admin",
    "BatchResult",
    "ClusterError",
    "ConfigError",
    "Consumer",
    "ConsumerGroups",
    "CorruptBatchError",
    "FencedError",
    "GroupBusyError",
    "InvalidRecordError",
    "KStreamError",
    "KafkaError",
    "LogDirOfflineError",
    "Message",
    "NewPartitions",
    "NewTopic",
    "NotEnoughReplicasError",
    "OffsetCommit",
    "OffsetOutOfRangeError",
    "PartitionNotFoundError",
    "Producer",
    "QueryPartitionLag",
    "RecordTooLargeError",
    "SchemaError",
    "TopicDescription",
    "TopicExistsError",
    "TopicNotFoundError",
    "TopicPartition",
    "__version__",
    "query_lag",
]

"""Which option names the kstream data source takes, for reads and for writes.

A read or write takes kstream's own options, the Spark Kafka connector's
options (so a connector job runs after ``format("kafka")`` -> ``format("kstream")``)
and any ``kafka.*`` key, as the connector does: those are Kafka client settings;
kstream honours ``kafka.isolation.level`` and accepts the others (there is no
broker to configure), except the keys the connector itself refuses. Any other
name is a ConfigError with the closest known names ("did you mean"), so a typo
never passes silently. Names are case-insensitive, as Spark's options are.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

from kstream.errors import ConfigError

# Options Spark itself may hand a data source (load(path), a streaming sink's query).
_SPARK_OWN = ("path", "checkpointLocation", "queryName")

READER_OPTIONS = (
    # the Spark Kafka connector's source options
    "assign", "subscribe", "subscribePattern",
    "startingOffsets", "endingOffsets",
    "startingTimestamp", "endingTimestamp", "startingOffsetsByTimestamp", "endingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy",
    "failOnDataLoss", "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay",
    "minPartitions", "maxRecordsPerPartition", "includeHeaders",
    "groupIdPrefix", "kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
    # kstream's own
    "cluster", "maxBytesPerTrigger", "isolation.level", "columns", "group.id", "auto.offset.reset",
    "auto.commit.interval.ms", "valueFormat", "avroSchema",
    # which reader serves the read (docs/JVM_READER.md), and payload checksum verification
    "reader", "check.crcs",
    # the latest record of each key instead of every record (docs/SPARK.md "Latest value per key")
    "latestPerKey", "includeTombstones",
    *_SPARK_OWN,
)

# writer: which writer serves the write (jvm, python, auto; docs/JVM_WRITER.md "Choosing the writer")
SINK_OPTIONS = ("cluster", "topic", "includeHeaders", "writer", *_SPARK_OWN)

# kafka.* keys the connector refuses, and why (its own reasons, in kstream's words).
_REFUSED_BY_READER = {
    "kafka.auto.offset.reset": "set the source option 'startingOffsets' to 'earliest' or 'latest' instead "
                               "(kstream's own 'auto.offset.reset' applies to startingOffsets=group only)",
    "kafka.key.deserializer": "keys are read as bytes; use DataFrame operations (CAST(key AS STRING)) "
                              "to decode them",
    "kafka.value.deserializer": "values are read as bytes; use DataFrame operations (CAST(value AS STRING)) "
                                "to decode them",
    "kafka.enable.auto.commit": "the source never commits offsets itself; give kstream's 'group.id' "
                                "to have a query commit each finished batch to a consumer group",
    "kafka.interceptor.classes": "interceptors could change records under the query",
}
_REFUSED_BY_SINK = {
    "kafka.key.serializer": "keys are written as bytes (a string key is UTF-8 encoded); cast the 'key' "
                            "column instead",
    "kafka.value.serializer": "values are written as bytes (a string value is UTF-8 encoded); cast the "
                              "'value' column instead",
}


def check_reader_options(options: Mapping[str, str]) -> None:
    """ConfigError for a name no read takes (with the closest ones) or a kafka.* key the
    Kafka connector refuses (with what to do instead)."""
    _check(options, READER_OPTIONS, _REFUSED_BY_READER, "the kstream reader")


def check_sink_options(options: Mapping[str, str]) -> None:
    """ConfigError for a name no write takes, or a kafka.* key the connector's sink refuses."""
    _check(options, SINK_OPTIONS, _REFUSED_BY_SINK, "the kstream sink")


def _check(options: Mapping[str, str], known: Iterable[str], refused: Mapping[str, str], what: str) -> None:
    spelled = {name.lower(): name for name in known}
    for name in options:
        lower = name.lower()
        if lower in refused:
            raise ConfigError(f"option {name!r} is not supported by {what} (nor by the Spark Kafka "
                              f"connector): {refused[lower]}")
        if lower in spelled or lower.startswith("kafka."):
            continue
        close = difflib.get_close_matches(lower, list(spelled), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(repr(spelled[c]) for c in close)}?" if close else ""
        raise ConfigError(f"unknown option {name!r} for {what}{hint} (it takes kstream's options, the "
                          "Spark Kafka connector's and any kafka.* Kafka client setting; see README 'Spark')")

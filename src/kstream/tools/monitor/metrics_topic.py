"""The internal metrics topic ``__kstream_metrics``: its schema, its creation, writing samples.

One record per figure (a :class:`Sample`), in a typed topic of the cluster the
figures describe. Its columns (see :data:`SCHEMA`):

``ts_ms`` int64, ``source`` string (``log``/``group``/``spark``/``client``),
``name`` string (see :data:`NAMES`), ``topic_name`` string|null,
``partition_number`` int32|null, ``group`` string|null, ``labels`` string
(JSON object, ``"{}"`` when empty), ``value`` float64.

(The brief's ``topic``/``partition`` are reserved names in a typed topic: a
reader adds the record's own ``topic`` and ``partition`` columns, and
``produce_batch`` routes by a ``partition`` column. Hence ``topic_name`` and
``partition_number``.)

Records are routed by metric name (crc32 of the name modulo
:data:`PARTITIONS`), so a history read of one name scans one partition; the
record timestamp is ``ts_ms``, so a read can start at a time
(``offsets_for_times``). The topic is created on first write with bounded
retention (:data:`TOPIC_CONFIG`: 7 days, 64 MiB per partition, in 8 MiB
segments so retention can drop whole segments). Only writers create it
(:func:`ensure_topic`); readers of a cluster without it see no history.

Thread safety: :func:`write_samples` opens its own Producer per call; callers
that write often keep a :class:`MetricsWriter`, which is not thread-safe.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from kstream.client.producer import Producer
from kstream.errors import ConfigError, TopicExistsError
from kstream.log.cluster.cluster import Cluster

TOPIC = "__kstream_metrics"
PARTITIONS = 4
TOPIC_CONFIG: Mapping[str, str] = {
    "retention.ms": str(7 * 24 * 3600 * 1000),
    "retention.bytes": str(64 << 20),
    "segment.bytes": str(8 << 20),
}
MAX_SAMPLES_PER_WRITE = 200_000
"""A write of more samples than this is refused (a sampler bug, not a big cluster:
1,000 partitions x 20 figures is 20,000)."""

SOURCES = frozenset({"log", "group", "spark", "client"})
NAMES = frozenset({
    "log_end_offset", "high_watermark", "last_stable_offset", "log_start_offset",
    "partition_bytes", "isr_size", "replicas", "records_in_per_s", "records_out_per_s",
    "committed_offset", "lag", "lag_seconds", "group_status", "isr_shrinks", "log_dir_online",
    "log_dir_bytes",
    "spark_input_rows_per_s", "spark_processed_rows_per_s", "spark_batch_duration_ms",
})
CLIENT_PREFIX = "client_"  # client stats fields: client_<field>, any field

SCHEMA = pa.schema([
    pa.field("ts_ms", pa.int64(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("name", pa.string(), nullable=False),
    pa.field("topic_name", pa.string()),
    pa.field("partition_number", pa.int32()),
    pa.field("group", pa.string()),
    pa.field("labels", pa.string(), nullable=False),
    pa.field("value", pa.float64(), nullable=False),
])


@dataclass(frozen=True)
class Sample:
    """One figure at one time. ``labels`` are extra dimensions (e.g. a Spark query id)."""

    ts_ms: int
    source: str
    name: str
    value: float
    topic: str | None = None
    partition: int | None = None
    group: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ConfigError(f"metric source {self.source!r} is not one of {sorted(SOURCES)}")
        if self.name not in NAMES and not self.name.startswith(CLIENT_PREFIX):
            raise ConfigError(f"metric name {self.name!r} is not one of {sorted(NAMES)} "
                              f"nor {CLIENT_PREFIX}<field>")


def partition_for(name: str) -> int:
    """The metrics topic partition that holds every sample of ``name``."""
    return zlib.crc32(name.encode()) % PARTITIONS


def to_table(samples: Sequence[Sample]) -> pa.Table:
    """The samples as rows of :data:`SCHEMA`, plus the record ``timestamp`` and the routing
    ``partition`` column ``produce_batch`` takes."""
    if len(samples) > MAX_SAMPLES_PER_WRITE:
        raise ConfigError(f"{len(samples)} samples in one write; at most {MAX_SAMPLES_PER_WRITE}")
    columns: dict[str, list[Any]] = {
        "ts_ms": [s.ts_ms for s in samples],
        "source": [s.source for s in samples],
        "name": [s.name for s in samples],
        "topic_name": [s.topic for s in samples],
        "partition_number": [s.partition for s in samples],
        "group": [s.group for s in samples],
        "labels": [json.dumps(dict(s.labels), sort_keys=True) for s in samples],
        "value": [float(s.value) for s in samples],
    }
    table = pa.Table.from_pydict(columns, schema=SCHEMA)
    return (table.append_column("timestamp", pa.array(columns["ts_ms"], pa.int64()))
            .append_column("partition", pa.array([partition_for(s.name) for s in samples], pa.int32())))


def ensure_topic(cluster_path: str) -> None:
    """Create the metrics topic in the cluster at ``cluster_path`` unless it exists.

    Raises ClusterNotFoundError when there is no cluster there (never creates one)."""
    cluster = Cluster.open(cluster_path)
    try:
        if TOPIC in cluster.list_topics():
            return
        try:
            cluster.create_topic(TOPIC, PARTITIONS, 1, dict(TOPIC_CONFIG), SCHEMA)
        except TopicExistsError:
            pass  # another writer created it meanwhile: same name, same schema
    finally:
        cluster.close()


class MetricsWriter:
    """Appends samples to one cluster's metrics topic, creating the topic on first use.

    Keeps one Producer; not thread-safe; :meth:`close` when done."""

    def __init__(self, cluster_path: str):
        self.cluster_path = cluster_path
        self._producer: Any = None

    def write(self, samples: Sequence[Sample]) -> int:
        """Append ``samples`` (acks=all, flushed before returning); how many were written."""
        if not samples:
            return 0
        table = to_table(samples)
        if self._producer is None:
            ensure_topic(self.cluster_path)
            self._producer = Producer({"cluster": self.cluster_path, "linger.ms": 0})
        self._producer.produce_batch(TOPIC, table)
        self._producer.flush()
        return len(samples)

    def close(self) -> None:
        if self._producer is not None:
            producer, self._producer = self._producer, None
            producer.close()


def write_samples(cluster_path: str, samples: Sequence[Sample]) -> int:
    """Append ``samples`` to the cluster's metrics topic with a short-lived writer."""
    writer = MetricsWriter(cluster_path)
    try:
        return writer.write(samples)
    finally:
        writer.close()

"""Batch and streaming writers of the kstream data source.

Tasks write their rows as transactional frames under a producer id of their
own (no second copy of the data through the driver); the driver commits each
micro-batch (or the whole batch job) once, via :mod:`kstream.log.sink_transactions`.
Input columns: ``value`` (required, binary or string), ``key``, ``headers``,
``partition``, ``topic`` (or the ``topic`` option). Keys go to Kafka's murmur2
partition; a ``partition`` column overrides.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from kstream.errors import ConfigError, InvalidRecordError
from kstream.log.cluster import Cluster, resolve_cluster_path
from kstream.log.sink_transactions import SinkStore, SinkTaskWriter, TaskWrites
from kstream.log.txn_expiry import try_expire
from kstream.producer import Producer


@dataclass
class TaskCommit(WriterCommitMessage):
    writes: TaskWrites


@dataclass(frozen=True)
class SinkOptions:
    cluster: str
    topic: str | None

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> SinkOptions:
        lower = {k.lower(): v for k, v in options.items()}
        unknown = set(lower) - {"cluster", "topic", "checkpointlocation", "queryname", "path"}
        if unknown:
            raise ConfigError(f"unknown sink option(s) {sorted(unknown)}; the kstream sink takes cluster and topic")
        return cls(resolve_cluster_path(lower.get("cluster")), lower.get("topic"))


def check_sink_schema(columns: list[str], options: Mapping[str, str]) -> None:
    """Fail at analysis time, before any task runs, on input the sink cannot write."""
    if "value" not in columns:
        raise InvalidRecordError(f"the kstream sink needs a 'value' column (binary or string); got {columns}")
    if "topic" not in columns and not any(k.lower() == "topic" for k in options):
        raise InvalidRecordError("rows need a 'topic' column or the sink needs .option('topic', ...)")
    unknown = set(columns) - {"key", "value", "headers", "partition", "topic", "timestamp"}
    if unknown:
        raise InvalidRecordError(f"the kstream sink does not know columns {sorted(unknown)}; allowed: key, value, "
                                 "headers, partition, topic, timestamp (select or drop the others)")


def write_task(options: SinkOptions, sink_id: str, batches: Iterator[pa.RecordBatch],
               batch_id: int | None = None) -> TaskCommit:
    """Executor side: write one task's rows as one transactional producer. With ``batch_id``
    an attempt of a batch that is already decided is refused before it writes (a zombie)."""
    producer = Producer({"cluster": options.cluster, "acks": "1", "enable.idempotence": False})
    records = 0
    try:
        store = SinkStore(producer.cluster)
        try_expire(store.transactions)  # task writes of dead drivers, timed-out transactions, orphans
        writer = SinkTaskWriter(store, sink_id, batch_id)
        producer.bind_sink_transaction(writer)
        for batch in batches:
            if batch.num_rows == 0:
                continue
            for topic, rows in _by_topic(batch, options.topic):
                producer.produce_batch(topic, rows)
                records += rows.num_rows
        producer.flush()
    finally:
        producer.close()
    return TaskCommit(TaskWrites(writer.producer_id, tuple(sorted(writer.partitions)), records))


def _by_topic(batch: pa.RecordBatch, default_topic: str | None) -> Iterator[tuple[str, pa.Table]]:
    table = pa.Table.from_batches([batch])
    if "topic" not in table.column_names:
        if default_topic is None:
            raise InvalidRecordError("rows need a 'topic' column or the sink needs .option('topic', ...)")
        yield default_topic, table
        return
    column = table.column("topic")
    rest = table.drop_columns(["topic"])
    if column.null_count and default_topic is None:
        raise InvalidRecordError("some rows have a null 'topic' and the sink has no 'topic' option")
    column = column.fill_null(default_topic) if column.null_count else column
    for topic in pc.unique(column).to_pylist():
        yield topic, rest.filter(pc.equal(column, topic))


class KStreamBatchWriter(DataSourceArrowWriter):
    """A batch job's write: all its tasks' rows become visible together, or none."""

    def __init__(self, options: Mapping[str, str]):
        self.options = SinkOptions.from_options(options)
        self.sink_id = f"batch:{uuid.uuid4().hex}"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return write_task(self.options, self.sink_id, iterator, batch_id=0)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        with _store(self.options) as store:
            store.commit(self.sink_id, 0, _writes(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        with _store(self.options) as store:
            store.abort(self.sink_id, _writes(messages))


class KStreamStreamWriter(DataSourceStreamArrowWriter):
    """Exactly-once micro-batches: batch B of a query (its checkpoint) commits at most once."""

    def __init__(self, options: Mapping[str, str]):
        lower = {k.lower(): v for k, v in options.items()}
        if "checkpointlocation" not in lower:
            raise ConfigError("the kstream sink needs a checkpoint location for exactly-once writes; "
                              "set .option('checkpointLocation', path)")
        self.options = SinkOptions.from_options(options)
        # Spark builds a new writer for every commit (in a driver-side Python worker), so
        # nothing happens here: leftovers of failed attempts or an earlier run are aborted
        # by the next commit.
        self.sink_id = f"stream:{os.path.abspath(lower['checkpointlocation'])}"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return write_task(self.options, self.sink_id, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        with _store(self.options) as store:
            store.commit(self.sink_id, batchId, _writes(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        with _store(self.options) as store:
            store.abort(self.sink_id, _writes(messages))


@contextmanager
def _store(options: SinkOptions) -> Iterator[SinkStore]:
    """The sink's transaction rows, on a cluster opened for one driver-side call."""
    cluster = Cluster.open(options.cluster)
    try:
        yield SinkStore(cluster)
    finally:
        cluster.close()


def _writes(messages: list[WriterCommitMessage | None]) -> list[TaskWrites]:
    return [m.writes for m in messages if isinstance(m, TaskCommit)]

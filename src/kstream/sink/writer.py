"""Batch and streaming writers of the kstream data source.

Tasks write their rows as transactional frames under a producer id of their
own (no second copy of the data through the driver); the driver commits each
micro-batch (or the whole batch job) once, via :mod:`kstream.log.transactions.sink`.

Input columns, as the Spark Kafka connector's sink reads them: ``value``
(required, binary or string), ``key``, ``headers``, ``partition``,
``timestamp`` and ``topic``; any other column is ignored (a DataFrame read
from a topic can be written back as it is). The ``topic`` option, when given,
overrides the ``topic`` column (the connector's rule). Keys go to Kafka's
murmur2 partition; a ``partition`` column overrides.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from kstream.client.producer import Producer
from kstream.config.data_source_options import check_sink_options
from kstream.errors import ConfigError, InvalidRecordError
from kstream.log.cluster.cluster import Cluster, resolve_cluster_path
from kstream.log.transactions.expiry import try_expire
from kstream.log.transactions.sink import SinkStore, SinkTaskWriter, TaskWrites
from kstream.sink.query_identity import SINK_ID_PREFIX, query_sink_id

_log = logging.getLogger(__name__)
SINK_COLUMNS = ("key", "value", "headers", "partition", "timestamp", "topic")


@dataclass
class TaskCommit(WriterCommitMessage):
    writes: TaskWrites
    sink_id: str | None = None  # the sink the task wrote for (needed when the commit's writer has another)


@dataclass(frozen=True)
class SinkOptions:
    """The sink's options: kstream's ``cluster`` and the connector's ``topic`` (the others the
    connector takes, ``kafka.*`` and ``includeHeaders``, are accepted and change nothing)."""

    cluster: str
    topic: str | None

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> SinkOptions:
        check_sink_options(options)
        lower = {k.lower(): v for k, v in options.items()}
        _check_writer_choice(lower.get("writer", "auto"))
        topic = lower.get("topic")
        return cls(resolve_cluster_path(lower.get("cluster")), topic.strip() if topic is not None else None)


def _check_writer_choice(writer: str) -> None:
    """Option 'writer' (jvm, python or auto). This is the Python sink: with the kstream jar on the
    session the JVM provider chooses and hands Python only what it gives the Python sink, so a
    batch or streaming write with writer=jvm arriving here means the jar is not loaded."""
    if writer.strip().lower() not in ("jvm", "python", "auto"):
        raise ConfigError(f"option 'writer': {writer!r} is not jvm, python or auto")
    if writer.strip().lower() == "jvm":
        raise ConfigError("option 'writer' is jvm, but the kstream JVM writer is not on this SparkSession: add "
                          "its jar with spark.jars (the path `kstream jar-path` prints; kstream.jars.with_jar does "
                          "it for a builder), or use writer=auto/python (docs/JVM_WRITER.md)")


def check_sink_schema(columns: list[str], options: Mapping[str, str]) -> None:
    """Fail at analysis time, before any task runs, on input the sink cannot write."""
    if "value" not in columns:
        raise InvalidRecordError(f"the kstream sink needs a 'value' column (binary or string); got {columns}")
    if "topic" not in columns and not any(k.lower() == "topic" for k in options):
        raise InvalidRecordError("rows need a 'topic' column or the sink needs .option('topic', ...)")


def check_save_mode(overwrite: bool) -> None:
    """A batch write appends; Overwrite is refused, as the Kafka connector refuses it. (pyspark
    itself refuses the default ErrorIfExists and Ignore for Python data sources before the
    sink is asked, so a batch write says ``.mode("append")``.)"""
    if overwrite:
        raise ConfigError("save mode Overwrite is not allowed for the kstream sink (a topic is appended "
                          "to, as with the Kafka connector); use .mode(\"append\")")


def write_task(options: SinkOptions, sink_id: str, batches: Iterator[pa.RecordBatch],
               batch_id: int | None = None) -> TaskCommit:
    """Executor side: write one task's rows as one transactional producer. With ``batch_id``
    an attempt of a batch that is already decided is refused before it writes (a zombie)."""
    producer = sink_producer(options)
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
    return TaskCommit(TaskWrites(writer.producer_id, tuple(sorted(writer.partitions)), records), sink_id)


def sink_producer(options: SinkOptions) -> Producer:
    """The producer of one task attempt. acks=all: its rows are fsynced before the driver's commit
    decision names them (a power cut after the decision must not take rows it commits), and its
    appends publish the HW only over fsynced frames, as every acks=all writer's do."""
    return Producer({"cluster": options.cluster, "acks": "all", "enable.idempotence": False})


def _by_topic(batch: pa.RecordBatch, topic_option: str | None) -> Iterator[tuple[str, pa.Table]]:
    """The batch's rows by topic: all to the ``topic`` option when given (it overrides the
    column), else by their ``topic`` column. Columns the sink does not use are dropped."""
    table = pa.Table.from_batches([batch])
    table = table.select([c for c in table.column_names if c in SINK_COLUMNS])
    if topic_option is not None:
        yield topic_option, table.drop_columns([c for c in ("topic",) if c in table.column_names])
        return
    if "topic" not in table.column_names:
        raise InvalidRecordError("rows need a 'topic' column or the sink needs .option('topic', ...)")
    column = table.column("topic")
    if column.null_count:
        raise InvalidRecordError("some rows have a null 'topic'; fill it, or set .option('topic', ...) "
                                 "for all rows")
    rest = table.drop_columns(["topic"])
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
            store.abort(self.sink_id, _writes(messages), batch_id=0)


class KStreamStreamWriter(DataSourceStreamArrowWriter):
    """Micro-batches, exactly once per query when the sink has ``.option("checkpointLocation")``:
    batch B of that query commits at most once, across restarts. The query is the id Spark
    keeps in the checkpoint (:mod:`kstream.sink.query_identity`), not the checkpoint's path.

    pyspark does not pass a checkpoint set only by ``spark.sql.streaming.checkpointLocation``
    to a Python sink. Without the option the sink is at least once, as the Kafka connector's
    sink is: each batch still commits all-or-nothing, but a batch Spark replays after a
    restart is written again.
    """

    def __init__(self, options: Mapping[str, str]):
        lower = {k.lower(): v for k, v in options.items()}
        self.options = SinkOptions.from_options(options)
        # Spark builds a new writer for every commit (in a driver-side Python worker), so
        # nothing happens here: leftovers of failed attempts or an earlier run are aborted
        # by the next commit. Tasks name the sink they wrote for in their commit messages.
        if "checkpointlocation" in lower:
            # The query's id from its checkpoint, never the path (a reused path is a new query).
            self.sink_id = query_sink_id(lower["checkpointlocation"])
        else:
            _log.warning("the kstream sink has no .option('checkpointLocation'): micro-batches are "
                         "written at least once (as with the Kafka connector), not exactly once")
            self.sink_id = f"stream-run:{uuid.uuid4().hex}"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return write_task(self.options, self.sink_id, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        with _store(self.options) as store:
            for sink_id, writes in _by_sink(self.sink_id, messages).items():
                if not store.commit(sink_id, batchId, writes):
                    _log.info("batch %s of sink %s was committed by an earlier run (Spark replays it after a "
                              "restart): its rows are not written again", batchId, sink_id)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        with _store(self.options) as store:
            for sink_id, writes in _by_sink(self.sink_id, messages).items():
                store.abort(sink_id, writes)


@contextmanager
def _store(options: SinkOptions) -> Iterator[SinkStore]:
    """The sink's transaction rows, on a cluster opened for one driver-side call."""
    cluster = Cluster.open(options.cluster)
    try:
        yield SinkStore(cluster)
    finally:
        cluster.close()


def _by_sink(own_id: str, messages: list[WriterCommitMessage | None]) -> dict[str, list[TaskWrites]]:
    """The tasks' writes by the sink id they wrote under; a checkpointed sink's id is the
    writer's own (also when no task wrote), a sink without checkpoint has its tasks' id."""
    result: dict[str, list[TaskWrites]] = {own_id: []} if own_id.startswith(SINK_ID_PREFIX) else {}
    for message in messages:
        if isinstance(message, TaskCommit):
            result.setdefault(message.sink_id or own_id, []).append(message.writes)
    return result


def _writes(messages: list[WriterCommitMessage | None]) -> list[TaskWrites]:
    return [m.writes for m in messages if isinstance(m, TaskCommit)]

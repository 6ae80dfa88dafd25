"""Real-time Mode kstream -> Spark -> kstream: attach kstream's JVM ``ForeachWriter`` in one call.

Spark's Real-time Mode (``trigger(realTime=...)``) accepts only the console, foreach, Kafka and
memory sinks, so ``writeStream.format("kstream")`` cannot run in it. :func:`write_real_time`
starts the query with ``io.kstream.spark.realtime.KStreamForeachWriter`` (in the kstream jar) as
its foreach sink: each row is appended to a kstream topic within milliseconds (fsynced first with
``acks=all``), and each source record is written once across restarts from the checkpoint,
because every output frame carries its source position and the log drops a position it already
has (docs/JVM_WRITER.md, "The Real-time Mode sink"; docs/TRANSACTIONS.md, "Source-position
idempotence").

The rows follow the kstream sink's columns (``value``; ``key``, ``headers``, ``partition``,
``timestamp``, ``topic`` or the ``topic`` argument) and carry their source position in
``source_topic`` (string), ``source_partition`` (int) and ``source_offset`` (bigint);
:func:`with_source_position` renames a kstream stream's ``topic``/``partition``/``offset`` so.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from kstream.errors import (
    CheckpointError,
    ClusterError,
    ConfigError,
    FencedError,
    InvalidRecordError,
    KStreamError,
    PartitionNotFoundError,
    TopicNotFoundError,
)
from kstream.sink.real_time_checkpoint import sweep_unfinished_first_batch

WRITER_CLASS = "io.kstream.spark.realtime.KStreamForeachWriter"
SOURCE_COLUMNS = ("source_topic", "source_partition", "source_offset")
DEFAULT_BATCH_DURATION = "5 minutes"
_ERRORS: dict[str, type[KStreamError]] = {
    cls.__name__: cls for cls in (ConfigError, InvalidRecordError, TopicNotFoundError, PartitionNotFoundError,
                                  CheckpointError, ClusterError, FencedError, KStreamError)}
_JAVA_ERROR = re.compile(r"io\.kstream\.spark\.error\.KStreamException: (\w+): (.*)")


def with_source_position(frame: Any) -> Any:
    """A kstream stream with its ``topic``/``partition``/``offset`` renamed to the source
    position columns the Real-time sink needs (so ``topic``/``partition`` no longer route rows)."""
    return (frame.withColumnRenamed("topic", "source_topic").withColumnRenamed("partition", "source_partition")
            .withColumnRenamed("offset", "source_offset"))


def write_real_time(frame: Any, *, cluster: str, checkpoint: str, topic: str | None = None,
                    trigger: str = DEFAULT_BATCH_DURATION, acks: str = "all", linger_ms: int = 0,
                    query_name: str | None = None, options: Mapping[str, str] | None = None) -> Any:
    """Start a Real-time Mode query writing ``frame`` to a kstream topic; returns its
    ``StreamingQuery``.

    Parameters
    ----------
    frame : a streaming DataFrame with the sink's columns and the source position columns
    cluster : the kstream cluster directory
    checkpoint : the query's checkpoint location (required: its query id names the sink, so a
        restart from it drops what the query wrote before)
    topic : the output topic (else each row's ``topic`` column)
    trigger : the real-time batch duration (Spark's ``trigger(realTime=...)``, >= 5 seconds)
    acks : ``all`` (fsynced before readable; the default), ``1`` or ``0``
    linger_ms : how long the flusher waits for more rows before an append (0..1000)
    options : more sink options (as ``writeStream.format("kstream")`` takes them)

    Before the query starts, the temp files a driver killed while Spark wrote the first batch's
    offset or commit log left in ``checkpoint`` are removed (they stop Spark's restart; see
    :mod:`kstream.sink.real_time_checkpoint`); nothing else in the checkpoint is touched.

    Raises ConfigError when the kstream jar is not on the session, CheckpointError for a
    checkpoint off this machine, and the sink's own errors (InvalidRecordError for missing or
    mistyped columns, ConfigError for bad options) before the query starts.
    """
    session = frame.sparkSession
    jvm = session._jvm
    if not _jar_loaded(jvm):
        raise ConfigError("write_real_time needs the kstream jar on this SparkSession (its "
                          f"{WRITER_CLASS}): add it with spark.jars (the path `kstream jar-path` prints; "
                          "kstream.spark_session() and kstream.jars.with_jar do it)")
    if not checkpoint:
        raise ConfigError("write_real_time needs checkpoint: the query's id there names the sink")
    checkpoint = checkpoint if "://" in checkpoint or checkpoint.startswith("file:") else os.path.abspath(checkpoint)
    # A driver killed while Spark wrote batch 0's offset/commit log leaves temp files that stop
    # Spark 4.3's restart (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY): remove them first.
    sweep_unfinished_first_batch(checkpoint)
    java_options = jvm.java.util.HashMap()
    for name, value in {**(options or {}), "cluster": cluster, "acks": acks, "linger.ms": str(linger_ms),
                        **({"topic": topic} if topic is not None else {})}.items():
        java_options.put(name, str(value))
    try:
        writer = jvm.io.kstream.spark.realtime.KStreamForeachWriter(java_options, frame._jdf.schema(), checkpoint)
        stream = (frame._jdf.writeStream().foreach(writer).outputMode("update")
                  .trigger(jvm.org.apache.spark.sql.streaming.Trigger.RealTime(trigger))
                  .option("checkpointLocation", checkpoint))
        if query_name is not None:
            stream = stream.queryName(query_name)
        started = stream.start()
    except Exception as err:  # py4j's Py4JJavaError: the sink's own error, in kstream's classes
        raise _kstream_error(err) from err
    from pyspark.sql.streaming import StreamingQuery

    return StreamingQuery(started)


def _jar_loaded(jvm: Any) -> bool:
    from py4j.protocol import Py4JJavaError

    try:
        jvm.java.lang.Class.forName(WRITER_CLASS, False, jvm.java.lang.Thread.currentThread().getContextClassLoader())
    except Py4JJavaError as err:
        if "ClassNotFoundException" in str(err):
            return False
        raise
    return True


def _kstream_error(err: Exception) -> Exception:
    """The kstream error a Java KStreamException names ("Kind: message"), else ``err`` itself."""
    match = _JAVA_ERROR.search(str(err))
    if match is None:
        return err
    return _ERRORS.get(match.group(1), KStreamError)(match.group(2).strip())

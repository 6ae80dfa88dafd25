"""The JVM writer for streaming queries (io.kstream.spark.write.JvmStreamingWrite, issue 22):
micro-batches exactly once on the Python sink's protocol and under the Python stream writer's
sink id, so a query switches writers across a restart without writing a batch twice; a batch
Spark replays commits nothing again, a rolled-back checkpoint is refused, a zombie task attempt
writes nothing, a failed batch is aborted and written once by the restart; and the Python and
the JVM stream writers write the same input the same (read back by both readers).

Runs on the shared SparkSession (tests/spark/conftest.py), which has the kstream jar when built.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil

import pytest
from tests.spark.conftest import spark  # noqa: F401  (the shared session, with the jar when built)
from tests.spark.jvm_support import load, rows

from helpers import consume_values, open_partitions, produce_range, spark_checkpoint
from kstream import Producer
from kstream.jars import jar_path
from kstream.log.cluster.cluster import Cluster
from kstream.sink.query_identity import query_sink_id

pytestmark = [pytest.mark.spark, pytest.mark.jvm]

BASE = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)).replace(microsecond=0)


@pytest.fixture(autouse=True)
def _jar():
    if jar_path() is None:
        pytest.skip("no kstream JVM jar (jvm/build.sh): the JVM stream writer is not checked")


def _stream(spark, cluster_path, source, sink, checkpoint, writer, select=("key", "value"),  # noqa: F811
            max_offsets=None):
    reader = (spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", source)
              .option("startingOffsets", "earliest").option("includeHeaders", "true"))
    if max_offsets is not None:
        reader = reader.option("maxOffsetsPerTrigger", max_offsets)
    return (reader.load().selectExpr(*select)
            .writeStream.format("kstream").option("cluster", cluster_path).option("topic", sink)
            .option("writer", writer).option("checkpointLocation", checkpoint).trigger(availableNow=True).start())


def _run(*args, **kwargs):
    query = _stream(*args, **kwargs)
    query.awaitTermination()
    return query


def _stream_write_class(query):
    """The StreamingWrite class the query's last micro-batch wrote with (Spark's plan names it)."""
    return query._jsq.streamingQuery().lastExecution().executedPlan().toString()


def _committed(cluster_path, topic, partitions):
    return sorted(consume_values(cluster_path, topic, partitions))


def _drop_last_commit(checkpoint):
    """Spark's commit log loses its last entry: the query crashed after the sink committed the
    batch and before Spark recorded it, so the restart runs that batch again."""
    commits = os.path.join(checkpoint, "commits")
    last = max((n for n in os.listdir(commits) if n.isdigit()), key=int)
    os.remove(os.path.join(commits, last))
    crc = os.path.join(commits, f".{last}.crc")
    if os.path.exists(crc):
        os.remove(crc)
    return int(last)


def test_a_streaming_query_is_written_by_the_jvm_writer_exactly_once_across_restarts(
        spark, cluster_path, make_topic, tmp_path):  # noqa: F811
    make_topic("in", 2)
    make_topic("out", 2)
    produce_range(cluster_path, "in", 0, 500, prefix="r", key_mod=13)
    checkpoint = str(tmp_path / "cp")
    select = ("key", "upper(cast(value as string)) as value")
    query = _run(spark, cluster_path, "in", "out", checkpoint, "jvm", select=select, max_offsets=120)
    assert "JvmStreamingWrite" in _stream_write_class(query)
    produce_range(cluster_path, "in", 500, 100, prefix="r")
    query = _run(spark, cluster_path, "in", "out", checkpoint, "auto", select=select, max_offsets=120)
    assert "JvmStreamingWrite" in _stream_write_class(query)  # auto: the JVM writer for a bytes topic
    assert _committed(cluster_path, "out", 2) == sorted(f"R{i}".encode() for i in range(600))
    assert open_partitions(cluster_path, "out", 2) == []


@pytest.mark.parametrize("first,second", [("python", "jvm"), ("jvm", "python"), ("jvm", "jvm")])
def test_a_replayed_batch_commits_nothing_twice_also_when_the_restart_switches_writers(
        spark, cluster_path, make_topic, tmp_path, first, second):  # noqa: F811
    """The restart replays the last batch (its sink commit landed, Spark's commit log entry did
    not) with the other writer: one sink id for both writers, so the replay commits nothing."""
    make_topic("in", 2)
    make_topic("out", 2)
    produce_range(cluster_path, "in", 0, 300, prefix="r", key_mod=7)
    checkpoint = str(tmp_path / "cp")
    query = _run(spark, cluster_path, "in", "out", checkpoint, first, max_offsets=100)
    assert ("JvmStreamingWrite" in _stream_write_class(query)) == (first == "jvm")
    assert _drop_last_commit(checkpoint) == 2
    produce_range(cluster_path, "in", 300, 50, prefix="r")
    query = _run(spark, cluster_path, "in", "out", checkpoint, second, max_offsets=100)
    assert ("JvmStreamingWrite" in _stream_write_class(query)) == (second == "jvm")
    assert _committed(cluster_path, "out", 2) == sorted(f"r{i}".encode() for i in range(350))
    assert open_partitions(cluster_path, "out", 2) == []
    cluster = Cluster.open(cluster_path)
    try:  # the query's last batch (3) committed under the Python writer's sink id
        sink_id = query_sink_id(checkpoint)
        batches = cluster.metadata.read_rows("SELECT batch_id, state FROM sink_batches WHERE sink_id = ?", (sink_id,))
    finally:
        cluster.close()
    assert batches == [(3, "Committed")]


def test_a_rolled_back_checkpoint_is_refused_by_the_jvm_writer(spark, cluster_path, make_topic, tmp_path):  # noqa: F811
    make_topic("in", 1)
    make_topic("out", 1)
    produce_range(cluster_path, "in", 0, 100, prefix="r")
    checkpoint = str(tmp_path / "cp")
    _run(spark, cluster_path, "in", "out", checkpoint, "jvm", max_offsets=50)  # batches 0, 1
    shutil.copytree(checkpoint, tmp_path / "old")
    produce_range(cluster_path, "in", 100, 150, prefix="r")
    _run(spark, cluster_path, "in", "out", checkpoint, "jvm", max_offsets=50)  # batches 2, 3, 4
    shutil.rmtree(checkpoint)
    shutil.copytree(tmp_path / "old", checkpoint)  # restored from an older copy: batch 2 again
    with pytest.raises(Exception, match=r"CheckpointError: sink 'query:[0-9a-f-]+' was asked to commit batch 2, "
                                        r"but it committed batch 4 of this query already"):
        _run(spark, cluster_path, "in", "out", checkpoint, "jvm", max_offsets=50)
    assert _committed(cluster_path, "out", 1) == sorted(f"r{i}".encode() for i in range(250))
    assert open_partitions(cluster_path, "out", 1) == []


def test_a_batch_failing_after_its_tasks_wrote_is_aborted_and_written_once_by_the_restart(
        spark, cluster_path, make_topic, tmp_path):  # noqa: F811
    """A task fails after it wrote a frame (over 65,536 rows in): Spark aborts the epoch, which
    must not decide the batch (else the restart, which runs it again, would write nothing)."""
    make_topic("in", 1)
    make_topic("out", 1)
    produce_range(cluster_path, "in", 0, 70_000, prefix="r")
    checkpoint = str(tmp_path / "cp")
    failing = ("key", "CASE WHEN CAST(value AS STRING) = 'r69000' THEN raise_error('injected') ELSE value END"
                      " AS value")
    with pytest.raises(Exception, match="injected"):
        _run(spark, cluster_path, "in", "out", checkpoint, "jvm", select=failing)
    assert _committed(cluster_path, "out", 1) == []
    assert open_partitions(cluster_path, "out", 1) == []  # the abort wrote its ABORT markers
    cluster = Cluster.open(cluster_path)
    try:
        assert cluster.metadata.read_rows("SELECT COUNT(*) FROM sink_batches", ())[0][0] == 0
    finally:
        cluster.close()
    _run(spark, cluster_path, "in", "out", checkpoint, "jvm")
    assert _committed(cluster_path, "out", 1) == sorted(f"r{i}".encode() for i in range(70_000))


class _Jvm:
    """The JVM stream writer driven directly through py4j: task attempts of chosen epochs."""

    def __init__(self, spark, cluster_path, checkpoint):  # noqa: F811
        self.gateway = spark.sparkContext._gateway
        self.jvm = spark._jvm
        options = self.jvm.java.util.HashMap()
        for key, value in {"cluster": cluster_path, "topic": "out", "checkpointLocation": checkpoint}.items():
            options.put(key, value)
        schema = self.jvm.org.apache.spark.sql.types.StructType.fromDDL("value binary")
        sink_input = self.jvm.io.kstream.spark.write.SinkInput.of(options, schema)
        self.write = self.jvm.io.kstream.spark.write.JvmStreamingWrite(sink_input, options)
        self.factory = self.write.createStreamingWriterFactory(None)

    def attempt(self, epoch, task):
        return self.factory.createWriter(0, task, epoch)

    def row(self, value: bytes):
        values = self.gateway.new_array(self.jvm.java.lang.Object, 1)
        values[0] = value
        return self.jvm.org.apache.spark.sql.catalyst.expressions.GenericInternalRow(values)

    def messages(self, *messages):
        out = self.gateway.new_array(self.jvm.org.apache.spark.sql.connector.write.WriterCommitMessage, len(messages))
        for i, m in enumerate(messages):
            out[i] = m
        return out


def test_zombie_attempts_a_replayed_epoch_and_a_killed_drivers_leftovers(spark, cluster_path, make_topic, tmp_path):  # noqa: F811
    make_topic("out", 1)
    checkpoint = str(tmp_path / "cp")
    spark_checkpoint(checkpoint)
    sink = _Jvm(spark, cluster_path, checkpoint)
    assert sink.write.sinkId() == query_sink_id(checkpoint)  # the Python stream writer's id

    # A run killed between its tasks' writes and the driver's commit: its frames stay open.
    killed = sink.attempt(epoch=0, task=0)
    killed.write(sink.row(b"killed"))
    killed.commit()
    killed.close()
    assert open_partitions(cluster_path, "out", 1) == [0]

    restarted = _Jvm(spark, cluster_path, checkpoint)  # the restart runs batch 0 again
    zombie = restarted.attempt(epoch=0, task=1)  # registered, then outrun by a speculative copy
    winner = restarted.attempt(epoch=0, task=2)
    winner.write(restarted.row(b"once"))
    restarted.write.commit(0, restarted.messages(winner.commit()))
    winner.close()
    zombie.write(restarted.row(b"zombie"))
    with pytest.raises(Exception, match=r"FencedError: task producer \d+ of sink 'query:.*' was fenced"):
        zombie.commit()  # its first append, under the partition lock, is refused
    zombie.close()
    late = restarted.attempt(epoch=0, task=3)  # an attempt of the decided batch: writes nothing
    late.write(restarted.row(b"late"))
    assert late.commit() is None
    late.close()

    replay = restarted.attempt(epoch=0, task=4)  # Spark replays batch 0 after another restart
    assert replay.commit() is None
    restarted.write.commit(0, restarted.messages())  # commits nothing again
    with pytest.raises(Exception, match=r"CheckpointError: sink 'query:.*' was asked to commit batch -1"):
        restarted.write.commit(-1, restarted.messages())
    assert _committed(cluster_path, "out", 1) == [b"once"]
    assert open_partitions(cluster_path, "out", 1) == []  # the killed run's frames were aborted


def test_a_checkpoint_without_metadata_is_refused_as_by_the_python_writer(spark, cluster_path, make_topic,  # noqa: F811
                                                                         tmp_path):
    make_topic("out", 1)
    with pytest.raises(Exception, match=r"CheckpointError: the streaming checkpoint '.*' has no metadata file"):
        _Jvm(spark, cluster_path, str(tmp_path / "missing"))
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "metadata").write_text('{"id": "nope"}\n')
    with pytest.raises(Exception, match=r"CheckpointError: .*metadata is not a Spark query's metadata"):
        _Jvm(spark, cluster_path, str(bad))
    with pytest.raises(Exception, match=r"CheckpointError: checkpoint location 'hdfs://nn/ck' is on hdfs:"):
        _Jvm(spark, cluster_path, "hdfs://nn/ck")
    spelled = tmp_path / "ck"
    spark_checkpoint(spelled, "6F9619FF-8B86-D011-B42D-00C04FC964FF")
    for location in (str(spelled), f"file://{spelled}", f"{tmp_path}/./ck/"):
        assert _Jvm(spark, cluster_path, location).write.sinkId() == query_sink_id(location)


def test_writer_jvm_refuses_a_streaming_write_it_cannot_do_and_auto_hands_it_to_python(
        spark, cluster_path, make_topic, tmp_path):  # noqa: F811
    import pyarrow as pa

    make_topic("in", 1)
    make_topic("typed", 1, schema=pa.schema([("id", pa.int64()), ("value", pa.binary())]))
    produce_range(cluster_path, "in", 0, 10, prefix="r")
    select = ("CAST(offset AS long) AS id", "value")
    with pytest.raises(Exception, match=r"ConfigError: option 'writer' is jvm, but the JVM writer does not write "
                                        r"typed topic 'typed' .*use writer=python or writer=auto"):
        _run(spark, cluster_path, "in", "typed", str(tmp_path / "a"), "jvm", select=select)
    query = _run(spark, cluster_path, "in", "typed", str(tmp_path / "b"), "auto", select=select)
    assert "JvmStreamingWrite" not in _stream_write_class(query)
    assert load(spark, cluster_path, "python", subscribe="typed").count() == 10  # written by the Python sink


def test_the_python_and_the_jvm_stream_writers_write_the_same_records(spark, cluster_path, make_topic, tmp_path):  # noqa: F811
    make_topic("in", 3)
    for writer in ("python", "jvm"):
        make_topic(f"out_{writer}", 3)
    with Producer({"cluster": cluster_path}) as producer:
        for i in range(900):
            headers = [("h", str(i).encode()), ("empty", None)] if i % 3 == 0 else None
            producer.produce("in", f"v{i}".encode() if i % 50 else None,
                             key=None if i % 10 == 0 else f"k{i % 97}".encode(), partition=i % 3,
                             headers=headers, timestamp=int(BASE.timestamp() * 1000) + 7 * i)
    select = ("key", "value", "headers", "partition", "timestamp")
    for writer in ("python", "jvm"):
        query = _run(spark, cluster_path, "in", f"out_{writer}", str(tmp_path / writer), writer, select=select,
                     max_offsets=400)
        assert ("JvmStreamingWrite" in _stream_write_class(query)) == (writer == "jvm")
    results = {}
    for writer in ("python", "jvm"):
        for reader in ("python", "jvm"):
            frame = load(spark, cluster_path, reader, subscribe=f"out_{writer}", includeHeaders="true")
            results[writer, reader] = rows(frame.select("partition", "key", "value", "headers", "timestamp"))
    assert len(results["python", "python"]) == 900
    assert len({tuple(r) for r in results.values()}) == 1, {k: v[:3] for k, v in results.items()}

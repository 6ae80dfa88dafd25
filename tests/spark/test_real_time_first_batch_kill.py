"""Spark 4.3's Real-time Mode and a driver killed while it writes the logs of the query's first
batch (issue 22): the checkpoint is left with a temp file of the unfinished write, which Spark's
restart refuses with STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY, whatever the sink (shown with
the console sink); past the first batch it resumes. kstream.write_real_time removes those temp
files first and the restarted query writes each record once.

Spark writes a Real-time batch's offset and commit log entries at the batch's end, each a temp
file renamed into place; a SIGKILL lands between the two steps a few milliseconds per batch at
most, so these tests leave the checkpoint exactly as such a kill leaves it (the files the
SIGKILLed driver of the first run of test_real_time_sink_sigkill.py left:
``commits/.0.<uuid>.tmp`` and ``commits/..0.<uuid>.tmp.crc``, both empty) after a stop. The
SIGKILL of a driver mid-batch is test_real_time_sink_sigkill.py; the sweep's rules are
tests/sink/test_real_time_checkpoint.py."""

from __future__ import annotations

import os
import uuid

import pytest
from pyspark.errors import StreamingQueryException

from helpers import consume_values, produce_keyed, wait_until
from kstream import with_source_position, write_real_time
from kstream.jars import jar_path

pytestmark = pytest.mark.spark

WAIT_S = 120.0


def _wait_for(condition, seconds=WAIT_S):
    return wait_until(condition, seconds)


def _source(spark, cluster_path):
    return (spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", "in")
            .option("startingOffsets", "earliest").load())


def _console(spark, cluster_path, checkpoint, trigger):
    return (_source(spark, cluster_path).select("value").writeStream.format("console").outputMode("update")
            .trigger(realTime=trigger).option("checkpointLocation", checkpoint).start())


def _torn_write(checkpoint, log: str, batch: int) -> list[str]:
    """What a driver SIGKILLed inside Spark's createAtomic write of ``log``'s entry of ``batch``
    leaves: the temp file and its checksum, both empty."""
    name = f".{batch}.{uuid.uuid4()}.tmp"
    directory = os.path.join(checkpoint, log)
    os.makedirs(directory, exist_ok=True)
    for n in (name, f".{name}.crc"):
        open(os.path.join(directory, n), "wb").close()
    return [name, f".{name}.crc"]


def _logged(checkpoint, log: str) -> list[str]:
    directory = os.path.join(checkpoint, log)
    return sorted(os.listdir(directory)) if os.path.isdir(directory) else []


def _read_by_batch(query) -> list[tuple[int, int]]:
    """(batch id, input rows read) of each batch of ``query`` that ended. A Real-time batch reads
    until a deadline Spark sets when it plans the batch (planning time + batch duration, checked
    before each row: ``LowLatencyReaderWrap``), so how many rows a batch reads depends on how soon
    its tasks run; the next batch reads the rest."""
    return [(p["batchId"], p["numInputRows"]) for p in query.recentProgress]


def _in_first_batch(query) -> bool:
    return query.status["isTriggerActive"] and query.lastProgress is None


@pytest.fixture
def topics(spark, make_topic):
    make_topic("in", 2)
    make_topic("out", 2)


@pytest.mark.parametrize("log", ["commits", "offsets"])
def test_spark_refuses_a_real_time_checkpoint_with_a_torn_first_batch_whatever_the_sink(spark, cluster_path, topics,
                                                                                         tmp_path, log):
    checkpoint = str(tmp_path / "ck")
    produce_keyed(cluster_path, "in", [f"r{i}" for i in range(10)])
    query = _console(spark, cluster_path, checkpoint, "5 minutes")
    try:
        assert _wait_for(lambda: _in_first_batch(query)), query.exception()
    finally:
        query.stop()
    # Real-time Mode logs a batch at its end only: a query stopped (or killed) mid-batch 0 left none.
    assert _logged(checkpoint, "offsets") == [] and _logged(checkpoint, "commits") == []
    _torn_write(checkpoint, log, 0)
    restarted = _console(spark, cluster_path, checkpoint, "5 seconds")
    with pytest.raises(StreamingQueryException) as failed:
        restarted.awaitTermination(WAIT_S)
    assert "STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY" in str(failed.value)
    assert f"{log} should be empty on batch 0" in str(failed.value)


def test_spark_resumes_a_real_time_checkpoint_with_a_torn_write_past_the_first_batch(spark, cluster_path, topics,
                                                                                    tmp_path):
    checkpoint = str(tmp_path / "ck")
    produce_keyed(cluster_path, "in", [f"r{i}" for i in range(10)])
    query = _console(spark, cluster_path, checkpoint, "5 seconds")
    try:
        assert _wait_for(lambda: query.lastProgress is not None), query.exception()
    finally:
        query.stop()
    committed = max(int(n) for n in _logged(checkpoint, "commits") if n.isdigit())
    _torn_write(checkpoint, "commits", committed + 1)
    restarted = _console(spark, cluster_path, checkpoint, "5 seconds")
    try:
        assert _wait_for(lambda: restarted.lastProgress is not None
                         and restarted.lastProgress["batchId"] > committed), restarted.exception()
    finally:
        restarted.stop()


def test_write_real_time_removes_a_torn_first_batch_and_writes_each_record_once(spark, cluster_path, topics,
                                                                               tmp_path):
    if jar_path() is None:
        pytest.skip("no kstream jar (jvm/build.sh): the Real-time sink needs it")
    checkpoint = str(tmp_path / "ck")

    def start(trigger):
        frame = with_source_position(_source(spark, cluster_path)).select(
            "key", "value", "source_topic", "source_partition", "source_offset")
        return write_real_time(frame, cluster=cluster_path, topic="out", checkpoint=checkpoint, trigger=trigger)

    def out():
        return sorted(v.decode() for v in consume_values(cluster_path, "out", 2))

    produce_keyed(cluster_path, "in", [f"r{i}" for i in range(30)])
    query = start("5 minutes")
    try:
        assert _wait_for(lambda: len(out()) >= 30), query.exception()
        assert _in_first_batch(query)
    finally:
        query.stop()
    torn = _torn_write(checkpoint, "commits", 0)
    produce_keyed(cluster_path, "in", [f"r{i}" for i in range(30, 50)])
    restarted = start("5 seconds")
    try:
        assert _wait_for(lambda: len(out()) >= 50), restarted.exception()  # without the sweep: the error above
        assert not set(torn) & set(_logged(checkpoint, "commits"))
        # batch 0 again, from the earliest offsets: r0-r29 read twice, written once (by the batches that
        # ended, together: on a loaded machine batch 0 may end before it read all 50, _read_by_batch)
        assert _wait_for(lambda: sum(rows for _, rows in _read_by_batch(restarted)) >= 50), \
            (restarted.exception(), _read_by_batch(restarted))
        assert _read_by_batch(restarted)[0][0] == 0, _read_by_batch(restarted)
    finally:
        restarted.stop()
    assert out() == sorted(f"r{i}" for i in range(50))

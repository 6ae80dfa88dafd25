"""Real-time Mode kstream -> Spark -> kstream through kstream.write_real_time (the JVM
KStreamForeachWriter): every input record lands once in the output topic, also when the query
is stopped mid-batch and restarted from its checkpoint (Real-time Mode then replays the whole
unfinished batch: the sink drops the positions the output already holds). The dedup rule itself
is tests/jvm/test_real_time_sink.py; the SIGKILLed driver is test_real_time_sink_sigkill.py."""

from __future__ import annotations

import pytest

from helpers import consume_values, produce_keyed, wait_until
from kstream import ConfigError, InvalidRecordError, Producer, with_source_position, write_real_time
from kstream.jars import jar_path

pytestmark = pytest.mark.spark

BATCH = "5 seconds"
WAIT_S = 120.0


def _wait_for(condition, seconds=WAIT_S):
    return wait_until(condition, seconds)


def _stream(spark, cluster_path):
    frame = (spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", "in")
             .option("startingOffsets", "earliest").load())
    return with_source_position(frame).select("key", "value", "source_topic", "source_partition", "source_offset")


def _out(cluster_path: str) -> list[str]:
    return [v.decode() for v in consume_values(cluster_path, "out", 2)]


@pytest.fixture
def topics(spark, make_topic):
    if jar_path() is None:
        pytest.skip("no kstream jar (jvm/build.sh): the Real-time sink needs it")
    make_topic("in", 2)
    make_topic("out", 2)


def test_real_time_query_writes_each_record_once(spark, cluster_path, topics, tmp_path):
    produce_keyed(cluster_path, "in", [f"r{i}" for i in range(40)])
    query = write_real_time(_stream(spark, cluster_path), cluster=cluster_path, topic="out",
                            checkpoint=str(tmp_path / "ck"), trigger=BATCH)
    try:
        assert _wait_for(lambda: len(_out(cluster_path)) >= 40), query.exception()
        batch = query.lastProgress["batchId"] if query.lastProgress else -1
        assert _wait_for(lambda: query.lastProgress is not None and query.lastProgress["batchId"] > batch)
        produce_keyed(cluster_path, "in", [f"r{i}" for i in range(40, 80)])  # into the next real-time batch
        assert _wait_for(lambda: len(_out(cluster_path)) >= 80), query.exception()
    finally:
        query.stop()
    assert sorted(_out(cluster_path)) == sorted(f"r{i}" for i in range(80))


def test_a_query_stopped_mid_batch_and_restarted_writes_each_record_once(spark, cluster_path, topics, tmp_path):
    checkpoint = str(tmp_path / "ck")
    produce_keyed(cluster_path, "in", [f"r{i}" for i in range(30)])
    query = write_real_time(_stream(spark, cluster_path), cluster=cluster_path, topic="out", checkpoint=checkpoint,
                            trigger="5 minutes")  # no batch ends before the stop: all of it is replayed
    try:
        assert _wait_for(lambda: len(_out(cluster_path)) >= 30), query.exception()
    finally:
        query.stop()
    produce_keyed(cluster_path, "in", [f"r{i}" for i in range(30, 50)])
    query = write_real_time(_stream(spark, cluster_path), cluster=cluster_path, topic="out", checkpoint=checkpoint,
                            trigger=BATCH)
    try:
        assert _wait_for(lambda: len(_out(cluster_path)) >= 50), query.exception()
        batch = query.lastProgress["batchId"] if query.lastProgress else -1
        assert _wait_for(lambda: query.lastProgress is not None and query.lastProgress["batchId"] > batch)
        # the replay is done: a duplicate would have landed by now
    finally:
        query.stop()
    assert sorted(_out(cluster_path)) == sorted(f"r{i}" for i in range(50))


def test_keyless_rows_replayed_after_a_restart_go_where_their_first_run_wrote_them(spark, cluster_path, make_topic,
                                                                                 tmp_path):
    """A keyless row's output partition is a function of its source position: a random sticky
    partition (the micro-batch sink's) would send the replay elsewhere, past the dedup."""
    if jar_path() is None:
        pytest.skip("no kstream jar (jvm/build.sh): the Real-time sink needs it")
    make_topic("in", 2)
    make_topic("out", 4)
    checkpoint = str(tmp_path / "ck")

    def produce(values):
        with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
            for i, value in enumerate(values):
                producer.produce("in", value.encode(), partition=i % 2)

    def start(trigger):
        frame = _stream(spark, cluster_path).select("value", "source_topic", "source_partition", "source_offset")
        return write_real_time(frame, cluster=cluster_path, topic="out", checkpoint=checkpoint, trigger=trigger)

    def out():
        return sorted(v.decode() for v in consume_values(cluster_path, "out", 4))

    produce([f"r{i}" for i in range(30)])
    query = start("5 minutes")  # stopped inside batch 0: the restart replays all of it
    try:
        assert _wait_for(lambda: len(out()) >= 30), query.exception()
    finally:
        query.stop()
    produce([f"r{i}" for i in range(30, 50)])
    query = start(BATCH)
    try:
        assert _wait_for(lambda: len(out()) >= 50), query.exception()
        assert _wait_for(lambda: query.lastProgress is not None), query.exception()  # batch 0 again, committed
    finally:
        query.stop()
    assert out() == sorted(f"r{i}" for i in range(50))


def test_clear_errors_before_the_query_starts(spark, cluster_path, topics, tmp_path):
    frame = spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", "in").load()
    with pytest.raises(InvalidRecordError, match="source_offset"):
        write_real_time(frame.select("value"), cluster=cluster_path, topic="out", checkpoint=str(tmp_path / "a"))
    with pytest.raises(ConfigError, match="linger.ms"):
        write_real_time(_stream(spark, cluster_path), cluster=cluster_path, topic="out",
                        checkpoint=str(tmp_path / "b"), linger_ms=5000)

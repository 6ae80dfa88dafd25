"""Real-time Mode kstream -> kstream survives a SIGKILLed driver: a query in its own process
(Python driver and its Spark JVM, one process group) writes through kstream.write_real_time while
records keep arriving, is SIGKILLed mid-batch, and a query restarted from its checkpoint (in the
test session) replays the unfinished batch: the output is the input multiset, every record once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from helpers import consume_values
from kstream import Producer, with_source_position, write_real_time
from kstream.jars import jar_path

# Not working yet (issue 22): the restarted query fails at once with Spark's
# STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY ("<checkpoint>/commits should be empty on batch 0")
# when the killed query died in its first Real-time batch; and a run takes 8 minutes. Strict: the
# mark must come off when it passes. A stop and restart mid-batch passes
# (tests/spark/test_real_time_sink_spark.py).
pytestmark = [pytest.mark.spark, pytest.mark.slow,
              pytest.mark.xfail(strict=True, reason="a Real-time query SIGKILLed in its first batch does not "
                                "restart: STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY (issue 22)")]

DRIVER = """
import sys
from kstream import spark_session, with_source_position, write_real_time
cluster, checkpoint = sys.argv[1:3]
spark = spark_session("rtm-killed")
frame = (spark.readStream.format("kstream").option("cluster", cluster).option("subscribe", "in")
         .option("startingOffsets", "earliest").load())
query = write_real_time(with_source_position(frame).select("key", "value", "source_topic", "source_partition",
                                                           "source_offset"),
                        cluster=cluster, topic="out", checkpoint=checkpoint, trigger="5 minutes")
print("started", flush=True)
query.awaitTermination()
"""
WAIT_S = 180.0


def _wait_for(condition, seconds=WAIT_S):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(1.0)
    return condition()


def _out(cluster_path: str) -> list[str]:
    return [v.decode() for v in consume_values(cluster_path, "out", 2)]


def test_a_sigkilled_driver_restarted_from_its_checkpoint_writes_each_record_once(spark, cluster_path, make_topic,
                                                                                 tmp_path):
    if jar_path() is None:
        pytest.skip("no kstream jar (jvm/build.sh): the Real-time sink needs it")
    make_topic("in", 2)
    make_topic("out", 2)
    checkpoint = str(tmp_path / "ck")
    produced: list[str] = []
    stop = threading.Event()

    def produce() -> None:
        with Producer({"cluster": cluster_path, "linger.ms": 1}) as producer:
            while not stop.is_set():
                value = f"r{len(produced)}"
                producer.produce("in", value.encode(), key=value.encode())
                producer.flush()
                produced.append(value)
                time.sleep(0.02)  # about 40 records/s: the killed query is mid-batch, not behind

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, cluster_path, checkpoint], start_new_session=True,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    producer = threading.Thread(target=produce)
    producer.start()
    try:
        assert _wait_for(lambda: len(_out(cluster_path)) >= 100 or driver.poll() is not None)
        assert driver.poll() is None, "the driver ended before it was killed"
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # the Python driver and its Spark JVM, mid-batch
        driver.wait()
        stop.set()
        producer.join()
    landed = len(_out(cluster_path))
    assert 100 <= landed <= len(produced)
    query = write_real_time(with_source_position(
        spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", "in")
        .option("startingOffsets", "earliest").load()).select("key", "value", "source_topic", "source_partition",
                                                              "source_offset"),
        cluster=cluster_path, topic="out", checkpoint=checkpoint, trigger="5 seconds")
    try:
        assert _wait_for(lambda: len(_out(cluster_path)) >= len(produced)), query.exception()
        batch = query.lastProgress["batchId"] if query.lastProgress else -1
        assert _wait_for(lambda: query.lastProgress is not None and query.lastProgress["batchId"] > batch)
        replayed = sum(p["numInputRows"] for p in query.recentProgress)
    finally:
        query.stop()
    out = _out(cluster_path)
    assert len(out) == len(produced) and sorted(out) == sorted(produced)
    assert replayed >= landed  # the restart read again what the killed query had written

"""Real-time Mode kstream -> kstream survives a SIGKILLed driver: a query in its own process
(Python driver and its Spark JVM, one process group) writes through kstream.write_real_time while
records keep arriving, is SIGKILLed mid-batch, and a query restarted from its checkpoint (in the
test session, with another batch duration) writes what is left: the output, read with a
read_committed consumer, is the input multiset, every record once.

Two moments: inside the first batch (Real-time Mode logs a batch's offsets and commit at its end,
so the checkpoint holds no batch and the restart runs batch 0 again from the earliest offsets:
everything the killed query wrote is read again and dropped by the sink), and past it (the
restart replays the unfinished batch from the last committed one). A kill *during* the first
batch's log writes leaves temp files that Spark refuses on restart: write_real_time removes them
(tests/spark/test_real_time_first_batch_kill.py).

How much of the input the restart's batch 0 reads is not part of the check: Spark ends a
Real-time batch's reads at a deadline it sets when it plans the batch (``LowLatencyReaderWrap``:
planning time + batch duration, checked before each row), so on a loaded machine a task that
starts late reads less in batch 0 and the next batch reads the rest. What is checked is that the
restart starts at batch 0 and that its batches together read every input record, all the
killed query wrote among them. A third case makes that happen: another job holds one of the
session's two task slots until the restart's batch 0 has ended, so one of that batch's two tasks
never reads (a partition left wholly to batch 1)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest

from helpers import consume_values_to_end, wait_until
from kstream import Producer, with_source_position, write_real_time
from kstream.jars import jar_path

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DRIVER = """
import sys, time
from kstream import spark_session, with_source_position, write_real_time
cluster, checkpoint, trigger = sys.argv[1:4]
spark = spark_session("rtm-killed")
frame = (spark.readStream.format("kstream").option("cluster", cluster).option("subscribe", "in")
         .option("startingOffsets", "earliest").load())
query = write_real_time(with_source_position(frame).select("key", "value", "source_topic", "source_partition",
                                                           "source_offset"),
                        cluster=cluster, topic="out", checkpoint=checkpoint, trigger=trigger)
print("started", flush=True)
reported = None
while query.isActive:
    progress = query.lastProgress
    if progress is not None and progress["batchId"] != reported:
        reported = progress["batchId"]
        print(f"P {reported}", flush=True)
    time.sleep(0.1)
print(f"E {query.exception()}", flush=True)
"""
WAIT_S = 180.0
KILL_AFTER_RECORDS = 40  # output records the killed query wrote in the batch it dies in
RESTART_TRIGGER = "5 seconds"
FIRST_BATCH = "in the first batch"
FIRST_BATCH_LATE_TASK = "in the first batch, the restart's task late"
PAST_FIRST_BATCH = "past the first batch"


def _wait_for(condition, seconds=WAIT_S):
    return wait_until(condition, seconds, interval_s=0.5)


def _out(cluster_path: str) -> list[str]:
    # read_committed, up to the high watermark of the call: the output grows while it is read
    return [v.decode() for v in consume_values_to_end(cluster_path, "out", 2)]


def _differences(out: list[str], produced: list[str]) -> str:
    """What a failed comparison of the output with the input shows: the values missing, the
    values written more than once, and the phantoms (output never produced)."""
    have, want = Counter(out), Counter(produced)
    missing = sorted(want - have, key=lambda v: int(v[1:]))
    repeated = sorted((v for v, n in have.items() if n > 1 and v in want), key=lambda v: int(v[1:]))
    phantom = sorted(have - want)
    return (f"{len(out)} output records for {len(produced)} produced; missing {len(missing)} {missing[:50]}, "
            f"repeated {len(repeated)} {repeated[:50]}, phantom {len(phantom)} {phantom[:50]}")


def _listing(checkpoint: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), checkpoint) for d, _, files in os.walk(checkpoint) for f in files)


def _read_by_batch(query) -> list[tuple[int, int]]:
    """(batch id, input rows read) of each batch of ``query`` that ended."""
    return [(p["batchId"], p["numInputRows"]) for p in query.recentProgress]


def _rows_read(query) -> int:
    """Input rows the batches of ``query`` that ended read, together."""
    return sum(rows for _, rows in _read_by_batch(query))


def _hold_a_task_slot(spark, marks) -> threading.Thread:
    """A job of one task in the session (local[2]: one of its two task slots) that runs until the
    file ``marks / "release"`` exists (at most WAIT_S); ``marks / "held"`` exists once it runs.
    Join the thread returned."""
    held, release, seconds = str(marks / "held"), str(marks / "release"), WAIT_S

    def hold(_) -> None:
        open(held, "w").close()
        deadline = time.monotonic() + seconds
        while not os.path.exists(release) and time.monotonic() < deadline:
            time.sleep(0.1)

    holder = threading.Thread(target=lambda: spark.sparkContext.parallelize([0], 1).foreach(hold))
    holder.start()
    return holder


def _batches(checkpoint: str, log: str) -> list[int]:
    directory = os.path.join(checkpoint, log)
    return sorted(int(n) for n in os.listdir(directory) if n.isdigit()) if os.path.isdir(directory) else []


@pytest.mark.parametrize("moment", [FIRST_BATCH, FIRST_BATCH_LATE_TASK, PAST_FIRST_BATCH])
def test_a_sigkilled_driver_restarted_from_its_checkpoint_writes_each_record_once(spark, cluster_path, make_topic,
                                                                                 tmp_path, moment):
    if jar_path() is None:
        pytest.skip("no kstream jar (jvm/build.sh): the Real-time sink needs it")
    make_topic("in", 2)
    make_topic("out", 2)
    checkpoint = str(tmp_path / "ck")
    first_batch = moment != PAST_FIRST_BATCH
    produced: list[str] = []
    said: list[str] = []
    stop = threading.Event()

    def produce() -> None:
        with Producer({"cluster": cluster_path, "linger.ms": 1, "acks": "all"}) as producer:
            while not stop.is_set():
                value = f"r{len(produced)}"
                producer.produce("in", value.encode(), key=value.encode())
                producer.flush()
                produced.append(value)
                time.sleep(0.02)  # about 40 records/s: the killed query is mid-batch, not behind

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    trigger = "5 minutes" if first_batch else "5 seconds"  # a batch ends (is logged) only in the second case
    driver_log = open(tmp_path / "driver.log", "w")  # the killed driver's Spark log, kept for a failure
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, cluster_path, checkpoint, trigger],
                              start_new_session=True, stdout=subprocess.PIPE, stderr=driver_log, text=True,
                              env=env)
    listener = threading.Thread(target=lambda: said.extend(line.strip() for line in driver.stdout))  # type: ignore
    listener.start()
    producer = threading.Thread(target=produce)
    producer.start()
    try:
        if not first_batch:  # batches 0 and 1 committed: the kill lands in batch 2 or later
            assert _wait_for(lambda: "P 1" in said or driver.poll() is not None), said
        target = len(_out(cluster_path)) + KILL_AFTER_RECORDS
        assert _wait_for(lambda: len(_out(cluster_path)) >= target or driver.poll() is not None), said
        assert driver.poll() is None, f"the driver ended before it was killed: {said}"
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # the Python driver and its Spark JVM, mid-batch
        driver.wait()
        listener.join()
        stop.set()
        producer.join()
        driver_log.close()
    landed = len(_out(cluster_path))
    committed = _batches(checkpoint, "commits")
    killed_with = _listing(checkpoint)
    if first_batch:
        assert _batches(checkpoint, "offsets") == [] and committed == [], killed_with  # died inside batch 0
    else:
        assert committed and committed[-1] >= 1, killed_with
    holder = None
    if moment == FIRST_BATCH_LATE_TASK:
        holder = _hold_a_task_slot(spark, tmp_path)
        assert _wait_for(lambda: (tmp_path / "held").exists()), "the job holding a task slot did not start"
    query = write_real_time(with_source_position(
        spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", "in")
        .option("startingOffsets", "earliest").load()).select("key", "value", "source_topic", "source_partition",
                                                              "source_offset"),
        cluster=cluster_path, topic="out", checkpoint=checkpoint, trigger=RESTART_TRIGGER)
    try:
        assert _wait_for(lambda: query.lastProgress is not None), query.exception()  # a batch of the restart ended
        if holder is not None:
            (tmp_path / "release").touch()  # batch 0 ended: the slot back, for the next batch's tasks
        assert _wait_for(lambda: len(_out(cluster_path)) >= len(produced)), query.exception()
        if first_batch:  # the batches that read the input ended (a batch ends its duration after it was planned)
            assert _wait_for(lambda: _rows_read(query) >= len(produced)), (query.exception(), _read_by_batch(query))
        progress = _read_by_batch(query)
        first = query.recentProgress[0]
    finally:
        query.stop()
        if holder is not None:
            (tmp_path / "release").touch()
            holder.join()
    out = _out(cluster_path)
    context = (f"landed {landed} before the restart; checkpoint at the kill {killed_with}; driver said {said}; "
               f"the restart's (batch, rows read) {progress}")
    assert len(out) == len(produced) and sorted(out) == sorted(produced), f"{_differences(out, produced)}; {context}"
    if first_batch:  # batch 0 again, from the earliest offsets: all the killed query wrote was read again
        assert first["batchId"] == 0 and sum(rows for _, rows in progress) >= len(produced) >= landed, context
        if moment == FIRST_BATCH_LATE_TASK:  # a partition's task ran only after batch 0: batch 1 read that one
            assert first["numInputRows"] < len(produced), context
    else:  # resumed after the last committed batch, the unfinished one replayed
        assert first["batchId"] == committed[-1] + 1, f"{first}; {context}"

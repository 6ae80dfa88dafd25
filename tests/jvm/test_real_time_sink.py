"""The Real-time Mode sink's source-position idempotence (io.kstream.spark.realtime:
KStreamForeachWriter, Flusher, SourcePositions, PositionedSources; docs/TRANSACTIONS.md,
"Source-position idempotence"), driven task by task through RealTimeProbe.java (one writer task
as Spark runs it: construct, open, process per row, close) on a cluster Python made, read back
by Python's read_committed consumer.

The rule: a row whose (sink id, source topic, source partition) identity already has its source
offset (or a later one) in the output partition is dropped; a gap is accepted; two identities
never drop each other's rows; other writers' frames between the sink's own are read under the
partition lock, and two writers of one identity at once (a zombie task) still write each
position once.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
import uuid

import pytest

from helpers import consume_values
from java_probes import SPARK_JARS, probe, probe_command
from kstream import Admin, NewTopic, Producer
from kstream.jars import jar_path
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage.lock import PartitionLock
from kstream.log.storage.partition_log import PartitionLog

RT_PROBE = probe("realtime/RealTimeProbe.java")
JAVA_TIMEOUT_S = 180

pytestmark = pytest.mark.jvm


def _command(*args: str) -> list[str]:
    if shutil.which("java") is None or jar_path() is None:
        pytest.skip("no java or no kstream jar (jvm/build.sh): the Real-time sink not checked")
    return probe_command(RT_PROBE, *args, classpath=[jar_path(), SPARK_JARS],
                         java_options=["--add-opens=java.base/java.nio=ALL-UNNAMED"])


def _checkpoint(tmp_path, name: str) -> str:
    path = tmp_path / name
    path.mkdir()
    (path / "metadata").write_text(json.dumps({"id": str(uuid.uuid4())}) + "\n")
    return str(path)


def _lines(rows) -> str:
    return "".join(f"{topic} {partition} {offset} {topic}-{partition}-{offset}\n" for topic, partition, offset in rows)


def _write(cluster: str, checkpoint: str, rows, acks: str = "all", expect: int = 0) -> str:
    result = subprocess.run(_command("write", cluster, "out", checkpoint, acks), input=_lines(rows),
                            capture_output=True, text=True, timeout=JAVA_TIMEOUT_S, check=False)
    assert result.returncode == expect, (result.stdout[-3000:], result.stderr[-5000:])
    return result.stdout


def _source(topic: str, offsets) -> list[tuple[str, int, int]]:
    return [(topic, 0, o) for o in offsets]


def _values(cluster: str, partitions: int = 1) -> list[str]:
    return [v.decode() for v in consume_values(cluster, "out", partitions)]


@pytest.fixture
def cluster(cluster_path) -> str:
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("out", 1)])["out"].result()
    return cluster_path


def test_a_replay_writes_each_position_once_and_a_gap_is_accepted(cluster, tmp_path):
    checkpoint = _checkpoint(tmp_path, "ck")
    assert _write(cluster, checkpoint, _source("in", range(100))).strip() == "closed"
    # A restarted query replays from its checkpoint: 50..149, then a gap (150..199 never came).
    _write(cluster, checkpoint, _source("in", range(50, 150)))
    _write(cluster, checkpoint, _source("in", range(200, 210)))
    # A replay reaching back before anything written, in the same task as new rows.
    _write(cluster, checkpoint, _source("in", [*range(0, 10), 205, 209, 210]))
    expected = [f"in-0-{o}" for o in [*range(150), *range(200, 211)]]
    assert _values(cluster) == expected


def test_two_identities_never_drop_each_others_rows(cluster, tmp_path):
    first, second = _checkpoint(tmp_path, "one"), _checkpoint(tmp_path, "two")
    _write(cluster, first, _source("in", range(20)))
    _write(cluster, second, _source("in", range(20)))  # another query: another sink id
    _write(cluster, first, [("in", 1, o) for o in range(5)])  # another source partition
    _write(cluster, first, _source("other", range(5)))  # another source topic
    values = _values(cluster)
    assert sorted(values) == sorted([f"in-0-{o}" for o in range(20)] * 2 + [f"in-1-{o}" for o in range(5)]
                                    + [f"other-0-{o}" for o in range(5)])


def test_other_writers_frames_interleaved_are_read_and_python_reads_the_frames(cluster, tmp_path):
    checkpoint = _checkpoint(tmp_path, "ck")
    stop = threading.Event()
    produced: list[str] = []

    def python_producer() -> None:
        producer = Producer({"cluster": cluster, "acks": "all", "linger.ms": 0})
        try:
            while not stop.is_set():
                value = f"py-{len(produced)}"
                producer.produce("out", value=value.encode(), partition=0)
                producer.flush()
                produced.append(value)
        finally:
            producer.close()

    thread = threading.Thread(target=python_producer)
    thread.start()
    try:
        _write(cluster, checkpoint, _source("in", range(300)))
        _write(cluster, checkpoint, _source("in", range(200, 400)))
    finally:
        stop.set()
        thread.join()
    values = _values(cluster)
    assert [v for v in values if v.startswith("in-")] == [f"in-0-{o}" for o in range(400)]
    assert [v for v in values if v.startswith("py-")] == produced
    assert _open_with_python(cluster) == 0  # Python's next writer cuts nothing


def test_two_writers_of_one_identity_at_once_write_each_position_once(cluster, tmp_path):
    checkpoint = _checkpoint(tmp_path, "ck")
    rows = _source("in", range(2000))
    writers = [subprocess.Popen(_command("write", cluster, "out", checkpoint, "all"), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [w.communicate(_lines(rows), timeout=JAVA_TIMEOUT_S) for w in writers]
    assert [w.returncode for w in writers] == [0, 0], outs
    assert sorted(_values(cluster), key=lambda v: int(v.rsplit("-", 1)[1])) == [f"in-0-{o}" for o in range(2000)]


def test_a_killed_writer_restarted_writes_the_rest_once(cluster, tmp_path):
    checkpoint = _checkpoint(tmp_path, "ck")
    writer = subprocess.Popen(_command("write", cluster, "out", checkpoint, "all"), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert writer.stdin is not None
    writer.stdin.write(_lines(_source("in", range(500))))
    writer.stdin.flush()
    # Let some of it land, then die as a SIGKILLed task does (no close: no snapshot saved).
    deadline = time.monotonic() + JAVA_TIMEOUT_S
    while len(_values(cluster)) < 100:
        assert time.monotonic() < deadline and writer.poll() is None, "the writer landed nothing"
    writer.stdin.write("kill\n")
    writer.stdin.close()
    writer.wait(timeout=JAVA_TIMEOUT_S)
    landed = len(_values(cluster))
    assert 100 <= landed <= 500
    _write(cluster, checkpoint, _source("in", range(600)))  # the restart replays everything
    assert _values(cluster) == [f"in-0-{o}" for o in range(600)]


def test_the_writer_refuses_rows_without_a_source_position(cluster, tmp_path):
    checkpoint = _checkpoint(tmp_path, "ck")
    result = subprocess.run(_command("write", cluster, "out", checkpoint, "all", "columns"), capture_output=True,
                            text=True, timeout=JAVA_TIMEOUT_S, check=False)
    assert result.returncode == 2, (result.stdout, result.stderr[-3000:])
    assert "InvalidRecordError" in result.stdout and "source_offset" in result.stdout


def _open_with_python(cluster: str) -> int:
    opened = Cluster.open(cluster)
    try:
        info = opened.topic("out")
        directory = next(iter(opened.replica_dirs(info, info.partitions[0]).values()))
        log = PartitionLog(directory, opened.log_config(info), PartitionLock(opened.lock_path(info, 0)))
        try:
            log.open()
            return log.truncated_bytes
        finally:
            log.close()
    finally:
        opened.close()


def test_the_source_position_is_invisible_to_readers(cluster, tmp_path):
    _write(cluster, _checkpoint(tmp_path, "ck"), _source("in", range(3)))
    from kstream import Consumer, TopicPartition

    consumer = Consumer({"cluster": cluster, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition("out", 0, 0)])
    try:
        batch = consumer.poll_batch(10, 5.0)
    finally:
        consumer.close()
    assert batch is not None and batch.num_rows == 3
    assert batch.column("value").to_pylist() == [f"in-0-{o}".encode() for o in range(3)]
    assert not batch.schema.metadata  # the frame's source position stays in the log


def test_two_rows_of_one_source_record_for_one_partition_are_refused(cluster, tmp_path):
    out = _write(cluster, _checkpoint(tmp_path, "ck"), [("in", 0, 0), ("in", 0, 1), ("in", 0, 1)], expect=2)
    assert "InvalidRecordError" in out and "one row per source record" in out


def test_a_negative_source_offset_is_refused_not_dropped_as_a_replay(cluster, tmp_path):
    """A source offset below 0 (a -1 put in for a null) is no position: taken as one, it was
    below the identity's last and dropped as a replay without a word."""
    out = _write(cluster, _checkpoint(tmp_path, "ck"), [("in", 0, 5), ("in", 0, -1), ("in", 0, 6)], expect=2)
    assert "InvalidRecordError" in out and "source_offset -1" in out


def test_a_bigint_source_partition_past_an_int_is_refused_not_cut_to_another_identity(cluster, tmp_path):
    """A bigint source_partition 2^32 + 1 was cut to 1: the identity of partition 1, whose
    offsets it then shared (rows dropped as replays of the other partition's)."""
    result = subprocess.run(_command("write", cluster, "out", _checkpoint(tmp_path, "ck"), "all", "long"),
                            input=_lines([("in", 1, 7), ("in", 2**32 + 1, 3)]), capture_output=True, text=True,
                            timeout=JAVA_TIMEOUT_S, check=False)
    assert result.returncode == 2, (result.stdout[-3000:], result.stderr[-3000:])
    assert "InvalidRecordError" in result.stdout and f"source_partition {2**32 + 1}" in result.stdout

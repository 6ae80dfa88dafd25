"""The Java append path (io.kstream.spark.log.PartitionAppender) against Python's: frames
appended by Java are read back by Python's consumer (poll, poll_batch) and by the JVM reader;
Python opens the partition without recovering anything; the same appends by Python and by
Java make the same files (segments, indexes, recovery point, leader epochs); a Python producer
and a Java appender appending at once keep offsets contiguous with no frame interleaved; a
SIGKILLed Java appender loses nothing it acknowledged and its torn tail is cut.

Java runs AppenderProbe.java (compiled once by tests/java_probes.py; the kstream jar and pyspark's jars on the class
path; skipped with one line without java or a built jar). Frames are encoded once by Java
(``encode``) so that both writers append the very same payloads and the files can be compared
byte for byte.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import threading
import time
import zlib

import pytest

from java_probes import SPARK_JARS, probe, probe_command
from kstream import OFFSET_BEGINNING, Admin, Consumer, NewTopic, Producer, TopicPartition
from kstream.jars import jar_path
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import format as fmt
from kstream.log.storage.frames import FrameWalk, pread_from
from kstream.log.storage.lock import PartitionLock
from kstream.log.storage.partition_log import EncodedBatch, PartitionLog
from kstream.log.storage.records import Payload

PROBE = probe("log/AppenderProbe.java")
JAVA_TIMEOUT_S = 180
# Small segments and index intervals, so a few hundred frames roll several segments and index often.
TOPIC_CONFIG = {"segment.bytes": "20000", "index.interval.bytes": "700"}

pytestmark = pytest.mark.jvm


def _java_command(*args: str) -> list[str]:
    if shutil.which("java") is None or jar_path() is None:
        pytest.skip("no java or no kstream jar (jvm/build.sh): the Java appender not checked")
    return probe_command(PROBE, *args, classpath=[jar_path(), SPARK_JARS],
                         java_options=["--add-opens=java.base/java.nio=ALL-UNNAMED"])


def _java(*args: str) -> str:
    result = subprocess.run(_java_command(*args), capture_output=True, text=True, timeout=JAVA_TIMEOUT_S,
                            check=False)
    assert result.returncode == 0, result.stderr[-5000:]
    return result.stdout


def _frames(path: str) -> list[bytes]:
    with open(path, "rb") as f:
        raw = f.read()
    out, at = [], 0
    while at < len(raw):
        size = fmt.LENGTH_SIZE + int.from_bytes(raw[at:at + 4], "little")
        out.append(raw[at:at + size])
        at += size
    return out


def _frame_count(directory: str) -> int:
    count = 0
    for name in os.listdir(directory):
        if name.endswith(fmt.LOG_SUFFIX):
            fd = os.open(os.path.join(directory, name), os.O_RDONLY)
            try:
                walk = FrameWalk(pread_from(fd), os.fstat(fd).st_size, verify_payload=True)
                count += sum(1 for _ in walk)
                assert walk.problem is None, walk.problem
            finally:
                os.close(fd)
    return count


class _Topic:
    def __init__(self, cluster_path: str, name: str, config: dict[str, str]):
        with Admin({"cluster": cluster_path}) as admin:
            admin.create_topics([NewTopic(name, 1, 1, config=config)])[name].result()
        cluster = Cluster.open(cluster_path)
        try:
            info = cluster.topic(name)
            partition = info.partitions[0]
            self.dir = next(iter(cluster.replica_dirs(info, partition).values()))
            self.lock = cluster.lock_path(info, 0)
            self.epoch = partition.leader_epoch
            self.log_config = cluster.log_config(info)
        finally:
            cluster.close()
        self.name = name
        self.cluster_path = cluster_path

    def java_append(self, frames_file: str, per_call: int, acks: str = "all", config=TOPIC_CONFIG
                    ) -> list[tuple[int, int]]:
        out = _java("append", self.dir, self.lock, frames_file, str(per_call), acks, str(self.epoch),
                    *[f"{k}={v}" for k, v in config.items()])
        return [tuple(map(int, line.split())) for line in out.splitlines()]

    def python_append(self, frames: list[bytes], per_call: int) -> list[tuple[int, int]]:
        log = PartitionLog(self.dir, self.log_config, PartitionLock(self.lock))
        results = []
        try:
            for i in range(0, len(frames), per_call):
                first = None
                for raw in frames[i:i + per_call]:
                    header = fmt.unpack_header(raw[:fmt.HEADER_SIZE])
                    payload = raw[fmt.HEADER_SIZE:]
                    batch = EncodedBatch(Payload((payload,), len(payload), header.payload_crc, header.schema_length),
                                         header.record_count, header.min_timestamp, header.max_timestamp)
                    result = log.append(batch, self.epoch)
                    first = result.base_offset if first is None else first
                    end = result.base_offset + header.record_count
                log.flush()
                results.append((first, end))
        finally:
            log.close()
        return results

    def values(self) -> list[tuple[int, bytes]]:
        consumer = Consumer({"cluster": self.cluster_path})
        consumer.assign([TopicPartition(self.name, 0, OFFSET_BEGINNING)])
        out = []
        try:
            while (message := consumer.poll(0.5)) is not None:
                assert message.error() is None, message.error()
                out.append((message.offset(), message.value()))
        finally:
            consumer.close()
        return out

    def open_with_python(self) -> PartitionLog:
        log = PartitionLog(self.dir, self.log_config, PartitionLock(self.lock))
        log.open()
        return log

    def high_watermark(self) -> int | None:
        lock = PartitionLock(self.lock)
        try:
            with lock:
                return lock.read_high_watermark()
        finally:
            lock.close()


@pytest.fixture(scope="module")
def encoded(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("java-appender") / "j.frames")
    _java("encode", out, "300", "7", "j")
    return out


def test_java_appends_read_back_by_python_and_the_jvm_reader(cluster_path, encoded):
    topic = _Topic(cluster_path, "j", TOPIC_CONFIG)
    acked = topic.java_append(encoded, per_call=4)
    assert acked[0] == (0, 28) and acked[-1][1] == 2100
    assert all(a[1] == b[0] for a, b in itertools.pairwise(acked))  # contiguous calls
    expected = [(i, f"j-{i}".encode()) for i in range(2100)]
    assert topic.values() == expected
    consumer = Consumer({"cluster": cluster_path})
    consumer.assign([TopicPartition("j", 0, OFFSET_BEGINNING)])
    batches = []
    while (batch := consumer.poll_batch(500, timeout=0.5)) is not None:
        batches.append(batch)
    consumer.close()
    got = [(o, v) for b in batches for o, v in zip(b.column("offset").to_pylist(), b.column("value").to_pylist(),
                                                 strict=True)]
    assert got == expected
    jvm = [(int(o), v.encode()) for o, v in (line.split(" ", 1) for line in _java("read", topic.dir).splitlines())]
    assert jvm == expected
    assert len([n for n in os.listdir(topic.dir) if n.endswith(".log")]) > 3  # it rolled
    # Python opens it as a clean log: nothing cut, same end, recovery point at the end, HW published.
    log = topic.open_with_python()
    try:
        assert log.truncated_bytes == 0
        assert log.log_end_offset() == 2100
        point = log.recovery_point()
        assert isinstance(point, fmt.RecoveryPoint) and point.next_offset == 2100
        assert log.epochs().entries == [(topic.epoch, 0)]
    finally:
        log.close()
    assert topic.high_watermark() == 2100


def _structure(directory: str) -> dict[str, object]:
    """The files of a replica as what they mean: segment headers (payload bytes left out), index
    entries, the recovery point and the leader epochs."""
    out: dict[str, object] = {}
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if name.endswith(fmt.LOG_SUFFIX):
            fd = os.open(path, os.O_RDONLY)
            try:
                walk = FrameWalk(pread_from(fd), os.fstat(fd).st_size, verify_payload=True)
                out[name] = [(position, header._replace(header_crc=0)) for position, header in walk]
                assert walk.problem is None, (name, walk.problem)
            finally:
                os.close(fd)
        elif name == fmt.RECOVERY_POINT_FILE:
            with open(path, "rb") as f:
                out[name] = fmt.unpack_recovery_point_file(f.read())[1]
        elif name.endswith(".lock"):
            continue
        else:
            with open(path, "rb") as f:
                out[name] = zlib.crc32(f.read()), os.path.getsize(path)
    return out


def test_same_appends_by_python_and_java_make_the_same_files(cluster_path, encoded):
    java, python = _Topic(cluster_path, "j", TOPIC_CONFIG), _Topic(cluster_path, "p", TOPIC_CONFIG)
    assert java.epoch == python.epoch
    frames = _frames(encoded)
    assert java.java_append(encoded, per_call=3) == python.python_append(frames, per_call=3)
    java_files, python_files = _structure(java.dir), _structure(python.dir)
    assert sorted(java_files) == sorted(python_files)
    for name in java_files:
        assert java_files[name] == python_files[name], name
    assert sum(name.endswith(fmt.OFFSET_INDEX_SUFFIX) and python_files[name][1] > 0 for name in python_files) > 3


def test_python_producer_and_java_appender_at_once(cluster_path, tmp_path):
    topic = _Topic(cluster_path, "both", {})
    frames_file = str(tmp_path / "one-row.frames")
    _java("encode", frames_file, "3000", "1", "j")
    java = subprocess.Popen(_java_command("append", topic.dir, topic.lock, frames_file, "1", "1", str(topic.epoch)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = threading.Event()
    java_lines: list[str] = []

    def read_java() -> None:
        for line in java.stdout:
            java_lines.append(line)
            started.set()
        started.set()

    reader = threading.Thread(target=read_java)
    reader.start()
    assert started.wait(JAVA_TIMEOUT_S)
    produced = 0
    with Producer({"cluster": cluster_path, "acks": "1", "linger.ms": 0}) as producer:
        while java.poll() is None or produced < 2000:
            producer.produce("both", f"p-{produced}".encode(), key=b"k")
            produced += 1
            producer.flush()  # one record, one frame
        producer.flush()
    reader.join(JAVA_TIMEOUT_S)
    assert java.wait(JAVA_TIMEOUT_S) == 0, java.stderr.read()[-5000:]
    assert len(java_lines) == 3000
    records = topic.values()
    assert [o for o, _ in records] == list(range(3000 + produced))  # contiguous, no gap, nothing twice
    values = [v for _, v in records]
    assert sorted(v for v in values if v.startswith(b"j-")) == sorted(f"j-{i}".encode() for i in range(3000))
    assert sorted(v for v in values if v.startswith(b"p-")) == sorted(f"p-{i}".encode() for i in range(produced))
    assert [v for v in values if v.startswith(b"p-")] == [f"p-{i}".encode() for i in range(produced)]  # in order
    switches = sum(1 for a, b in itertools.pairwise(values) if a[:2] != b[:2])
    frames = _frame_count(topic.dir)
    assert frames == 3000 + produced, "every record its own frame: thousands of frames from each writer"
    assert switches >= 4, "the writers never appended between each other's frames: no concurrency was tested"
    log = topic.open_with_python()
    try:
        assert log.truncated_bytes == 0 and log.log_end_offset() == 3000 + produced
    finally:
        log.close()


def test_sigkilled_java_appender_loses_nothing_acknowledged(cluster_path, tmp_path, encoded):
    topic = _Topic(cluster_path, "kill", TOPIC_CONFIG)
    java = subprocess.Popen(_java_command("append", topic.dir, topic.lock, encoded, "1", "all", str(topic.epoch),
                                          *[f"{k}={v}" for k, v in TOPIC_CONFIG.items()]),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    acked_end = 0
    for line in java.stdout:
        acked_end = int(line.split()[1])
        if acked_end >= 7 * 120:
            break
    java.send_signal(signal.SIGKILL)
    java.wait(JAVA_TIMEOUT_S)
    assert acked_end >= 7 * 120
    # A torn tail as a write cut short leaves it: half of a frame after the last whole one.
    last = max(n for n in os.listdir(topic.dir) if n.endswith(fmt.LOG_SUFFIX))
    half = _frames(encoded)[0]
    with open(os.path.join(topic.dir, last), "ab") as f:
        f.write(half[:len(half) // 2])
    assert topic.high_watermark() >= acked_end
    # Python recovers: the torn tail is cut, every acknowledged record is there once, in order.
    log = topic.open_with_python()
    try:
        assert log.truncated_bytes > 0
        end = log.log_end_offset()
    finally:
        log.close()
    assert end >= acked_end and end % 7 == 0
    assert topic.values() == [(i, f"j-{i}".encode()) for i in range(topic.high_watermark())]


def test_java_appender_cuts_a_torn_tail_it_finds(cluster_path, encoded, tmp_path):
    topic = _Topic(cluster_path, "torn", TOPIC_CONFIG)
    first = str(tmp_path / "first.frames")
    frames = _frames(encoded)
    with open(first, "wb") as out:
        out.write(b"".join(frames[:10]))
    assert topic.java_append(first, per_call=10, acks="1")[-1] == (0, 70)
    segment = os.path.join(topic.dir, fmt.segment_file_name(0))
    whole = os.path.getsize(segment)
    with open(segment, "ab") as f:
        f.write(frames[0][:100])  # a killed writer's half frame, past the recovery point
    assert topic.java_append(first, per_call=10, acks="all")[-1] == (70, 140)
    assert topic.values() == [(i, f"j-{i % 70}".encode()) for i in range(140)]
    log = topic.open_with_python()
    try:
        assert log.truncated_bytes == 0 and log.log_end_offset() == 140
    finally:
        log.close()
    assert os.path.getsize(segment) > whole


def test_log_append_time_topics_get_the_append_time(cluster_path, encoded):
    config = {**TOPIC_CONFIG, "message.timestamp.type": "LogAppendTime"}
    topic = _Topic(cluster_path, "lat", config)
    before = int(time.time() * 1000)
    topic.java_append(encoded, per_call=50, acks="1", config=config)
    after = int(time.time() * 1000)
    consumer = Consumer({"cluster": cluster_path})
    consumer.assign([TopicPartition("lat", 0, OFFSET_BEGINNING)])
    seen = 0
    try:
        while (message := consumer.poll(0.5)) is not None:
            kind, timestamp = message.timestamp()
            assert kind == 2 and before <= timestamp <= after, (kind, timestamp, before, after)  # LogAppendTime
            seen += 1
    finally:
        consumer.close()
    assert seen == 2100
    for name in os.listdir(topic.dir):
        if name.endswith(fmt.LOG_SUFFIX):
            fd = os.open(os.path.join(topic.dir, name), os.O_RDONLY)
            try:
                for _, header in FrameWalk(pread_from(fd), os.fstat(fd).st_size, verify_payload=True):
                    assert header.attributes & fmt.LOG_APPEND_TIME
                    assert header.min_timestamp == header.max_timestamp
            finally:
                os.close(fd)

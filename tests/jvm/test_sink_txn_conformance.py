"""The Java side of the Spark sink's exactly-once protocol (io.kstream.spark.txn: SinkTaskWriter,
SinkCommitter, SinkStore on metadata.db through sqlite-jdbc) against Python's
(kstream.log.transactions.sink): the same rows, frames, markers and .txnindex entries, so that a
task of either language is committed or aborted by a driver of either, zombies are fenced
across languages, and what is not committed is never visible to read_committed readers (Python's
consumer and the JVM reader's TransactionState + LogReader).

Java runs TxnProbe.java (compiled once by tests/java_probes.py; the kstream jar and pyspark's jars on the class path;
skipped with one line without java or a built jar); frames are encoded by AppenderProbe.java.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from helpers import consume_values
from java_probes import SPARK_JARS, probe, probe_command
from kstream import Admin, FencedError, NewTopic, Producer
from kstream.jars import jar_path
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import format as fmt
from kstream.log.storage.frames import FrameWalk, pread_from
from kstream.log.storage.lock import PartitionLock
from kstream.log.storage.partition_log import PartitionLog
from kstream.log.storage.txn_index_reader import TxnIndexReader
from kstream.log.transactions import store as txn_store
from kstream.log.transactions.expiry import try_expire
from kstream.log.transactions.sink import SinkStore, SinkTaskWriter, TaskWrites
from kstream.log.transactions.store import TransactionStore

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TXN_PROBE = probe("txn/TxnProbe.java")
APPENDER_PROBE = probe("log/AppenderProbe.java")
JAVA_TIMEOUT_S = 180
FRAMES, ROWS = 6, 5  # per encoded file: 30 records

pytestmark = pytest.mark.jvm


def _java_command(probe: str, *args: str) -> list[str]:
    if shutil.which("java") is None or jar_path() is None:
        pytest.skip("no java or no kstream jar (jvm/build.sh): the Java sink protocol not checked")
    return probe_command(probe, *args, classpath=[jar_path(), SPARK_JARS],
                         java_options=["--add-opens=java.base/java.nio=ALL-UNNAMED"])


def _java(probe: str, *args: str, expect: int = 0) -> str:
    result = subprocess.run(_java_command(probe, *args), capture_output=True, text=True, timeout=JAVA_TIMEOUT_S,
                            check=False)
    assert result.returncode == expect, (result.stdout[-3000:], result.stderr[-5000:])
    return result.stdout


def _timeout(path: str) -> str:
    cluster = Cluster.open(path)
    try:
        timeout = TransactionStore.for_cluster(cluster).default_timeout_ms
    finally:
        cluster.close()
    return "-" if timeout is None else str(timeout)


class _Sink:
    """A cluster with topic ``t`` (``partitions``), and the two languages' sides of one sink."""

    def __init__(self, path: str, frames_dir, partitions: int = 2, cluster_options=None):
        with Admin({"cluster": path, **(cluster_options or {})}) as admin:
            admin.create_topics([NewTopic("t", partitions)])["t"].result()
        self.path = path
        self.timeout = _timeout(path)
        self.frames_dir = frames_dir

    def encode(self, tag: str) -> str:
        out = str(self.frames_dir / f"{tag}.frames")
        _java(APPENDER_PROBE, "encode", out, str(FRAMES), str(ROWS), tag)
        return out

    def java_task(self, sink_id: str, tag: str, partitions: list[int], batch_id: int | None = None,
                  expect: int = 0) -> TaskWrites | str:
        out = _java(TXN_PROBE, "task", self.path, sink_id, "-" if batch_id is None else str(batch_id),
                    self.timeout, self.encode(tag), "2", ",".join(f"t:{p}" for p in partitions), expect=expect)
        if expect != 0:
            return out
        [[producer_id, written, records]] = json.loads(out)
        return TaskWrites(producer_id, tuple((t, p) for t, p in written), records)

    def java_commit(self, sink_id: str, batch_id: int, writes: list[TaskWrites], expect: int = 0) -> str:
        return _java(TXN_PROBE, "commit", self.path, sink_id, str(batch_id), self.timeout, _json(writes),
                     expect=expect).strip()

    def java_abort(self, sink_id: str, writes: list[TaskWrites]) -> None:
        assert _java(TXN_PROBE, "abort", self.path, sink_id, self.timeout, _json(writes)).strip() == "aborted"

    def python_task(self, sink_id: str, values: list[bytes], partition: int) -> TaskWrites:
        producer = Producer({"cluster": self.path, "acks": "all", "enable.idempotence": False})
        try:
            writer = SinkTaskWriter(SinkStore(producer.cluster), sink_id)
            producer.bind_sink_transaction(writer)
            for value in values:
                producer.produce("t", value, partition=partition)
            producer.flush()
        finally:
            producer.close()
        return TaskWrites(writer.producer_id, tuple(sorted(writer.partitions)), len(values))

    def store(self) -> tuple[Cluster, SinkStore]:
        cluster = Cluster.open(self.path)
        return cluster, SinkStore(cluster)

    def python_commit(self, sink_id: str, batch_id: int, writes: list[TaskWrites]) -> bool:
        cluster, store = self.store()
        try:
            return store.commit(sink_id, batch_id, writes)
        finally:
            cluster.close()

    def jvm_committed(self, partition: int) -> tuple[list[bytes], int]:
        lines = _java(TXN_PROBE, "committed", self.path, "t", str(partition)).splitlines()
        assert lines[-1].startswith("LSO ")
        return [line.split(" ", 1)[1].encode() for line in lines[:-1]], int(lines[-1].split()[1])

    def rows(self, sql: str, args=()) -> list[tuple]:
        cluster = Cluster.open(self.path)
        try:
            return cluster.metadata.read_rows(sql, args)
        finally:
            cluster.close()

    def txn_entries(self, partition: int) -> list[tuple[int, int, int]]:
        cluster = Cluster.open(self.path)
        try:
            info = cluster.topic("t")
            directory = next(iter(cluster.replica_dirs(info, info.partitions[partition]).values()))
        finally:
            cluster.close()
        out = []
        for name in sorted(os.listdir(directory)):
            if name.endswith(fmt.TXN_INDEX_SUFFIX):
                with open(os.path.join(directory, name), "rb") as f:
                    entries, clean = fmt.unpack_txn_entries(f.read())
                assert clean, name
                out.extend((e.kind, e.producer_id, e.offset) for e in entries)
        return out

    def frames(self, partition: int) -> list[tuple[fmt.FrameHeader, bytes]]:
        """Every frame of the partition (header, payload), checksums checked."""
        directory = self.replica_dir(partition)
        out = []
        for name in sorted(os.listdir(directory)):
            if name.endswith(fmt.LOG_SUFFIX):
                fd = os.open(os.path.join(directory, name), os.O_RDONLY)
                try:
                    read = pread_from(fd)
                    walk = FrameWalk(read, os.fstat(fd).st_size, verify_payload=True)
                    out.extend((h, read(p + fmt.HEADER_SIZE, h.payload_size)) for p, h in walk)
                    assert walk.problem is None, walk.problem
                finally:
                    os.close(fd)
        return out

    def open_with_python(self, partition: int) -> int:
        """Open the partition's log as Python's next writer does; the bytes it cut."""
        cluster = Cluster.open(self.path)
        try:
            info = cluster.topic("t")
            log = PartitionLog(self.replica_dir(partition), cluster.log_config(info),
                               PartitionLock(cluster.lock_path(info, partition)))
            try:
                log.open()
                return log.truncated_bytes
            finally:
                log.close()
        finally:
            cluster.close()

    def replica_dir(self, partition: int) -> str:
        cluster = Cluster.open(self.path)
        try:
            info = cluster.topic("t")
            return next(iter(cluster.replica_dirs(info, info.partitions[partition]).values()))
        finally:
            cluster.close()


def _json(writes: list[TaskWrites]) -> str:
    return json.dumps([[w.producer_id, [list(p) for p in w.partitions], w.records] for w in writes])


def _values(tag: str) -> list[bytes]:
    return [f"{tag}-{i}".encode() for i in range(FRAMES * ROWS)]


@pytest.fixture
def sink(cluster_path, tmp_path) -> _Sink:
    return _Sink(cluster_path, tmp_path)


def test_java_schema_is_pythons(sink):
    assert _java(TXN_PROBE, "schema") == txn_store._SCHEMA


@pytest.mark.parametrize("options", [{}, {"transaction.max.timeout.ms": 1500}])
def test_java_reads_the_clusters_sink_timeout_as_python(tmp_path, options):
    path = str(tmp_path / "c")
    with Admin({"cluster": path, **options}) as admin:
        admin.create_topics([NewTopic("t", 1)])["t"].result()
    assert _java(TXN_PROBE, "timeout", path).strip() == _timeout(path)


def test_java_reads_an_older_clusters_stored_transaction_timeout(tmp_path):
    path = str(tmp_path / "c")
    with Admin({"cluster": path}) as admin:
        admin.create_topics([NewTopic("t", 1)])["t"].result()
    with open(os.path.join(path, fmt.CLUSTER_PROPERTIES), "a", encoding="utf-8") as f:
        f.write("transaction.timeout.ms=2000\n")  # what a cluster created by an older kstream may hold
    assert _timeout(path) == "2000"
    assert _java(TXN_PROBE, "timeout", path).strip() == "2000"


def test_java_task_committed_by_python_read_committed_by_both_readers(sink):
    sink_id = "stream:q1"
    writes = sink.java_task(sink_id, "a", [0, 1])
    assert writes.partitions == (("t", 0), ("t", 1)) and writes.records == 30
    # Written, fsynced, not visible: the open rows hold the LSO at each partition's first offset.
    assert sink.rows("SELECT partition, first_offset FROM open_transaction_partitions ORDER BY partition") == [
        (0, 0), (1, 0)]
    assert sink.rows("SELECT sink_id, producer_id FROM sink_producers") == [(sink_id, writes.producer_id)]
    assert consume_values(sink.path, "t", 2) == []
    assert sink.jvm_committed(0) == ([], 0)
    # Calls of 2 frames (5 records each) round robin: partition 0 has frames 0, 1, 4, 5, partition 1
    # frames 2, 3; each with the producer id, the transactional bit and its index entry.
    assert sink.txn_entries(0) == [(fmt.TXN_DATA, writes.producer_id, o) for o in (0, 5, 10, 15)]
    assert sink.txn_entries(1) == [(fmt.TXN_DATA, writes.producer_id, o) for o in (0, 5)]
    assert sink.python_commit(sink_id, 0, [writes])
    everything = _values("a")
    by_python = consume_values(sink.path, "t", 2)
    assert sorted(by_python) == sorted(everything)
    jvm0, lso0 = sink.jvm_committed(0)
    jvm1, lso1 = sink.jvm_committed(1)
    assert sorted(jvm0 + jvm1) == sorted(everything)
    assert (lso0, lso1) == (21, 11)  # the records and a COMMIT marker on each
    assert sink.rows("SELECT * FROM open_transaction_partitions") == []
    assert sink.rows("SELECT * FROM sink_producers") == []
    assert sink.rows("SELECT batch_id, state FROM sink_batches") == [(0, "Committed")]
    # The data frames' producer fields are what Python's sink producer writes: the task's id, epoch 0,
    # no sequence, TRANSACTIONAL; and Python's next writer opens the files as they are.
    *data, (marker, payload) = sink.frames(1)
    for header, _ in data:
        assert (header.producer_id, header.producer_epoch, header.base_sequence) == (writes.producer_id, 0, -1)
        assert header.attributes & (fmt.TRANSACTIONAL | fmt.CONTROL) == fmt.TRANSACTIONAL
    assert marker.attributes & (fmt.TRANSACTIONAL | fmt.CONTROL) == fmt.TRANSACTIONAL | fmt.CONTROL
    assert fmt.marker_kind(payload, marker.schema_length) == fmt.TXN_COMMIT  # Python's marker, from Python's driver
    before = sink.txn_entries(0)
    assert sink.open_with_python(0) == 0
    assert sink.txn_entries(0) == before


def test_python_task_committed_by_the_java_driver(sink):
    sink_id = "stream:q2"
    writes = sink.python_task(sink_id, _values("p"), partition=1)
    assert consume_values(sink.path, "t", 2) == []
    assert sink.java_commit(sink_id, 5, [writes]) == "committed"
    assert consume_values(sink.path, "t", 2) == _values("p")
    assert sink.jvm_committed(1) == (_values("p"), 31)
    entries = sink.txn_entries(1)
    assert entries[-1] == (fmt.TXN_COMMIT, writes.producer_id, 30)  # the Java marker's entry
    assert sink.rows("SELECT batch_id, state FROM sink_batches") == [(5, "Committed")]
    assert sink.rows("SELECT * FROM open_transaction_partitions") == []
    # A replay of the batch commits nothing again; an older batch is a rolled-back checkpoint.
    replay = sink.python_task(sink_id, [b"again"], partition=1)
    assert sink.java_commit(sink_id, 5, [replay]) == "replay"
    older = sink.python_task(sink_id, [b"older"], partition=1)
    out = sink.java_commit(sink_id, 4, [older], expect=2)
    assert out.startswith("CheckpointError: ") and "rolled back" in out
    assert consume_values(sink.path, "t", 2) == _values("p")
    assert sink.rows("SELECT * FROM open_transaction_partitions") == []


def test_java_driver_commits_java_and_python_tasks_together(sink):
    sink_id = "batch:j1"
    java = sink.java_task(sink_id, "j", [0], batch_id=0)
    python = sink.python_task(sink_id, _values("p"), partition=0)
    assert sink.java_commit(sink_id, 0, [java, python]) == "committed"
    assert sorted(consume_values(sink.path, "t", 2)) == sorted(_values("j") + _values("p"))
    # The batch is decided: a late attempt of it (Java) is refused before it writes.
    out = sink.java_task(sink_id, "late", [0], batch_id=0, expect=2)
    assert out.startswith("FencedError: ") and "already Committed" in out


def test_an_aborted_java_write_is_never_visible(sink):
    sink_id = "stream:q3"
    writes = sink.java_task(sink_id, "x", [0, 1])
    sink.java_abort(sink_id, [writes])
    assert consume_values(sink.path, "t", 2) == []
    assert consume_values(sink.path, "t", 2, level="read_uncommitted") != []
    for partition, marker in ((0, 20), (1, 10)):
        values, lso = sink.jvm_committed(partition)
        assert values == [] and lso == marker + 1
        assert sink.txn_entries(partition)[-1] == (fmt.TXN_ABORT, writes.producer_id, marker)
        # from the files alone, as the Python reader sees it
        assert TxnIndexReader(sink.replica_dir(partition)).state(marker + 1).aborted == (
            (writes.producer_id, 0, marker),)
    assert sorted(sink.rows("SELECT partition, producer_id, first_offset, last_offset FROM aborted_transactions")) == [
        (0, writes.producer_id, 0, 20), (1, writes.producer_id, 0, 10)]
    assert sink.rows("SELECT * FROM sink_producers") == []
    # The Java marker is one Python reads as ABORT from its payload, as a Python marker.
    header, payload = sink.frames(0)[-1]
    assert header.attributes & (fmt.CONTROL | fmt.TRANSACTIONAL) == fmt.CONTROL | fmt.TRANSACTIONAL
    assert (header.producer_id, header.producer_epoch, header.record_count) == (writes.producer_id, 0, 1)
    assert fmt.marker_kind(payload, header.schema_length) == fmt.TXN_ABORT
    # A later committed write after the aborted one is visible, the aborted one still not.
    later = sink.java_task(sink_id, "y", [0])
    assert sink.python_commit(sink_id, 0, [later])
    assert consume_values(sink.path, "t", [0]) == _values("y")
    assert sink.jvm_committed(0)[0] == _values("y")


def test_the_java_driver_ends_a_row_recorded_for_a_frame_that_never_landed(sink):
    """A task attempt whose first frame never landed after it recorded its row (an interrupted
    Spark task): the Java driver's ABORT marker lands at the row's own first offset and ends it,
    as Python's abort does (tests/log/transactions/test_txn_zombies.py)."""
    sink_id = "batch:q9"
    cluster, store = sink.store()
    try:
        writer = SinkTaskWriter(store, sink_id, 0)
        store.add_partition(sink_id, writer.producer_id, "t", 1, 0)  # the log of t-1 is empty: no frame follows
    finally:
        cluster.close()
    sink.java_abort(sink_id, [])
    assert sink.rows("SELECT * FROM open_transaction_partitions") == []
    assert sink.rows("SELECT partition, producer_id, first_offset, last_offset FROM aborted_transactions") == [
        (1, writer.producer_id, 0, 0)]
    assert sink.jvm_committed(1) == ([], 1)


def test_a_java_attempt_aborted_by_python_is_a_zombie(sink):
    sink_id = "stream:q4"
    process = subprocess.Popen(_java_command(TXN_PROBE, "task", sink.path, sink_id, "-", sink.timeout,
                                             sink.encode("z"), "2", "t:0", "hold"),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        [[producer_id, written, records]] = json.loads(process.stdout.readline())
        assert process.stdout.readline().strip() == "ready"
        # The driver aborts the batch (Python), fencing the attempt: its row goes, ABORT is written.
        cluster, store = sink.store()
        try:
            store.abort(sink_id, [TaskWrites(producer_id, tuple(tuple(p) for p in written), records)])
        finally:
            cluster.close()
        process.stdin.write("append\n")
        process.stdin.flush()
        answer = process.stdout.readline()
        assert answer.startswith("FencedError: ") and "zombie" in answer
        process.stdin.write("exit\n")
        process.stdin.flush()
        assert process.wait(JAVA_TIMEOUT_S) == 0, process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
    assert consume_values(sink.path, "t", [0]) == []
    assert sink.rows("SELECT * FROM open_transaction_partitions") == []


def test_a_python_zombie_fenced_by_the_java_driver(sink):
    sink_id = "stream:q5"
    producer = Producer({"cluster": sink.path, "acks": "all", "enable.idempotence": False})
    try:
        writer = SinkTaskWriter(SinkStore(producer.cluster), sink_id)
        producer.bind_sink_transaction(writer)
        producer.produce("t", b"first", partition=0)
        producer.flush()
        sink.java_abort(sink_id, [TaskWrites(writer.producer_id, tuple(sorted(writer.partitions)), 1)])
        producer.produce("t", b"zombie", partition=0)
        with pytest.raises(FencedError):
            producer.flush()
    finally:
        producer.close()
    assert consume_values(sink.path, "t", [0]) == []
    assert sink.jvm_committed(0)[0] == []


def test_a_java_task_and_a_python_producer_append_to_one_partition_at_once(sink):
    sink_id = "stream:q6"
    plain = [f"plain-{i}".encode() for i in range(300)]
    failures: list[BaseException] = []

    def python_producer() -> None:
        try:
            with Producer({"cluster": sink.path, "acks": "all", "linger.ms": 0}) as producer:
                for value in plain:
                    producer.produce("t", value, partition=0)
                    producer.flush()
        except BaseException as err:  # reported by the test's thread below
            failures.append(err)

    thread = threading.Thread(target=python_producer)
    frames = str(sink.frames_dir / "many.frames")
    _java(APPENDER_PROBE, "encode", frames, "60", "2", "m")
    thread.start()
    out = _java(TXN_PROBE, "task", sink.path, sink_id, "-", sink.timeout, frames, "1", "t:0")
    thread.join()
    assert not failures, failures
    [[producer_id, written, records]] = json.loads(out)
    assert records == 120
    assert sink.python_commit(sink_id, 0, [TaskWrites(producer_id, tuple(tuple(p) for p in written), records)])
    got = consume_values(sink.path, "t", [0])
    assert sorted(got) == sorted(plain + [f"m-{i}".encode() for i in range(120)])
    assert [v for v in got if v.startswith(b"m-")] == [f"m-{i}".encode() for i in range(120)]
    assert sorted(sink.jvm_committed(0)[0]) == sorted(got)
    # One DATA entry per Java frame (and the marker), in offset order, none lost between writers.
    entries = sink.txn_entries(0)
    assert [e[0] for e in entries] == [fmt.TXN_DATA] * 60 + [fmt.TXN_COMMIT]
    assert all(e[1] == producer_id for e in entries)


def test_a_sigkilled_java_task_is_left_to_the_expiry(tmp_path):
    path = str(tmp_path / "c")
    sink = _Sink(path, tmp_path, partitions=1, cluster_options={"transaction.max.timeout.ms": 1000})
    process = subprocess.Popen(_java_command(TXN_PROBE, "task", path, "stream:q7", "-", sink.timeout,
                                             sink.encode("k"), "2", "t:0", "hold"),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        [[producer_id, _, _]] = json.loads(process.stdout.readline())
        assert process.stdout.readline().strip() == "ready"
        os.kill(process.pid, signal.SIGKILL)
        process.wait(JAVA_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
    assert consume_values(path, "t", 1) == []
    time.sleep(1.1)  # past the cluster's transaction.max.timeout.ms
    cluster = Cluster.open(path)
    try:
        assert try_expire(TransactionStore.for_cluster(cluster))
    finally:
        cluster.close()
    assert sink.rows("SELECT * FROM open_transaction_partitions") == []
    assert sink.rows("SELECT producer_id FROM aborted_transactions") == [(producer_id,)]
    assert consume_values(path, "t", 1) == []
    values, lso = sink.jvm_committed(0)
    assert values == [] and lso == 31  # the expiry's ABORT marker at 30


_CRASHING_COMMIT = """
import json, sys
from kstream.log.cluster.cluster import Cluster
from kstream.log.transactions.sink import SinkStore, TaskWrites
path, sink_id, batch_id, writes = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
cluster = Cluster.open(path)
SinkStore(cluster).commit(sink_id, batch_id, [TaskWrites(w[0], tuple(tuple(p) for p in w[1]), w[2]) for w in writes])
"""


def test_a_python_driver_killed_after_its_markers_is_rolled_forward_by_the_java_driver(sink):
    sink_id = "stream:q8"
    first = sink.java_task(sink_id, "f", [0, 1])
    env = {**os.environ, "KSTREAM_CRASH_AT": "sink.markers-fsynced",
           "PYTHONPATH": os.pathsep.join([os.path.join(ROOT, "src"), os.environ.get("PYTHONPATH", "")])}
    killed = subprocess.run([sys.executable, "-c", _CRASHING_COMMIT, sink.path, sink_id, "0", _json([first])],
                            env=env, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S, check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    # Decided and its markers fsynced, its rows not ended: still Committing, the partitions held open.
    assert sink.rows("SELECT batch_id, state FROM sink_batches") == [(0, "Committing")]
    assert len(sink.rows("SELECT * FROM open_transaction_partitions")) == 2
    second = sink.java_task(sink_id, "s", [1])
    assert sink.java_commit(sink_id, 1, [second]) == "committed"
    assert sorted(consume_values(sink.path, "t", 2)) == sorted(_values("f") + _values("s"))
    jvm0, jvm1 = sink.jvm_committed(0)[0], sink.jvm_committed(1)[0]
    assert sorted(jvm0 + jvm1) == sorted(_values("f") + _values("s"))
    assert sink.rows("SELECT batch_id, state FROM sink_batches") == [(1, "Committed")]
    assert sink.rows("SELECT * FROM open_transaction_partitions") == []
    assert sink.rows("SELECT * FROM sink_producers") == []

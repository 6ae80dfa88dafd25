"""`kstream backup DEST`: a consistent copy of a live cluster, which is a cluster itself.

The copy is taken while a producer process writes with acks=all, a transaction is open and
a consumer commits; it is then opened as a cluster and checked: every acknowledged record,
offsets contiguous, nothing duplicated, no uncommitted record under read_committed, group
offsets as at the cut and never ahead of the copied data, replicas that verify. A decided
commit whose markers the copy lacks reads as committed there and is rolled forward by the
copy's next writer. The source is never written.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner

from helpers import committed_offsets, consume_values, file_tree, metadata_dump, open_transaction, produce_range
from kstream import Admin, Consumer, NewTopic, Producer, TopicPartition
from kstream.errors import ClusterError
from kstream.groups import ConsumerGroups
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import format as fmt
from kstream.tools.backup import backup_cluster, cluster_backup
from kstream.tools.backup.file_copy import FileCopier
from kstream.tools.cli.main import cli

TESTS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHILD = os.path.join(TESTS, "chaos", "child.py")
PIPELINE = os.path.join(TESTS, "client", "eos_pipeline.py")


def child_env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("KSTREAM_CRASH_AT", None)
    return env


class ProducerProcess:
    """tests/chaos/child.py producing "live-i" with acks=all; ``acked`` grows with every
    delivery report it prints ((value, partition, offset))."""

    def __init__(self, path: str, topic: str, partitions: int, count: int, rate: float):
        self.acked: list[tuple[bytes, int, int]] = []
        self.process = subprocess.Popen(
            [sys.executable, CHILD, "produce", path, topic, str(partitions), "all", "live", str(count), str(rate)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            parts = line.split()
            if len(parts) == 4 and parts[0] == "A":
                self.acked.append((parts[1].encode(), int(parts[2]), int(parts[3])))

    def wait_for(self, count: int, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while len(self.acked) < count:
            assert self.process.poll() is None, self.process.stderr.read()[-2000:]
            assert time.monotonic() < deadline, f"only {len(self.acked)} records acknowledged"
            time.sleep(0.02)

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        self._reader.join(timeout=10)


def read_partition(path: str, topic: str, partition: int, level: str = "read_committed") -> list[tuple[int, bytes]]:
    """(offset, value) of every record a fresh read_committed consumer reads from offset 0."""
    consumer = Consumer({"cluster": path, "isolation.level": level})
    consumer.assign([TopicPartition(topic, partition, 0)])
    found = []
    try:
        while (message := consumer.poll(0.3)) is not None:
            assert message.error() is None, message.error()
            found.append((message.offset(), message.value()))
    finally:
        consumer.close()
    return found


def reported(output: str) -> dict[tuple[str, int], tuple[int, int]]:
    """(topic, partition) -> (HW, log end) from `kstream backup`'s table."""
    rows = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[1].isdigit():
            rows[(parts[0], int(parts[1]))] = (int(parts[2]), int(parts[3]))
    return rows


def test_a_backup_of_a_live_cluster_is_a_cluster_with_every_acknowledged_record(tmp_path):
    source, disk, backup = str(tmp_path / "source"), str(tmp_path / "disk2"), str(tmp_path / "backup")
    with Admin({"cluster": source, "log.dirs": f"logs,{disk}"}) as admin:
        for topic in (NewTopic("live", 2, 2, config={"segment.bytes": "8192"}), NewTopic("txn", 1, 2)):
            admin.create_topics([topic])[topic.topic].result()
    with Producer({"cluster": source, "transactional.id": "done"}) as done:
        done.init_transactions()
        done.begin_transaction()
        for i in range(3):
            done.produce("txn", f"committed-{i}".encode(), partition=0)
        done.commit_transaction()
    holder = open_transaction(source, "holder", "txn", b"uncommitted")
    writer = ProducerProcess(source, "live", 2, 1_000_000, 3000)
    committer = None
    try:
        writer.wait_for(300)
        groups = ConsumerGroups(Cluster.open(source))
        groups.commit("g", {("live", 0): 40, ("live", 1): 25, ("txn", 0): 3})
        groups.close()
        stop = threading.Event()
        committed_live: list[dict] = []

        def commit_as_it_reads() -> None:  # a consumer committing while the backup runs
            consumer = Consumer({"cluster": source, "group.id": "reader", "auto.offset.reset": "earliest",
                                 "enable.auto.commit": False})
            consumer.assign([TopicPartition("live", 0, 0), TopicPartition("live", 1, 0)])
            try:
                while not stop.is_set():
                    if consumer.poll(0.05) is not None:
                        committed_live.append({(t.topic, t.partition): t.offset
                                               for t in consumer.commit(asynchronous=False)})
            finally:
                consumer.close()

        committer = threading.Thread(target=commit_as_it_reads)
        committer.start()
        while not committed_live:
            time.sleep(0.01)
        acked_before = list(writer.acked)
        result = CliRunner().invoke(cli, ["--cluster", source, "backup", backup])
        assert result.exit_code == 0, result.output
        writer.wait_for(len(acked_before) + 200)  # still writing after the backup
    finally:
        writer.stop()
        if committer is not None:
            stop.set()
            committer.join()
        holder.abort_transaction()
        holder.close()

    rows = reported(result.output)
    assert set(rows) == {("live", 0), ("live", 1), ("txn", 0)}, result.output
    for partition in (0, 1):
        records = read_partition(backup, "live", partition)
        offsets = [offset for offset, _ in records]
        assert offsets == list(range(len(records)))  # contiguous from the log start
        values = [value for _, value in records]
        assert len(set(values)) == len(values)  # nothing twice
        acked = [(value, offset) for value, p, offset in acked_before if p == partition]
        assert set(acked) <= set((value, offset) for offset, value in records)  # every acknowledged record
        high_watermark, log_end = rows[("live", partition)]
        assert max(offset for _, offset in acked) < high_watermark <= len(records) <= log_end

    assert [v for _, v in read_partition(backup, "txn", 0)] == [f"committed-{i}".encode() for i in range(3)]
    assert b"uncommitted" in [v for _, v in read_partition(backup, "txn", 0, "read_uncommitted")]

    copied = committed_offsets(backup, "g")
    assert copied == {("live", 0): 40, ("live", 1): 25, ("txn", 0): 3}
    reader = committed_offsets(backup, "reader")
    assert reader and all(reader[("live", p)] <= rows[("live", p)][0] for p in (0, 1))  # never past the copy
    assert any(all(reader.get(k, -1) >= v for k, v in seen.items()) for seen in committed_live)

    check = CliRunner().invoke(cli, ["--cluster", backup, "verify-replicas"])
    assert check.exit_code == 0 and "All in-sync replicas match" in check.output, check.output
    cluster = Cluster.open(backup)
    try:
        assert all(p.startswith(backup + os.sep) for p in cluster.log_dir_paths().values())  # never the source's disks
    finally:
        cluster.close()

    # The open transaction is abortable in the copy: a new instance of its id aborts it.
    with Producer({"cluster": backup, "transactional.id": "holder"}) as again:
        again.init_transactions()
    describe = CliRunner().invoke(cli, ["--cluster", backup, "topics", "describe", "txn"])
    assert "Open transactions" not in describe.output, describe.output
    assert [v for _, v in read_partition(backup, "txn", 0)] == [f"committed-{i}".encode() for i in range(3)]
    # ... and the copy takes writes where its logs end.
    produce_range(backup, "live", 0, 10, prefix="after-", partitions=2)
    for partition in (0, 1):
        offsets = [offset for offset, _ in read_partition(backup, "live", partition)]
        assert offsets == list(range(len(offsets)))


@pytest.fixture
def quiet_source(tmp_path):
    """A cluster on two log dirs (one outside the cluster dir) with records, an open
    transaction and a group's offsets; yields (cluster path, outside log dir)."""
    source, disk = str(tmp_path / "source"), str(tmp_path / "disk2")
    with Admin({"cluster": source, "log.dirs": f"logs,{disk}"}) as admin:
        admin.create_topics([NewTopic("t", 2, 2)])["t"].result()
    produce_range(source, "t", 0, 20, partitions=2)
    groups = ConsumerGroups(Cluster.open(source))
    groups.commit("g", {("t", 0): 4})
    groups.close()
    holder = open_transaction(source, "holder", "t", b"open")
    yield source, disk
    holder.abort_transaction()
    holder.close()


def test_a_backup_writes_nothing_to_the_source(quiet_source, tmp_path):
    source, disk = quiet_source
    before, rows_before = file_tree(source, disk), metadata_dump(source)
    locks_before = sorted(os.listdir(os.path.join(source, fmt.LOCKS_DIR)))
    report = backup_cluster(source, str(tmp_path / "backup"))
    assert file_tree(source, disk) == before
    assert metadata_dump(source) == rows_before
    assert sorted(os.listdir(os.path.join(source, fmt.LOCKS_DIR))) == locks_before
    assert {(p.topic, p.partition): p.high_watermark for p in report.partitions} == {("t", 0): 11, ("t", 1): 10}
    assert consume_values(report.destination, "t", 2) == consume_values(source, "t", 2)


def test_a_backup_of_a_backup_is_the_same_cluster(quiet_source, tmp_path):
    source, _ = quiet_source
    first = backup_cluster(source, str(tmp_path / "first"))
    second = backup_cluster(first.destination, str(tmp_path / "second"))
    assert second.log_dirs == first.log_dirs == ((1, "logs"), (2, "logs-2"))
    assert [(p.topic, p.partition, p.high_watermark) for p in second.partitions] == \
        [(p.topic, p.partition, p.high_watermark) for p in first.partitions]
    for path in (first.destination, second.destination):
        assert consume_values(path, "t", 2, "read_uncommitted") == consume_values(source, "t", 2, "read_uncommitted")
        assert committed_offsets(path, "g") == {("t", 0): 4}


def test_log_dirs_without_replicas_are_in_the_backup_and_stay_online(tmp_path):
    source = str(tmp_path / "source")
    with Admin({"cluster": source, "log.dirs": f"a,b,{tmp_path / 'disk3'}"}) as admin:
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result()  # on one log dir of three
    produce_range(source, "t", 0, 3)
    report = backup_cluster(source, str(tmp_path / "backup"))
    assert report.log_dirs == ((1, "a"), (2, "b"), (3, "logs-3"))
    copy = Cluster.open(report.destination)
    try:
        assert [online for _, _, online in copy.metadata.log_dirs()] == [True, True, True]
    finally:
        copy.close()


def test_a_destination_that_is_not_empty_is_refused(quiet_source, tmp_path):
    source, _ = quiet_source
    destination = tmp_path / "taken"
    destination.mkdir()
    (destination / "notes.txt").write_text("mine")
    result = CliRunner().invoke(cli, ["--cluster", source, "backup", str(destination)])
    assert result.exit_code != 0
    assert "exists and is not empty" in result.output
    assert os.listdir(destination) == ["notes.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert CliRunner().invoke(cli, ["--cluster", source, "backup", str(empty)]).exit_code == 0


def test_a_destination_inside_the_cluster_is_refused(quiet_source):
    source, disk = quiet_source
    for inside in (os.path.join(source, "backup"), os.path.join(disk, "backup")):
        result = CliRunner().invoke(cli, ["--cluster", source, "backup", inside])
        assert result.exit_code != 0 and "overlaps" in result.output
        assert not os.path.exists(inside)


def test_a_missing_source_is_an_error_and_creates_nothing(tmp_path):
    missing, destination = tmp_path / "typo", tmp_path / "backup"
    result = subprocess.run([sys.executable, "-c", "from kstream.tools.cli.main import main; main()", "--cluster",
                             str(missing), "backup", str(destination)],
                            capture_output=True, text=True, env=child_env(), timeout=120)
    assert result.returncode == 1
    assert "no kstream cluster at" in result.stderr and "partial" not in result.stderr
    assert not missing.exists() and not destination.exists()


def test_a_topic_deleted_or_created_during_the_backup_is_copied_as_at_the_cut(tmp_path, monkeypatch):
    source = str(tmp_path / "source")
    with Admin({"cluster": source}) as admin:
        for name in ("kept", "gone"):
            admin.create_topics([NewTopic(name, 1, 1)])[name].result()
    produce_range(source, "kept", 0, 5)
    produce_range(source, "gone", 0, 5)
    bulk = cluster_backup._Backup._copy_replicas
    calls = []

    def copy_then_change(self, replicas):  # between the bulk pass and the cut
        missing = bulk(self, replicas)
        if not calls:
            with Admin({"cluster": source}) as admin:
                admin.delete_topics(["gone"])["gone"].result()
                admin.create_topics([NewTopic("new", 1, 1)])["new"].result()
            produce_range(source, "new", 0, 3)
        calls.append(1)
        return missing

    monkeypatch.setattr(cluster_backup._Backup, "_copy_replicas", copy_then_change)
    report = backup_cluster(source, str(tmp_path / "backup"))
    assert report.topics == ["kept", "new"]
    assert sorted(os.listdir(os.path.join(report.destination, "logs"))) == sorted([fmt.LOG_DIR_META, "kept-0", "new-0"])
    assert consume_values(report.destination, "new", 1) == [b"v0", b"v1", b"v2"]
    assert consume_values(report.destination, "kept", 1) == [f"v{i}".encode() for i in range(5)]


def test_a_topic_being_deleted_at_the_cut_is_deleted_in_the_copy(tmp_path, monkeypatch):
    source = str(tmp_path / "source")
    with Admin({"cluster": source}) as admin:
        for name in ("kept", "gone"):
            admin.create_topics([NewTopic(name, 2, 1)])[name].result()
    produce_range(source, "kept", 0, 5)
    produce_range(source, "gone", 0, 5)
    cluster = Cluster.open(source)
    try:  # a deletion stopped after it fenced the partitions and moved their dirs away
        monkeypatch.setattr(cluster.metadata, "delete_topic", lambda name: None)
        monkeypatch.setattr(cluster_backup.shutil, "rmtree", lambda *a, **k: None)
        cluster.delete_topic("gone")
    finally:
        cluster.close()
    monkeypatch.undo()
    report = backup_cluster(source, str(tmp_path / "backup"))
    assert report.dropped_topics == ("gone",) and report.topics == ["kept"]
    copy = Cluster.open(report.destination)
    try:
        assert copy.list_topics() == ["kept"]
    finally:
        copy.close()
    assert sorted(os.listdir(os.path.join(report.destination, "logs"))) == sorted([fmt.LOG_DIR_META, "kept-0",
                                                                                   "kept-1"])


def test_a_torn_tail_copied_from_a_writer_mid_append_is_cut_by_the_copys_first_writer(tmp_path):
    source = str(tmp_path / "source")
    with Admin({"cluster": source}) as admin:
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result()
    produce_range(source, "t", 0, 5)
    segment = os.path.join(source, "logs", "t-0", fmt.segment_file_name(0))
    with open(segment, "rb") as whole:
        head = whole.read(40)
    with open(segment, "ab") as torn:  # a writer killed (or still writing) mid-frame
        torn.write(head)
    report = backup_cluster(source, str(tmp_path / "backup"))
    assert [(p.high_watermark, p.log_end_offset) for p in report.partitions] == [(5, 5)]
    copied = os.path.join(report.destination, "logs", "t-0", fmt.segment_file_name(0))
    assert os.path.getsize(copied) == os.path.getsize(segment)  # the torn bytes came along
    assert consume_values(report.destination, "t", 1) == [f"v{i}".encode() for i in range(5)]
    produce_range(report.destination, "t", 5, 3)
    assert read_partition(report.destination, "t", 0) == [(i, f"v{i}".encode()) for i in range(8)]


def test_a_decided_commit_without_its_markers_reads_committed_in_the_copy_and_rolls_forward(tmp_path):
    """A pipeline killed after its commit decision, before any marker: the copy holds the
    decision (metadata) and the data frames (written before it), not the markers."""
    source = str(tmp_path / "source")
    with Admin({"cluster": source}) as admin:
        for topic in ("in", "out"):
            admin.create_topics([NewTopic(topic, 1)])[topic].result()
    produce_range(source, "in", 0, 25)
    env = {**child_env(), "KSTREAM_CRASH_AT": "txn.prepared:2"}
    killed = subprocess.run([sys.executable, PIPELINE, source, "g", "etl", "10"], env=env, capture_output=True,
                            timeout=120)
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    backup = backup_cluster(source, str(tmp_path / "backup")).destination

    expected = [f"out-v{i}".encode() for i in range(25)]
    assert consume_values(backup, "out", 1) == expected[:20]  # the decision is in the copy
    assert committed_offsets(backup, "g") == {("in", 0): 20}  # with its offsets
    rerun = subprocess.run([sys.executable, PIPELINE, backup, "g", "etl", "10"], env=child_env(),
                           capture_output=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr.decode()[-2000:]
    assert int(rerun.stdout) == 5
    assert consume_values(backup, "out", 1) == expected  # each input's output exactly once
    assert committed_offsets(backup, "g") == {("in", 0): 25}


def test_the_file_copier_copies_only_what_an_append_only_file_gained(tmp_path):
    source, copy = tmp_path / "a.log", str(tmp_path / "copy.log")
    source.write_bytes(b"x" * 100)
    copier = FileCopier()
    assert copier.copy(str(source), copy, append_only=True) == 100
    with open(source, "ab") as grown:
        grown.write(b"y" * 50)
    assert copier.copy(str(source), copy, append_only=True) == 150
    assert copier.bytes_copied == 150 and open(copy, "rb").read() == source.read_bytes()
    replaced = tmp_path / "b.log"
    replaced.write_bytes(b"z" * 30)
    os.replace(replaced, source)  # a torn tail cut: a new file renamed over the old one
    assert copier.copy(str(source), copy, append_only=True) == 30
    assert open(copy, "rb").read() == b"z" * 30
    os.remove(source)
    assert copier.copy(str(source), copy, append_only=True) is None
    assert not os.path.exists(copy)


def test_a_backup_that_cannot_take_the_metadata_lock_says_so_and_leaves_no_cluster(quiet_source, tmp_path):
    source, _ = quiet_source
    holder = sqlite3.connect(os.path.join(source, fmt.METADATA_DB), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # a writer in the middle of a long metadata transaction
    destination = str(tmp_path / "backup")
    try:
        with pytest.raises(ClusterError, match="could not take the write lock") as raised:
            backup_cluster(source, destination, lock_wait_ms=100)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert "holds a partial copy" in "".join(getattr(raised.value, "__notes__", []))
    with pytest.raises(ClusterError, match="is not a kstream cluster"):
        Cluster.open(destination)


def test_the_offsets_table_is_copied_with_its_checkpoint_and_history(tmp_path):
    source = str(tmp_path / "source")
    with Admin({"cluster": source}) as admin:
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result()
    produce_range(source, "t", 0, 200)
    groups = ConsumerGroups(Cluster.open(source))
    for offset in range(1, 106):  # past delta.checkpointInterval (100): a checkpoint and _last_checkpoint
        groups.commit("g", {("t", 0): offset})
    groups.close()
    report = backup_cluster(source, str(tmp_path / "backup"))
    log_dir = os.path.join(report.destination, "__consumer_offsets", "_delta_log")
    assert "_last_checkpoint" in os.listdir(log_dir)
    assert any(name.endswith(".checkpoint.parquet") for name in os.listdir(log_dir))
    assert committed_offsets(report.destination, "g") == {("t", 0): 105}
    copy = ConsumerGroups(Cluster.open(report.destination))
    try:
        assert copy.table.read("g", version=50)[("t", 0)].offset == 50  # history reads as in the source
    finally:
        copy.close()

"""A log dir lost whole (quietly or under load), replaced and refilled; a full disk on RF=1."""

from __future__ import annotations

import os
import shutil
import threading
import time

import pyarrow as pa
import pytest
from click.testing import CliRunner
from replication_helpers import consume_all, make_topic

from helpers import encoded
from kstream import Admin, Consumer, KStreamError, NotEnoughReplicasError, Producer, TopicPartition
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.metadata import Metadata
from kstream.log.storage import faults
from kstream.log.storage import format as fmt
from kstream.tools.cli.main import cli

PARTITIONS = 3
RECORDS = 1000


def run(path, *args):
    return CliRunner().invoke(cli, ["--cluster", path, *args], catch_exceptions=False)


def produce_acked(path, count, prefix, partitions=range(PARTITIONS), per_batch=10):
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        for p in partitions:
            for start in range(0, count, per_batch):
                values = [f"{prefix}-{p}-{i}".encode() for i in range(start, min(count, start + per_batch))]
                producer.produce_batch("t", pa.table({"value": values}), partition=p)


def high_watermarks(path, partitions=PARTITIONS):
    with Admin({"cluster": path}) as admin:
        marks = {}
        for p in range(partitions):
            handle = admin.cluster.partition("t", p)
            marks[p] = handle.high_watermark()
            handle.close()
        return marks


def placements(path):
    with Admin({"cluster": path}) as admin:
        return admin.cluster.topic("t").partitions


def expected(prefix, p, count=RECORDS):
    return [f"{prefix}-{p}-{i}".encode() for i in range(count)]


def poll_values(consumer, count, timeout=30):
    values = []
    deadline = time.monotonic() + timeout
    while len(values) < count and time.monotonic() < deadline:
        message = consumer.poll(0.1)
        if message is not None:
            assert message.error() is None, message.error()
            values.append(message.value())
    return values


def test_quiet_loss_of_a_whole_log_dir_loses_nothing_acknowledged(replicated):
    path, log_dirs = replicated
    info = make_topic(path, partitions=PARTITIONS, config={"segment.bytes": "4096"})
    assert {p.leader for p in info.partitions} == set(log_dirs)  # a leader on every log dir
    produce_acked(path, RECORDS, "a")
    # A consumer reading the leader of partition 0 (several segments) when the disk dies.
    lost = info.partitions[0].leader
    early = Consumer({"cluster": path, "max.partition.fetch.bytes": 1})
    early.assign([TopicPartition("t", 0, 0)])
    assert poll_values(early, 1) == [b"a-0-0"]

    shutil.rmtree(log_dirs[lost])  # the disk dies while nobody writes

    # The reader finds the leader's dir gone: the log dir goes offline, it follows the new leader.
    assert poll_values(early, RECORDS - 1) == expected("a", 0)[1:]
    assert high_watermarks(path) == {p: RECORDS for p in range(PARTITIONS)}
    for p in range(PARTITIONS):
        assert consume_all(path, partition=p) == expected("a", p)
    after = placements(path)
    assert all(lost not in p.isr and p.leader != lost and len(p.isr) == 2 for p in after)
    assert not os.path.exists(log_dirs[lost])  # nothing re-created it

    produce_acked(path, 1, "b")  # acks=all with min ISR 2: on both survivors
    with Admin({"cluster": path}) as admin:
        assert admin.verify_replicas() == []
    assert high_watermarks(path) == {p: RECORDS + 1 for p in range(PARTITIONS)}
    for p in range(PARTITIONS):
        assert consume_all(path, partition=p) == [*expected("a", p), f"b-{p}-0".encode()]
    assert poll_values(early, 1) == [b"b-0-0"]
    early.close()

    # The disk is replaced by an empty one, brought back by the operator, and refilled.
    not_mounted = CliRunner().invoke(cli, ["--cluster", path, "log-dirs", "online", str(lost)])
    assert not_mounted.exit_code != 0 and "does not exist" in str(not_mounted.exception)
    assert not os.path.exists(log_dirs[lost])
    os.makedirs(log_dirs[lost])
    result = run(path, "log-dirs", "online", str(lost))
    assert result.exit_code == 0, result.output
    assert "replica(s) back in the ISR" in run(path, "replicator", "--once").output
    assert all(len(p.isr) == 3 for p in placements(path))
    assert "All in-sync replicas match" in run(path, "verify-replicas").output
    with Admin({"cluster": path}) as admin:
        assert admin.elect_preferred_leaders() >= 1
    for p in range(PARTITIONS):
        assert consume_all(path, partition=p) == [*expected("a", p), f"b-{p}-0".encode()]


def test_emptied_log_dir_is_a_failed_disk_not_a_new_one(replicated):
    path, log_dirs = replicated
    info = make_topic(path, partitions=PARTITIONS)
    produce_acked(path, RECORDS, "a")
    lost = info.partitions[1].leader
    shutil.rmtree(log_dirs[lost])
    os.makedirs(log_dirs[lost])  # an empty disk mounted in its place, not yet brought online
    for p in range(PARTITIONS):
        assert consume_all(path, partition=p) == expected("a", p)
    assert os.listdir(log_dirs[lost]) == []
    with Admin({"cluster": path}) as admin:
        assert dict((i, up) for i, _, up in admin.cluster.metadata.log_dirs())[lost] is False


@pytest.mark.parametrize("acks", ["1", "all"])
def test_replica_dir_lost_under_a_long_lived_writer(replicated, acks):
    """The writer has the leader's files open when they are deleted: it must not go on
    writing (and acknowledging) into deleted files."""
    path, log_dirs = replicated
    info = make_topic(path, partitions=1)
    lost = info.partitions[0].leader
    with Producer({"cluster": path, "acks": acks, "linger.ms": 0}) as producer:
        for i in range(10):
            producer.produce_batch("t", pa.table({"value": [f"a-0-{i}".encode()]}), partition=0)
        shutil.rmtree(log_dirs[lost])
        producer.produce_batch("t", pa.table({"value": [b"a-0-10"]}), partition=0)
        metadata = Metadata(os.path.join(path, fmt.METADATA_DB))  # not Cluster.open: it checks dirs
        assert dict((i, up) for i, _, up in metadata.log_dirs())[lost] is False  # the writer noticed
        metadata.close()
        assert consume_all(path) == expected("a", 0, 11)  # nothing went to the deleted files
        for i in range(11, 20):
            producer.produce_batch("t", pa.table({"value": [f"a-0-{i}".encode()]}), partition=0)
    assert consume_all(path) == expected("a", 0, 20)
    placement = placements(path)[0]
    assert placement.leader != lost and len(placement.isr) == 2
    with Admin({"cluster": path}) as admin:
        assert admin.verify_replicas() == []


def test_log_dir_lost_under_load_loses_nothing_acknowledged(replicated):
    path, log_dirs = replicated
    info = make_topic(path, partitions=PARTITIONS)
    lost = info.partitions[0].leader
    acknowledged = {p: [] for p in range(PARTITIONS)}
    started = threading.Event()
    stop = threading.Event()
    errors = []

    def write():
        with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
            i = 0
            while not stop.is_set() and i < 5000:
                p = i % PARTITIONS
                value = f"w-{i}".encode()
                try:
                    producer.produce_batch("t", pa.table({"value": [value]}), partition=p)
                    acknowledged[p].append(value)
                except KStreamError as err:  # not acknowledged: allowed, but recorded
                    errors.append(err)
                i += 1
                if i == 50:
                    started.set()

    writer = threading.Thread(target=write)
    writer.start()
    assert started.wait(60)
    _vanish(log_dirs[lost])  # under load: a plain rmtree would race the writer's new files
    count = sum(map(len, acknowledged.values()))
    while sum(map(len, acknowledged.values())) < count + 100 and writer.is_alive():
        writer.join(0.01)
    stop.set()
    writer.join(60)
    assert not writer.is_alive()
    marks = high_watermarks(path)
    for p in range(PARTITIONS):
        values = consume_all(path, partition=p)
        assert [v for v in values if v in set(acknowledged[p])] == acknowledged[p]
        assert marks[p] >= len(acknowledged[p])
    assert all(lost not in p.isr and len(p.isr) == 2 for p in placements(path))
    with Admin({"cluster": path}) as admin:
        assert admin.verify_replicas() == []


def _vanish(log_dir: str) -> None:
    """The disk is gone at once: renamed away, then removed (a writer may still hold files)."""
    os.rename(log_dir, log_dir + ".lost")
    shutil.rmtree(log_dir + ".lost")


def _new_cluster(path: str, disk: str) -> int:
    """A new cluster with one log dir; returns that log dir's id."""
    cluster = Cluster.open(path, {"log.dirs": disk}, create=True)
    try:
        return next(iter(cluster.log_dir_paths()))
    finally:
        cluster.close()


def test_full_disk_on_the_only_replica_recovers_without_unclean_election(tmp_path, monkeypatch):
    monkeypatch.setattr(faults, "ENABLED", True)
    path = str(tmp_path / "cluster")
    disk = str(tmp_path / "disk0")
    log_dir = _new_cluster(path, disk)
    make_topic(path, replication_factor=1)
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        for i in range(5):
            producer.produce_batch("t", pa.table({"value": [f"ok-{i}".encode()]}), partition=0)
        faults.inject(disk, "ENOSPC")
        with pytest.raises(KStreamError, match="(?i)no space left") as refused:
            producer.produce_batch("t", pa.table({"value": [b"refused"]}), partition=0)
        assert f"log-dirs online {log_dir}" in str(refused.value)
    faults.clear(disk)
    placement = placements(path)[0]
    assert placement.isr == (log_dir,)  # the last in-sync replica never leaves the ISR
    result = run(path, "log-dirs", "online", str(log_dir))
    assert result.exit_code == 0, result.output
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        producer.produce_batch("t", pa.table({"value": [b"after"]}), partition=0)
    assert consume_all(path) == [f"ok-{i}".encode() for i in range(5)] + [b"after"]
    placement = placements(path)[0]
    assert placement.leader == log_dir and placement.isr == (log_dir,) and placement.leader_epoch == 0


def test_short_write_is_reported_as_a_full_disk_and_recovers(tmp_path, monkeypatch):
    path = str(tmp_path / "cluster")
    log_dir = _new_cluster(path, str(tmp_path / "disk0"))
    make_topic(path, replication_factor=1)
    real_pwritev = os.pwritev

    def half_written(fd, buffers, position):  # what a filling disk does before ENOSPC
        data = b"".join(bytes(b) for b in buffers)
        return os.pwrite(fd, data[:len(data) // 2], position)

    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        for i in range(3):
            producer.produce_batch("t", pa.table({"value": [f"ok-{i}".encode()]}), partition=0)
        monkeypatch.setattr(os, "pwritev", half_written)
        with pytest.raises(KStreamError, match="no space left on device") as refused:
            producer.produce_batch("t", pa.table({"value": [b"torn"]}), partition=0)
        monkeypatch.setattr(os, "pwritev", real_pwritev)
        assert "short write" not in str(refused.value)
        assert f"log-dirs online {log_dir}" in str(refused.value)
        assert run(path, "log-dirs", "online", str(log_dir)).exit_code == 0
        producer.produce_batch("t", pa.table({"value": [b"after"]}), partition=0)
    assert consume_all(path) == [b"ok-0", b"ok-1", b"ok-2", b"after"]


def test_leader_whose_replica_was_emptied_is_not_trusted(replicated):
    """The leader's segment files are gone (its dir kept): it ends below the HW, so the
    next write moves leadership to a follower that has the data; the HW never goes back."""
    path, _log_dirs = replicated
    info = make_topic(path, partitions=1)
    produce_acked(path, 100, "a", partitions=[0])
    leader = info.partitions[0].leader
    with Admin({"cluster": path}) as admin:
        replica_dir = admin.cluster.partition("t", 0).replica_dirs[leader]
    for name in os.listdir(replica_dir):
        os.unlink(os.path.join(replica_dir, name))
    produce_acked(path, 1, "b", partitions=[0])
    placement = placements(path)[0]
    assert placement.leader != leader and placement.leader_epoch == 1
    assert high_watermarks(path, 1) == {0: 101}
    assert consume_all(path) == [*expected("a", 0, 100), b"b-0-0"]
    with Admin({"cluster": path}) as admin:
        admin.sync_replicas()  # the emptied replica is refilled from the new leader (if the writer did not)
        assert admin.verify_replicas() == []
    assert len(placements(path)[0].isr) == 3


def test_min_insync_replicas_is_checked_again_after_reconcile(replicated, monkeypatch):
    """Reconcile drops followers it cannot fix (here: their disks fail when it reads them);
    an acks=all write then fails before anything is written instead of landing on the
    leader alone."""
    monkeypatch.setattr(faults, "ENABLED", True)
    path, log_dirs = replicated
    info = make_topic(path, partitions=1)
    produce_acked(path, 5, "a", partitions=[0])
    leader, *followers = info.partitions[0].replicas
    with Admin({"cluster": path}) as admin:
        handle = admin.cluster.partition("t", 0)
        for follower in followers:  # followers that differ from the leader: reconcile must look at them
            handle.logs[follower].append(encoded([b"stray"]), leader_epoch=0)
        handle.close()
    for follower in followers:
        faults.inject(log_dirs[follower], "EIO")
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        with pytest.raises(NotEnoughReplicasError, match="nothing was written"):
            producer.produce_batch("t", pa.table({"value": [b"refused"]}), partition=0)
    with Admin({"cluster": path}) as admin:
        handle = admin.cluster.partition("t", 0)
        assert handle.logs[leader].log_end_offset() == 5
        assert handle.high_watermark() == 5
        handle.close()
    assert placements(path)[0].isr == (leader,)


def test_followers_that_kept_an_unsynced_tail_are_cut_back_and_stay_in_sync(replicated):
    """After a power loss each replica keeps its own prefix of the unsynced tail, at the same
    leader epoch: a follower may end past the leader, or at the leader's end with other
    frames. Reconcile cuts it back to where its frames are the leader's (by content: epochs
    cannot tell), keeps it in the ISR, and the next acks=all write succeeds on every replica."""
    path, _ = replicated
    info = make_topic(path, partitions=1)
    produce_acked(path, 5, "a", partitions=[0])
    leader, ahead, same_end = info.partitions[0].replicas
    with Admin({"cluster": path}) as admin:
        handle = admin.cluster.partition("t", 0)
        handle.logs[ahead].append(encoded([b"kept-1", b"kept-2"]), leader_epoch=0)
        handle.logs[same_end].append(encoded([b"other"]), leader_epoch=0)
        handle.logs[leader].append(encoded([b"lead"]), leader_epoch=0)  # 6: the leader's own tail
        handle.close()
    produce_acked(path, 1, "b", partitions=[0])
    assert placements(path)[0].isr == info.partitions[0].replicas
    with Admin({"cluster": path}) as admin:
        assert admin.verify_replicas() == []
    assert consume_all(path) == [*expected("a", 0, 5), b"lead", b"b-0-0"]


def test_only_replica_that_lost_fsynced_frames_is_not_trusted(tmp_path):
    """RF=1: the segment files vanish but the recovery point (durable, covering every
    acknowledged frame) stays: the log ends below what was fsynced, so acknowledged records
    are gone. The next write refuses to go on from the shorter log (no silent restart at 0);
    a power loss, which drops only unfsynced frames, is told apart by that recovery point."""
    path = str(tmp_path / "cluster")
    _new_cluster(path, str(tmp_path / "disk0"))
    info = make_topic(path, partitions=1, replication_factor=1)
    produce_acked(path, 10, "a", partitions=[0])
    with Admin({"cluster": path}) as admin:
        replica_dir = admin.cluster.partition("t", 0).replica_dirs[info.partitions[0].leader]
    for name in os.listdir(replica_dir):
        if name.endswith((fmt.LOG_SUFFIX, fmt.OFFSET_INDEX_SUFFIX, fmt.TIME_INDEX_SUFFIX)):
            os.unlink(os.path.join(replica_dir, name))
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer, \
            pytest.raises(KStreamError, match="acknowledged records were lost"):
        producer.produce_batch("t", pa.table({"value": [b"b"]}), partition=0)


def test_rejoining_follower_with_a_stale_frame_at_the_same_epoch_is_cut_back(replicated):
    """An out-of-sync follower kept a frame the leader lost in a power loss; the leader then
    wrote other frames at those offsets in the same epoch. Catch-up must cut the follower by
    content (leader epochs agree), not append after the stale frame."""
    path, _ = replicated
    info = make_topic(path, partitions=1)
    produce_acked(path, 5, "a", partitions=[0])
    _leader, stale, _other = info.partitions[0].replicas
    with Admin({"cluster": path}) as admin:
        admin.cluster.metadata.remove_from_isr("t", 0, {stale})
        handle = admin.cluster.partition("t", 0)
        handle.logs[stale].append(encoded([b"stale"]), leader_epoch=0)
        handle.close()
    produce_acked(path, 3, "b", partitions=[0])
    with Admin({"cluster": path}) as admin:
        admin.sync_replicas()
        assert admin.verify_replicas() == []
    assert placements(path)[0].isr == info.partitions[0].replicas
    assert consume_all(path) == [*expected("a", 0, 5), *expected("b", 0, 3)]

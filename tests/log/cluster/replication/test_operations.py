"""Operations: controlled shutdown, replicator, preferred leaders, reassignment, verify, CLI."""

from __future__ import annotations

import os

from click.testing import CliRunner
from replication_helpers import make_topic, replica_frames

from kstream import Admin, NewTopic, Producer
from kstream.log.storage import format as fmt
from kstream.tools.cli.main import cli


def run(path, *args):
    return CliRunner().invoke(cli, ["--cluster", path, *args], catch_exceptions=False)


def produce(path, n, topic="t", partitions=(0,)):
    """One frame per record (flushed one by one: acks=all batches records while fsyncs run)."""
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        for i in range(n):
            for p in partitions:
                producer.produce(topic, f"{i}".encode() * 30, partition=p)
            producer.flush()


def test_controlled_shutdown_replicator_and_preferred_election(replicated):
    path, _ = replicated
    info = make_topic(path, partitions=6)
    produce(path, 10, partitions=range(6))
    with Admin({"cluster": path}) as admin:
        led_by_1 = sum(1 for p in info.partitions if p.leader == 1)
        assert led_by_1 == 2
        assert admin.take_log_dir_offline(1) == 6  # every partition has a replica there
        placements = admin.cluster.topic("t").partitions
        assert all(p.leader != 1 and 1 not in p.isr for p in placements)
        assert sum(p.leader_epoch for p in placements) == led_by_1  # only moved leaders bumped
    produce(path, 5, partitions=range(6))  # writes continue on 2 of 3 replicas
    with Admin({"cluster": path}) as admin:
        admin.set_log_dir_online(1)
    assert "replica(s) back in the ISR" in run(path, "replicator", "--once").output
    with Admin({"cluster": path}) as admin:
        assert all(len(p.isr) == 3 for p in admin.cluster.topic("t").partitions)
        assert admin.elect_preferred_leaders() == led_by_1
        assert all(p.leader == p.replicas[0] for p in admin.cluster.topic("t").partitions)
        assert admin.verify_replicas() == []
    assert "All in-sync replicas match" in run(path, "verify-replicas").output
    described = run(path, "log-dirs", "describe").output
    assert "yes" in described and "NO" not in described


def test_reassignment_moves_a_partition_between_log_dirs(tmp_path):
    path = str(tmp_path / "c")
    dirs = ",".join(str(tmp_path / f"d{i}") for i in range(4))
    with Admin({"cluster": path, "log.dirs": dirs}) as admin:
        admin.create_topics([NewTopic("t", 1, 2)])["t"].result()
        before = admin.cluster.topic("t").partitions[0].replicas
    produce(path, 50)
    target = [d for d in (1, 2, 3, 4) if d not in before][:2]
    result = run(path, "reassign", "--topic", "t", "--partition", "0", "--replicas", ",".join(map(str, target)))
    assert result.exit_code == 0, result.output
    with Admin({"cluster": path}) as admin:
        placement = admin.cluster.topic("t").partitions[0]
        assert list(placement.replicas) == target and sorted(placement.isr) == sorted(target)
        handle = admin.cluster.partition("t", 0)
        frames = [replica_frames(handle.replica_dirs[r]) for r in target]
        assert frames[0] == frames[1] and len(frames[0]) == 50
        handle.close()
    produce(path, 1)
    assert "All in-sync replicas match" in run(path, "verify-replicas").output


def test_verify_replicas_reports_a_difference(replicated):
    path, _ = replicated
    make_topic(path)
    produce(path, 5)
    with Admin({"cluster": path}) as admin:
        handle = admin.cluster.partition("t", 0)
        follower = handle.info.replicas[1]
        segment = os.path.join(handle.replica_dirs[follower], fmt.segment_file_name(0))
        data = bytearray(open(segment, "rb").read())
        data[-5] ^= 0xFF
        open(segment, "wb").write(bytes(data))
        handle.close()
        mismatches = admin.verify_replicas()
    assert len(mismatches) == 1 and mismatches[0].replica == follower and mismatches[0].offset == 4
    assert run(path, "verify-replicas").exit_code != 0

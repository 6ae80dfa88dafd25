"""Replication across log dirs: identical replicas, HW, acks, min.insync.replicas, failover."""

from __future__ import annotations

import pyarrow as pa
import pytest
from replication_helpers import consume_all, make_topic, replica_frames

from kstream import Admin, Consumer, LogDirOfflineError, NotEnoughReplicasError, Producer, TopicPartition
from kstream.log.storage import faults


def test_replicas_are_identical_frame_by_frame(replicated):
    path, _log_dirs = replicated
    info = make_topic(path, config={"segment.bytes": "4096"})
    assert len(set(info.partitions[0].replicas)) == 3
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        for i in range(50):
            producer.produce("t", f"v{i}".encode() * 20, partition=0)
        producer.produce_batch("t", pa.table({"value": [b"x" * 100] * 300}), partition=0)
    with Admin({"cluster": path}) as admin:
        handle = admin.cluster.partition("t", 0)
        frames = [replica_frames(d) for d in handle.replica_dirs.values()]
        assert frames[0] == frames[1] == frames[2]
        assert handle.high_watermark() == 350
        description = admin.describe_topic("t").partitions[0]
        assert (description.log_end_offset, description.high_watermark) == (350, 350)
        handle.close()
    assert len(consume_all(path)) == 350


def test_acks_all_needs_min_insync_replicas(replicated):
    path, _log_dirs = replicated
    info = make_topic(path)
    replicas = info.partitions[0].replicas
    with Admin({"cluster": path}) as admin:
        admin.cluster.metadata.remove_from_isr("t", 0, {replicas[1], replicas[2]})
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        with pytest.raises(NotEnoughReplicasError, match="min.insync.replicas=2; nothing was written"):
            producer.produce("t", b"refused", partition=0)
        with pytest.raises(NotEnoughReplicasError, match="nothing was written"):  # the batch path too
            producer.produce_batch("t", pa.table({"value": [b"refused too"]}), partition=0)
    with Producer({"cluster": path, "acks": "1", "linger.ms": 0}) as producer:
        producer.produce("t", b"accepted", partition=0)
    assert consume_all(path) == [b"accepted"]


def test_follower_failure_shrinks_isr_and_writes_continue(replicated):
    path, log_dirs = replicated
    info = make_topic(path)
    leader, follower, other = info.partitions[0].replicas
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        producer.produce("t", b"before", partition=0)
        faults.inject(log_dirs[follower], "EIO")
        producer.produce("t", b"after", partition=0)
    with Admin({"cluster": path}) as admin:
        placement = admin.cluster.topic("t").partitions[0]
        assert placement.isr == (leader, other) and placement.leader == leader
        assert dict((i, online) for i, _, online in admin.cluster.metadata.log_dirs())[follower] is False
    assert consume_all(path) == [b"before", b"after"]


def test_leader_failure_fails_over_with_a_bumped_epoch(replicated):
    path, log_dirs = replicated
    info = make_topic(path)
    leader, second, third = info.partitions[0].replicas
    consumer = Consumer({"cluster": path})
    consumer.assign([TopicPartition("t", 0, 0)])
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        producer.produce("t", b"one", partition=0)
        assert consumer.poll(1).value() == b"one"
        faults.inject(log_dirs[leader], "ENOSPC")
        producer.produce("t", b"two", partition=0)  # lands on the new leader
    with Admin({"cluster": path}) as admin:
        placement = admin.cluster.topic("t").partitions[0]
        assert placement.leader == second and placement.leader_epoch == 1
        assert placement.isr == (second, third)
        handle = admin.cluster.partition("t", 0)
        epochs = [frame[1][24:28] for frame in replica_frames(handle.replica_dirs[second])]
        assert [int.from_bytes(e, "little") for e in epochs] == [0, 1]
        handle.close()
    assert consumer.poll(2).value() == b"two"  # the consumer follows the new leader
    consumer.close()


def test_two_failed_dirs_refuse_acks_all(replicated):
    path, log_dirs = replicated
    info = make_topic(path)
    _leader, second, third = info.partitions[0].replicas
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        producer.produce("t", b"ok", partition=0)
        producer.flush()  # acknowledged before the dirs fail
        faults.inject(log_dirs[second])
        faults.inject(log_dirs[third])
        with pytest.raises(NotEnoughReplicasError):  # written, then too few fsyncs: from flush()
            producer.produce("t", b"not acknowledged", partition=0)
            producer.flush()
        with pytest.raises(NotEnoughReplicasError, match="nothing was written"):
            producer.produce("t", b"refused", partition=0)
    assert consume_all(path)[0] == b"ok"


def test_unclean_leader_election_only_when_enabled(replicated):
    path, log_dirs = replicated
    for name, unclean in (("safe", "false"), ("unsafe", "true")):
        info = make_topic(path, name, replication_factor=2,
                          config={"min.insync.replicas": "1", "unclean.leader.election.enable": unclean})
        leader, other = info.partitions[0].replicas
        with Admin({"cluster": path}) as admin:
            admin.cluster.metadata.remove_from_isr(name, 0, {other})  # the follower fell out of sync
        faults.inject(log_dirs[leader])
        with Producer({"cluster": path, "acks": "1", "linger.ms": 0}) as producer:
            if unclean == "false":
                with pytest.raises(LogDirOfflineError):
                    producer.produce(name, b"x", partition=0)
            else:
                producer.produce(name, b"x", partition=0)
        with Admin({"cluster": path}) as admin:
            placement = admin.cluster.topic(name).partitions[0]
            assert (placement.leader == other) == (unclean == "true")
        faults.clear(log_dirs[leader])
        with Admin({"cluster": path}) as admin:
            admin.set_log_dir_online(leader)

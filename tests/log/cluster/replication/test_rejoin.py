"""Followers that left the ISR: divergent tails cut by leader epoch, empty disks re-filled."""

from __future__ import annotations

import os
import shutil

from replication_helpers import consume_all, make_topic, replica_frames

from helpers import encoded
from kstream import Admin, Producer
from kstream.log.storage import faults


def test_divergent_old_leader_tail_is_truncated_when_it_rejoins(replicated):
    path, _ = replicated
    info = make_topic(path)
    old_leader, new_leader, third = info.partitions[0].replicas
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        for i in range(5):
            producer.produce("t", f"r{i}".encode(), partition=0)
            producer.flush()  # one frame each (acks=all batches records while an fsync runs)
    with Admin({"cluster": path}) as admin:
        handle = admin.cluster.partition("t", 0)
        # The old leader appends a frame and dies before replicating it.
        handle.logs[old_leader].append(encoded([b"unreplicated"]), leader_epoch=0)
        handle.close()
        assert admin.cluster.take_log_dir_offline(old_leader) == 1
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        producer.produce("t", b"under-new-leader", partition=0)  # epoch 1, offset 5
        with Admin({"cluster": path}) as admin:
            assert admin.cluster.topic("t").partitions[0].leader == new_leader
            admin.cluster.set_log_dir_online(old_leader)
        producer.produce("t", b"after-rejoin", partition=0)  # the writer catches the old leader up
    with Admin({"cluster": path}) as admin:
        placement = admin.cluster.topic("t").partitions[0]
        assert sorted(placement.isr) == sorted([old_leader, new_leader, third])
        handle = admin.cluster.partition("t", 0)
        frames = {r: replica_frames(d) for r, d in handle.replica_dirs.items()}
        assert frames[old_leader] == frames[new_leader] == frames[third]
        assert [f[0] for f in frames[old_leader]] == list(range(7))
        handle.close()
    assert consume_all(path) == [b"r0", b"r1", b"r2", b"r3", b"r4", b"under-new-leader", b"after-rejoin"]


def test_emptied_log_dir_is_refilled_and_rejoins(replicated):
    path, log_dirs = replicated
    info = make_topic(path, config={"segment.bytes": "2048"})
    leader, follower, _third = info.partitions[0].replicas
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        for i in range(40):
            producer.produce("t", f"before-{i}".encode() * 10, partition=0)
        faults.inject(log_dirs[follower])
        producer.produce("t", b"while-down", partition=0)
    with Admin({"cluster": path}) as admin:
        assert follower not in admin.cluster.topic("t").partitions[0].isr
    # Replace the disk: an empty directory where the failed one was.
    shutil.rmtree(log_dirs[follower])
    os.makedirs(log_dirs[follower])
    with Admin({"cluster": path}) as admin:
        admin.cluster.set_log_dir_online(follower)
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        producer.produce("t", b"after", partition=0)
    with Admin({"cluster": path}) as admin:
        assert follower in admin.cluster.topic("t").partitions[0].isr
        handle = admin.cluster.partition("t", 0)
        assert replica_frames(handle.replica_dirs[follower]) == replica_frames(handle.replica_dirs[leader])
        handle.close()
    assert len(consume_all(path)) == 42


def test_catch_up_truncates_only_at_a_frame_boundary(replicated):
    """The leader's epoch 0 ends inside one of the follower's frames: the follower is cut
    before that whole frame (never mid-frame) and then matches the leader frame by frame."""
    path, _ = replicated
    info = make_topic(path)
    leader, follower, third = info.partitions[0].replicas
    values = [f"r{i}".encode() for i in range(10)]
    with Admin({"cluster": path}) as admin:
        admin.cluster.metadata.remove_from_isr("t", 0, {follower})
        handle = admin.cluster.partition("t", 0)
        first, second = encoded(values[:5]), encoded(values[5:6])
        for replica in (leader, third):
            handle.logs[replica].append(first, leader_epoch=0)
            handle.logs[replica].append(second, leader_epoch=1)
        handle.logs[follower].append(encoded([b"old"] * 10), leader_epoch=0)  # offsets 0-9, one frame
        with handle.lock:
            handle.lock.write_high_watermark(6)
        handle.close()
        assert admin.sync_replicas()["replicas_rejoined"] == 1
        handle = admin.cluster.partition("t", 0)
        assert replica_frames(handle.replica_dirs[follower]) == replica_frames(handle.replica_dirs[leader])
        handle.close()
        assert admin.verify_replicas() == []

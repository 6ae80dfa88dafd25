"""A log dir fails while producers in child processes write with acks=all (R=3, min ISR=2)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from replication_helpers import make_topic

from helpers import read_all
from kstream import Admin, Consumer, Producer, TopicPartition
from kstream.log.storage import faults

CHILD = os.path.join(os.path.dirname(__file__), "..", "..", "..", "faults", "child_writer.py")


def test_log_dir_failure_mid_stream(replicated):
    path, log_dirs = replicated
    info = make_topic(path, partitions=2)
    leaders = {p.partition: p.leader for p in info.partitions}
    consumer = Consumer({"cluster": path})
    consumer.assign([TopicPartition("t", p, 0) for p in range(2)])
    seen: dict[int, list[int]] = {0: [], 1: []}

    def drain(deadline):
        while time.monotonic() < deadline:
            message = consumer.poll(0.05)
            if message is not None:
                seen[message.partition()].append(message.offset())

    children = [subprocess.Popen([sys.executable, CHILD, "acked", path, "t"], stdout=subprocess.PIPE)
                for _ in range(2)]
    drain(time.monotonic() + 1.0)
    failed = leaders[0]
    faults.inject(log_dirs[failed], "EIO")  # the leader of partition 0 dies mid-stream
    drain(time.monotonic() + 1.5)
    acknowledged = []
    for child in children:
        child.send_signal(signal.SIGKILL)
        out, _ = child.communicate()
        acknowledged += [line.split(" ") for line in out.decode().split("\n")[:-1]]
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        for p in range(2):
            producer.produce("t", b"end", partition=p)
    drain(time.monotonic() + 1.0)
    consumer.close()
    with Admin({"cluster": path}) as admin:
        placements = admin.cluster.topic("t").partitions
        assert all(failed not in p.isr and p.leader != failed for p in placements)
        assert placements[0].leader_epoch == 1 and len(placements[0].isr) == 2
        logs = {}
        for p in range(2):
            handle = admin.cluster.partition("t", p)
            logs[p] = read_all(handle.leader_dir)
            handle.close()
        assert admin.verify_replicas() == []
    for p in range(2):
        offsets = [o for o, _ in logs[p]]
        assert offsets == list(range(len(offsets)))  # contiguous, nothing duplicated
        assert seen[p] == list(range(len(seen[p])))  # the consumer never skipped or repeated
        assert len(seen[p]) == len(offsets)  # and kept reading across the failover
    for value, partition, offset in acknowledged:
        assert logs[int(partition)][int(offset)][1].split(b".")[0] == value.split(".")[0].encode()
    assert faults.ENABLED

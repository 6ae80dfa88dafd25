"""SIGKILL a replicating producer: after the next writer, replicas agree and acks held."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

from replication_helpers import make_topic, replica_frames

from kstream import Admin, Producer

CHILD = os.path.join(os.path.dirname(__file__), "..", "..", "..", "faults", "child_writer.py")


def test_replicas_agree_after_sigkill_during_replication(replicated):
    path, _ = replicated
    make_topic(path, partitions=2, config={"segment.bytes": "30000"})
    rng = random.Random(5)
    acknowledged = []
    for _ in range(3):
        child = subprocess.Popen([sys.executable, CHILD, "acked", path, "t"], stdout=subprocess.PIPE)
        time.sleep(rng.uniform(0.4, 1.0))
        child.send_signal(signal.SIGKILL)
        out, _ = child.communicate()
        for line in out.decode().split("\n")[:-1]:
            value, partition, offset = line.split(" ")
            acknowledged.append((value.split(".")[0], int(partition), int(offset)))
    assert acknowledged
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        for p in range(2):
            producer.produce("t", b"after", partition=p)  # reconciles the followers first
    with Admin({"cluster": path}) as admin:
        for p in range(2):
            handle = admin.cluster.partition("t", p)
            assert len(handle.info.isr) == 3
            frames = [replica_frames(d) for d in handle.replica_dirs.values()]
            assert frames[0] == frames[1] == frames[2]
            offsets = [f[0] for f in frames[0]]
            assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
            handle.close()
    from helpers import read_all

    with Admin({"cluster": path}) as admin:
        logs = {p: read_all(admin.cluster.partition("t", p).leader_dir) for p in range(2)}
    for value, partition, offset in acknowledged:
        assert logs[partition][offset][1].split(b".")[0] == value.encode()

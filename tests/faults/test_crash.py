"""SIGKILL a producer at random moments: every acknowledged record survives."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from helpers import read_all
from kstream import Admin, Producer

CHILD = os.path.join(os.path.dirname(__file__), "child_writer.py")


def _kill_rounds(cluster_path, rounds, seed):
    rng = random.Random(seed)
    acknowledged: dict[str, tuple[int, int]] = {}
    for _ in range(rounds):
        child = subprocess.Popen([sys.executable, CHILD, "acked", cluster_path, "t"],
                                 stdout=subprocess.PIPE)
        first = child.stdout.readline()  # started and acknowledged once, however slow the machine
        time.sleep(rng.uniform(0.1, 0.9))
        child.send_signal(signal.SIGKILL)
        out, _ = child.communicate()
        lines = (first + out).decode().split("\n")
        for line in lines[:-1]:  # the last piece may be cut mid-line
            value, partition, offset = line.split(" ")
            acknowledged[value + "@" + str(len(acknowledged))] = (int(partition), int(offset))
    return acknowledged


@pytest.mark.parametrize("seed", [1, 2])
def test_acknowledged_records_survive_sigkill(cluster_path, make_topic, seed):
    make_topic("t", 2, config={"segment.bytes": "20000"})
    acknowledged = _kill_rounds(cluster_path, rounds=4, seed=seed)
    assert acknowledged, "the child never got an acknowledgement"
    # Reopening for write recovers torn tails; the log then takes appends.
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        producer.produce("t", b"after-crash", partition=0)
        producer.produce("t", b"after-crash", partition=1)
    with Admin({"cluster": cluster_path}) as admin:
        info = admin.cluster.topic("t")
        logs = {p: read_all(admin.cluster.partition(info, p).leader_dir) for p in range(2)}
    for records in logs.values():
        assert [o for o, _ in records] == list(range(len(records)))
        assert records[-1][1] == b"after-crash"
    for key, (partition, offset) in acknowledged.items():
        value = key.split("@")[0]
        assert logs[partition][offset][1].split(b".")[0] == value.split(".")[0].encode()


@pytest.mark.slow
def test_acknowledged_records_survive_many_sigkills(cluster_path, make_topic):
    make_topic("t", 2, config={"segment.bytes": "20000"})
    acknowledged = _kill_rounds(cluster_path, rounds=40, seed=99)
    with Admin({"cluster": cluster_path}) as admin:
        info = admin.cluster.topic("t")
        logs = {p: read_all(admin.cluster.partition(info, p).leader_dir) for p in range(2)}
    for (partition, offset) in acknowledged.values():
        assert offset < len(logs[partition])

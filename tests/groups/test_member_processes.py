"""Several consumer processes in one group, one SIGKILLed mid-stream.

Checked exactly, against the group offsets table's history:
- each partition has one owner per generation;
- committed offsets never move back, and every advance from o1 to o2 by a
  member is backed by that member's output holding exactly offsets o1..o2-1;
- every record is processed; only the killed member's uncommitted tail is
  processed twice (the at-least-once window of commit-after-process);
- the group rebalances after the kill: at once, since the killed member's process is gone
  (on this machine its pid says so; a stopped one waits for session.timeout.ms:
  test_member_pause.py), at the latest once session.timeout.ms has passed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import defaultdict

from helpers import produce_range
from kstream.groups import ConsumerGroups
from kstream.log.cluster.cluster import Cluster

CHILD = os.path.join(os.path.dirname(__file__), "child_member.py")
PARTITIONS = 6
SESSION_TIMEOUT_S = 1.5


def produce(cluster_path, start, count):
    produce_range(cluster_path, "work", start, count, prefix="r", partitions=PARTITIONS,
                  config={"acks": "1", "linger.ms": 0})


def read_output(path):
    lines = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 4:  # a line cut by SIGKILL is incomplete
                    lines.append((int(parts[0]), int(parts[1]), int(parts[2]), parts[3]))
    return lines


def test_members_in_processes_sigkill_one(cluster_path, make_topic, tmp_path):
    make_topic("work", partitions=PARTITIONS)
    groups = ConsumerGroups(Cluster.open(cluster_path))
    names = ["m0", "m1", "m2"]
    outputs = {n: str(tmp_path / f"{n}.out") for n in names}
    children = {n: subprocess.Popen([sys.executable, CHILD, cluster_path, "g", "work", outputs[n], n])
                for n in names}
    try:
        produce(cluster_path, 0, 600)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # everyone has a share and is working
            group = groups.coordinator.describe("g")
            if group and group.state == "Stable" and len(group.members) == 3 \
                    and all(len(read_output(outputs[n])) > 20 for n in names):
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the three members never all got to work")
        before = groups.coordinator.describe("g")
        victim = next(m for m in before.members if m.client_id == "m1")
        children["m1"].send_signal(signal.SIGKILL)
        children["m1"].wait()
        killed_at = time.monotonic()
        produce(cluster_path, 600, 600)
        while time.monotonic() < deadline + 60:
            group = groups.coordinator.describe("g")
            if group.member(victim.member_id) is None and group.state == "Stable":
                break
            time.sleep(0.02)
        rebalanced_after = time.monotonic() - killed_at
        assert len(group.members) == 2
        assert rebalanced_after <= SESSION_TIMEOUT_S + 10
        ends = {p: groups.ends("work", p)[2] for p in range(PARTITIONS)}
        assert sum(ends.values()) == 1200
        while time.monotonic() < deadline + 120:  # the survivors finish the work
            committed = groups.committed("g")
            if all(committed.get(("work", p)) and committed[("work", p)].offset == ends[p]
                   for p in range(PARTITIONS)):
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"work not finished: {groups.committed('g')}")
    finally:
        for child in children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for child in children.values():
            child.wait(timeout=30)

    history = []  # per table version: {partition: (offset, member_id)}
    for version in range(0, groups.table.version() + 1):
        rows = groups.committed("g", version=version)
        history.append({p: (r.offset, r.member_id) for (t, p), r in rows.items()})
    client_of = {}
    for snapshot in history:
        for _, member_id in snapshot.values():
            if member_id:
                client_of[member_id] = member_id.split("-", 1)[0]
    processed = {n: read_output(outputs[n]) for n in names}
    owners = defaultdict(set)
    for name, lines in processed.items():
        for generation, partition, _, _ in lines:
            owners[(generation, partition)].add(name)
    assert all(len(o) == 1 for o in owners.values()), f"two owners in one generation: {owners}"

    offsets_by = {n: defaultdict(list) for n in names}
    for name, lines in processed.items():
        for _, partition, offset, _ in lines:
            offsets_by[name][partition].append(offset)
    covered = defaultdict(set)
    previous = {p: (0, None) for p in range(PARTITIONS)}
    for snapshot in history:
        for p, (offset, member_id) in snapshot.items():
            old = previous[p][0]
            assert offset >= old, f"partition {p} moved back from {old} to {offset}"
            if offset > old:
                name = client_of[member_id]
                assert set(range(old, offset)) <= set(offsets_by[name][p]), (p, old, offset, name)
                assert not covered[p] & set(range(old, offset))
                covered[p] |= set(range(old, offset))
            previous[p] = (offset, member_id)
    assert all(covered[p] == set(range(ends[p])) for p in range(PARTITIONS)), "a record was lost"

    # Processed twice: only records the killed member handled after its last commit.
    last_commit_by_victim = defaultdict(int)
    for snapshot in history:
        for p, (offset, member_id) in snapshot.items():
            if member_id and client_of[member_id] == "m1":
                last_commit_by_victim[p] = max(last_commit_by_victim[p], offset)
    seen = defaultdict(list)
    for name, lines in processed.items():
        for _, partition, offset, value in lines:
            seen[(partition, offset)].append((name, value))
    for (partition, offset), who in seen.items():
        assert len({v for _, v in who}) == 1  # same record
        if len(who) > 1:
            assert len(who) == 2 and any(n == "m1" for n, _ in who), (partition, offset, who)
            assert offset >= last_commit_by_victim[partition], (partition, offset, who)
    groups.close()


def test_a_spark_members_process_that_exited_but_is_not_reaped_counts_as_gone():
    """A Spark query's membership ends with its driver worker process; an exited worker its
    parent has not waited for yet (a zombie) is gone, not alive."""
    from kstream.groups.group_model import _alive

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while _alive(child.pid) and time.monotonic() < deadline:  # exits at once, stays a zombie
        time.sleep(0.01)
    try:
        assert not _alive(child.pid)
        assert _alive(os.getpid())
    finally:
        child.wait()

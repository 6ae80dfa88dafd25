"""A group member stopped (SIGSTOP) inside its heartbeat, or right after a commit's
membership check, does not freeze the group (issue 10, defect 16; chaos class
sigstop_group_member).

SIGSTOP stops every thread of a process at once. Before the fix a heartbeat was a write
to the cluster's metadata.db, and a member stopped inside it held SQLite's write lock:
every other member's heartbeat waited for it, nobody expired it, the group froze until
SIGCONT. A commit's check ran under the group's flock, which the protocol's steps also
took, with the same effect. Now heartbeats touch a file and only read the database, and
no step of the protocol takes the flock: the other member expires the stopped one after
session.timeout.ms and takes its partitions over.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from member_processes import MemberPair, file_words, is_stopped, process_state, wait_until

from kstream.groups import ConsumerGroups
from kstream.log.cluster.cluster import Cluster

CHILD = os.path.join(os.path.dirname(__file__), "child_stopping_member.py")
PARTITIONS = 4
SESSION_TIMEOUT_S = 1.5  # child_member.py's session.timeout.ms
MARGIN_S = 6.0










@pytest.mark.parametrize("where", ["heartbeat", "commit-check"])
def test_member_stopped_inside_the_protocol_does_not_freeze_the_group(cluster_path, make_topic, tmp_path, where):
    make_topic("work", partitions=PARTITIONS)
    groups = ConsumerGroups(Cluster.open(cluster_path))
    members = MemberPair(cluster_path, tmp_path, groups, CHILD, PARTITIONS, where)
    produce, files, children = members.produce, members.files, members.children
    try:
        wait_until(members.both_working, 60, "both members to work")
        a = next(m for m in groups.coordinator.describe("g").members if m.client_id == "a")
        open(files["a"]["flag"], "w").close()
        wait_until(lambda: produce(8) or (file_words(files["a"]["status"]) == ["paused"]
                                          and is_stopped(children["a"].pid)),
                   30, f"a to stop inside its {where}", lambda: f": status {file_words(files['a']['status'])}, "
                   f"state {process_state(children['a'].pid)}")
        stopped_at = time.monotonic()

        def b_took_over():
            group = groups.coordinator.describe("g")
            return (group.state == "Stable" and [m.client_id for m in group.members] == ["b"]
                    and len(group.members[0].assignment) == PARTITIONS)

        wait_until(b_took_over, SESSION_TIMEOUT_S + MARGIN_S,
              f"b to take a's partitions over within session.timeout.ms + {MARGIN_S}s of a stopping in its {where}")
        assert time.monotonic() - stopped_at >= SESSION_TIMEOUT_S * 0.9
        assert groups.coordinator.describe("g").member(a.member_id) is None
        produce()
        wait_until(lambda: len(groups.committed("g")) == PARTITIONS
              and all(row.member_id and row.member_id.startswith("b-") for row in groups.committed("g").values()),
              30, "b to commit every partition while a is stopped")

        children["a"].send_signal(signal.SIGCONT)  # a finds it was expired and joins again
        wait_until(lambda: "resumed" in file_words(files["a"]["status"]), 30, "a to resume")
        wait_until(lambda: produce(0) or (
            sorted(m.client_id for m in groups.coordinator.describe("g").members) == ["a", "b"]
            and groups.coordinator.describe("g").state == "Stable"), 30, "a to rejoin")
    finally:
        members.stop()
    assert all(child.returncode == 0 for child in children.values())
    groups.close()

"""A group member paused (SIGSTOP) in the middle of an offset commit (issue 10, defect 16).

The commit holds no lock while it writes, so the other member keeps heart-beating, expires
the paused one after session.timeout.ms and takes its partitions over; when the paused
member is resumed its commit is refused (FencedError), and committed offsets never move back.
"""

from __future__ import annotations

import os
import signal
import time

from member_processes import MemberPair, file_words, is_stopped, wait_until

from kstream.groups import ConsumerGroups
from kstream.log.cluster.cluster import Cluster

HERE = os.path.dirname(__file__)
CHILD = os.path.join(HERE, "child_pausing_member.py")
PARTITIONS = 4
SESSION_TIMEOUT_S = 1.5  # child_member.py's session.timeout.ms
MARGIN_S = 6.0








def test_member_paused_mid_commit_does_not_freeze_the_group(cluster_path, make_topic, tmp_path):
    make_topic("work", partitions=PARTITIONS)
    groups = ConsumerGroups(Cluster.open(cluster_path))
    members = MemberPair(cluster_path, tmp_path, groups, CHILD, PARTITIONS)
    produce, files, children = members.produce, members.files, members.children
    try:
        wait_until(members.both_working, 60, "both members to work")
        a = next(m for m in groups.coordinator.describe("g").members if m.client_id == "a")
        open(files["a"]["flag"], "w").close()  # a stops itself inside its next commit
        wait_until(lambda: produce(8) or (file_words(files["a"]["status"]) == ["paused"]
                                     and is_stopped(children["a"].pid)), 30, "a to pause mid-commit")
        paused_at = time.monotonic()

        def b_took_over():
            group = groups.coordinator.describe("g")
            return (group.state == "Stable" and [m.client_id for m in group.members] == ["b"]
                    and len(group.members[0].assignment) == PARTITIONS)

        wait_until(b_took_over, SESSION_TIMEOUT_S + MARGIN_S, "b to take a's partitions over "
              f"within session.timeout.ms + {MARGIN_S}s while a is paused mid-commit")
        assert time.monotonic() - paused_at >= SESSION_TIMEOUT_S * 0.9
        assert groups.coordinator.describe("g").member(a.member_id) is None
        produce()
        wait_until(lambda: all(row.member_id and row.member_id.startswith("b-")
                          for row in groups.committed("g").values())
              and len(groups.committed("g")) == PARTITIONS, 30, "b to commit every partition")

        children["a"].send_signal(signal.SIGCONT)
        wait_until(lambda: "fenced" in file_words(files["a"]["status"]), 30, "a's resumed commit to be fenced")
        assert file_words(files["a"]["status"])[:3] == ["paused", "resumed", "fenced"]
    finally:
        members.stop()

    previous = {}
    for version in range(groups.table.version() + 1):  # offsets never move back
        for (_, partition), row in groups.committed("g", version=version).items():
            assert row.offset >= previous.get(partition, 0), (version, partition)
            previous[partition] = row.offset
    groups.close()

"""A member whose process is gone, or whose session timed out, is not a member to any reader
(issue 20, item 6), and readers still write nothing (issue 26).

A Spark query with ``group.id`` that exited, or a consumer that was SIGKILLed, used to stay
"Stable, Members: 1, <host>/<dead pid>" in `groups describe`, the console, lag and the
AdminClient until another member came by and expired it. Now every reader shows the group
as it will be once the expired members are removed (here: Empty, its generation bumped),
without writing it; the next writer removes them for real, to exactly that state.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner
from member_processes import file_words, is_stopped, wait_until

from helpers import produce_range
from kstream.groups import ConsumerGroups
from kstream.groups.group_model import EMPTY, PREPARING, SPARK, STABLE, Group, Member, expired, live
from kstream.log.cluster.cluster import Cluster
from kstream.tools.cli.main import cli
from stuck_transactions import snapshot

CHILD = os.path.join(os.path.dirname(__file__), "child_idle_member.py")
LONG_SESSION_MS = 120_000  # a killed member must be gone at once, not after this
SHORT_SESSION_MS = 1_500


def start_member(cluster_path: str, tmp_path, kind: str, session_timeout_ms: int) -> subprocess.Popen:
    status = str(tmp_path / f"{kind}.status")
    child = subprocess.Popen([sys.executable, CHILD, cluster_path, "g", "t", status, kind,
                              str(session_timeout_ms)])
    try:
        wait_until(lambda: file_words(status) == ["ready"] or child.poll() is not None, 60,
                   f"the {kind} member to join")
        assert child.poll() is None, f"the {kind} member exited with {child.returncode}"
    except BaseException:
        child.kill()
        child.wait()
        raise
    return child


@pytest.fixture
def topic(cluster_path, make_topic):
    make_topic("t")
    produce_range(cluster_path, "t", 0, 3)
    return "t"


def console_pages(cluster_path: str) -> tuple[str, str]:
    from fastapi.testclient import TestClient

    from kstream.tools.web.app import create_app
    from kstream.tools.web.clusters import ClusterRef, check_clusters

    with TestClient(create_app(check_clusters([ClusterRef("main", cluster_path)]), read_only=True)) as client:
        pages = client.get("/c/main/groups"), client.get("/c/main/groups/g")
    assert [p.status_code for p in pages] == [200, 200]
    return pages[0].text, pages[1].text


def assert_every_reader_shows_no_member(cluster_path: str, dead_pid: int) -> None:
    from kstream.admin import AdminClient, ConsumerGroupState

    groups = ConsumerGroups(Cluster.open(cluster_path))
    try:
        described = groups.describe("g")
        assert (described.state, described.members) == (EMPTY, ())
        assert [(p.partition, p.committed, p.owner) for p in groups.lag("g")] == [(0, 3, None)]
        assert groups.list_groups() == ["g"]  # an Empty group with offsets is still a group
    finally:
        groups.close()
        groups.cluster.close()
    runner = CliRunner()
    for command in (["groups", "describe", "g"], ["groups", "describe", "g", "--members"],
                    ["groups", "describe", "g", "--state"], ["groups", "list", "--state"]):
        result = runner.invoke(cli, ["--cluster", cluster_path, *command], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert "Stable" not in result.output and "Empty" in result.output, (command, result.output)
        assert f"/{dead_pid}" not in result.output
    members = runner.invoke(cli, ["--cluster", cluster_path, "groups", "describe", "g", "--members"]).output
    assert "Members: 0" in members and "has no active members" in members, members
    with AdminClient({"cluster": cluster_path}) as client:
        description = client.describe_consumer_groups(["g"])["g"].result()
        assert (description.state, description.members) == (ConsumerGroupState.EMPTY, [])
        listed = client.list_consumer_groups().result().valid
        assert [(g.group_id, g.state) for g in listed] == [("g", ConsumerGroupState.EMPTY)]
        assert [len(g.members) for g in client.list_groups()] == [0]
    summary, page = console_pages(cluster_path)
    assert "Stable" not in summary and "Empty" in summary
    assert "No active members." in page and f"/{dead_pid}<" not in page and "State Empty" in page


@pytest.mark.parametrize("kind", ["consumer", "spark"])
def test_a_killed_members_group_shows_no_member_to_any_reader_and_readers_write_nothing(
        cluster_path, topic, tmp_path, kind):
    child = start_member(cluster_path, tmp_path, kind, LONG_SESSION_MS)
    groups = ConsumerGroups(Cluster.open(cluster_path))
    try:
        before = groups.describe("g")
        assert before.state == STABLE and [m.pid for m in before.members] == [child.pid]
        child.send_signal(signal.SIGKILL)
        child.wait()
        rows = groups.coordinator.describe("g")  # the rows as stored: nobody removed it yet
        assert [m.pid for m in rows.members] == [child.pid] and rows.state == STABLE
        files = snapshot(cluster_path)
        assert_every_reader_shows_no_member(cluster_path, child.pid)
        assert snapshot(cluster_path) == files  # ... and no reader wrote anything
        seen = groups.coordinator.view("g")
        assert (seen.state, seen.members, seen.generation) == (EMPTY, (), rows.generation + 1)

        # The next writer removes the member for real, to the state the readers showed.
        after = groups.coordinator.expire("g")
        assert after == groups.coordinator.describe("g") == seen
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        groups.close()
        groups.cluster.close()


def test_a_joining_consumer_removes_a_dead_spark_query_and_is_not_refused(cluster_path, topic, tmp_path):
    """The next writer of the group (here a consumer joining) removes the dead member: a
    consumer is never refused for a Spark query that is gone."""
    from kstream import Consumer

    child = start_member(cluster_path, tmp_path, "spark", LONG_SESSION_MS)
    child.send_signal(signal.SIGKILL)
    child.wait()
    consumer = Consumer({"cluster": cluster_path, "group.id": "g", "client.id": "next"})
    try:
        consumer.subscribe(["t"])
        limit = time.monotonic() + 30
        while not consumer.assignment():
            assert time.monotonic() < limit, "never assigned"
            consumer.poll(0.05)
        groups = ConsumerGroups(Cluster.open(cluster_path))
        try:
            stored = groups.coordinator.describe("g")
            assert [m.client_id for m in stored.members] == ["next"] and stored.state == STABLE
        finally:
            groups.close()
            groups.cluster.close()
    finally:
        consumer.close()


def test_a_member_past_its_session_timeout_is_not_shown_and_does_not_come_back(cluster_path, topic, tmp_path):
    """Alive but not heart-beating (stopped) for session.timeout.ms: no reader shows it, none
    writes. Resumed, it finds itself expired at its next heartbeat and joins again as a new
    member: what a reader showed is never contradicted by the same member coming back."""
    child = start_member(cluster_path, tmp_path, "consumer", SHORT_SESSION_MS)
    groups = ConsumerGroups(Cluster.open(cluster_path))
    try:
        old = groups.coordinator.describe("g").members[0]
        child.send_signal(signal.SIGSTOP)
        wait_until(lambda: is_stopped(child.pid), 10, "the member to stop")
        time.sleep(SHORT_SESSION_MS / 1000 + 0.5)
        files = snapshot(cluster_path)
        assert_every_reader_shows_no_member(cluster_path, child.pid)
        assert snapshot(cluster_path) == files
        assert groups.coordinator.describe("g").member(old.member_id) is not None  # not removed

        child.send_signal(signal.SIGCONT)

        def rejoined() -> bool:
            stored = groups.coordinator.describe("g")
            assert stored.member(old.member_id) is None or stored.state == STABLE, \
                "the expired member came back"
            return (stored.state == STABLE and len(stored.members) == 1
                    and stored.members[0].member_id != old.member_id)

        wait_until(rejoined, 30, "the resumed member to join again as a new member")
        assert groups.describe("g").members[0].pid == child.pid
    finally:
        child.send_signal(signal.SIGCONT)
        child.send_signal(signal.SIGTERM)
        child.wait(timeout=30)
        groups.close()
        groups.cluster.close()


# -- the rule, from the rows alone ----------------------------------------------------------------


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _member(member_id: str, pid: int, *, kind: str = "consumer", instance_id: str | None = None,
            heartbeat_ms: int = 0, session_timeout_ms: int = LONG_SESSION_MS) -> Member:
    import socket

    return Member(member_id, instance_id, member_id, socket.gethostname(), pid, kind, ("t",), 1,
                  (("t", 0),), session_timeout_ms, 300_000, heartbeat_ms, heartbeat_ms)


def test_the_view_of_a_group_left_with_live_members_is_a_rebalance():
    now = int(time.time() * 1000)
    dead, alive = _member("a", _dead_pid(), heartbeat_ms=now), _member("b", os.getpid(), heartbeat_ms=now)
    group = Group("g", 1, STABLE, "range", "a", (dead, alive), 10, '{"t": 1}')
    seen = live(group, now)
    assert seen.members == (alive,)
    assert (seen.state, seen.generation, seen.rebalance_started_ms, seen.protocol) == (PREPARING, 1, now, "range")
    assert live(seen, now) == seen  # (nothing more to remove)


def test_a_static_member_keeps_its_slot_for_its_session_timeout_though_its_process_is_gone():
    """group.instance.id: as in Kafka, a restarted static member takes its slot back without a
    rebalance, so its slot waits session.timeout.ms for it, whatever became of its process."""
    now = int(time.time() * 1000)
    static = _member("a", _dead_pid(), instance_id="host-1", heartbeat_ms=now)
    group = Group("g", 1, STABLE, "range", "a", (static,))
    assert not expired(static, group, now)
    assert expired(static, group, now + LONG_SESSION_MS + 1)
    assert live(group, now) is group


def test_a_dead_spark_query_is_gone_and_leaves_the_group_empty():
    now = int(time.time() * 1000)
    query = _member("q", _dead_pid(), kind=SPARK, session_timeout_ms=0)
    seen = live(Group("g", 4, STABLE, None, "q", (query,)), now)
    assert (seen.state, seen.generation, seen.members, seen.leader) == (EMPTY, 5, (), None)


def test_an_operators_reset_is_not_refused_for_a_dead_member_and_removes_it(cluster_path, topic, tmp_path):
    """reset-offsets refuses while members are active; a killed one is not active. The reset is
    a writer: it removes the dead member, so nothing of it is left to come back."""
    child = start_member(cluster_path, tmp_path, "consumer", LONG_SESSION_MS)
    child.send_signal(signal.SIGKILL)
    child.wait()
    result = CliRunner().invoke(cli, ["--cluster", cluster_path, "groups", "reset-offsets", "g", "--topic", "t",
                                      "--to-earliest", "--execute"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    groups = ConsumerGroups(Cluster.open(cluster_path))
    try:
        assert groups.committed("g")[("t", 0)].offset == 0
        stored = groups.coordinator.describe("g")
        assert (stored.state, stored.members) == (EMPTY, ())
    finally:
        groups.close()
        groups.cluster.close()

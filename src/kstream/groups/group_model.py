"""What a consumer group is, as the coordinator keeps it, and the rules read from its rows alone.

:class:`Group` and :class:`Member` are one read of the group's rows (see
:mod:`kstream.groups.coordinator`, which keeps them in the cluster's metadata
database and runs the rebalance protocol on them); :class:`MemberSpec` is what a
member asks for when it joins. The rules here need nothing but a read of the
rows and the clock: whether a member expired (:func:`expired`), what the group is
once members are removed (:func:`without`) and as every reader shows it, its
expired members left out (:func:`live`), whether a commit may be written
(:func:`commit_refusal`, :func:`stale`, :func:`member_gone`), which topics a
subscription covers (:func:`subscribed`). No SQL, no files, no locks; safe on
any thread.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Collection
from dataclasses import dataclass, replace

EMPTY, PREPARING, STABLE = "Empty", "PreparingRebalance", "Stable"
CONSUMER, SPARK = "consumer", "spark"


@dataclass(frozen=True)
class MemberSpec:
    """What a member asks for when it joins."""

    client_id: str
    subscription: tuple[str, ...]  # topic names; a name starting with "^" is a regex
    assignor: str = "range"
    session_timeout_ms: int = 45_000  # 0: never expires (Spark queries)
    rebalance_timeout_ms: int = 300_000
    instance_id: str | None = None
    kind: str = CONSUMER


@dataclass(frozen=True)
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    pid: int
    kind: str
    subscription: tuple[str, ...]
    joined_generation: int
    assignment: tuple[tuple[str, int], ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    joined_ms: int
    last_heartbeat_ms: int


@dataclass(frozen=True)
class Group:
    group_id: str
    generation: int
    state: str
    protocol: str | None
    leader: str | None
    members: tuple[Member, ...]
    rebalance_started_ms: int = 0
    topics: str = "{}"  # JSON: partition counts the last assignment was computed for

    def member(self, member_id: str) -> Member | None:
        return next((m for m in self.members if m.member_id == member_id), None)


def commit_refusal(name: str, current: Group | None, member_id: str | None, generation: int,
                   now: int) -> str | None:
    """Why a commit by this member and generation may not be written now (None: it may).
    A member past its timeout counts as gone even before someone removed it."""
    live = [m for m in current.members if not expired(m, current, now)] if current else []
    if not member_id:
        if live:
            return (f"group {name!r} has {len(live)} active member(s); a consumer "
                    "that is not a member (assign() without subscribe()) may not commit for it")
        return None
    if current is None or all(m.member_id != member_id for m in live):
        return (f"member {member_id} is no longer in group {name!r} (it missed heartbeats for "
                "session.timeout.ms, left, or a newer query took the group over); its commit "
                "was refused and nothing changed")
    if generation != current.generation:
        return (f"member {member_id} of group {name!r} committed with generation {generation}, "
                f"but the group is at generation {current.generation} (it rebalanced); the "
                "commit was refused and nothing changed")
    return None


def member_gone(group: Group | None, member_id: str, generation: int) -> bool:
    """Has this member left the group, or the group passed this generation? From the group's
    rows alone (no heartbeat clock), so once true it stays true: member ids are never reused
    and generations only grow."""
    return group is None or group.member(member_id) is None or generation != group.generation


def stale(group: Group, member_id: str | None, generation: int) -> bool:
    """May a commit checked for this member and generation no longer be written?"""
    if not member_id:  # a commit from outside the group: members came since
        return bool(group.members)
    return group.member(member_id) is None or generation != group.generation


def expired(member: Member, group: Group, now: int) -> bool:
    """Is this member gone, though its row is still there? On this host, when its process is
    gone (a Spark query: the driver worker that claimed the group, whose ``stop()`` Spark
    does not always call; a consumer: the process that joined, SIGKILLed or exited without
    leaving), except a static member (``group.instance.id``), whose slot waits for it as in
    Kafka; or when it missed heartbeats for session.timeout.ms; or when it has not rejoined
    a rebalance within its rebalance timeout (max.poll.interval.ms)."""
    if member.kind == SPARK:
        return _process_gone(member)
    if member.instance_id is None and _process_gone(member):
        return True
    if member.session_timeout_ms and now - member.last_heartbeat_ms > member.session_timeout_ms:
        return True
    return (group.state == PREPARING and member.joined_generation <= group.generation
            and now - max(member.joined_ms, group.rebalance_started_ms) > member.rebalance_timeout_ms)


def without(group: Group, member_ids: Collection[str], now: int) -> Group:
    """The group once these members are removed, as the coordinator's removal leaves it
    (before the members left complete a rebalance): none left, ``Empty`` with its generation
    bumped (which fences every zombie) and no leader or assignor; only Spark queries left,
    as it was (a query owns the group whole); else ``PreparingRebalance``: the members left
    must rejoin, from now on unless a rebalance was already under way. ``group`` itself when
    none of them is a member."""
    gone = set(member_ids)
    members = tuple(m for m in group.members if m.member_id not in gone)
    if len(members) == len(group.members):
        return group
    if not members:
        return replace(group, members=(), state=EMPTY, generation=group.generation + 1, leader=None,
                       protocol=None)
    if all(m.kind == SPARK for m in members):
        return replace(group, members=members)
    return replace(group, members=members, state=PREPARING,
                   rebalance_started_ms=group.rebalance_started_ms if group.state == PREPARING else now)


def live(group: Group, now: int) -> Group:
    """The group as readers show it (describe, list, lag, the console, the AdminClient): as if
    its expired members were removed (:func:`without`), which the next writer of the group
    does. Computed, never written: a reader writes nothing."""
    return without(group, [m.member_id for m in group.members if expired(m, group, now)], now)


def _process_gone(member: Member) -> bool:
    """Did the member's process end? Known only on the host it runs on; elsewhere, no."""
    return member.host == socket.gethostname() and not _alive(member.pid)


def _alive(pid: int) -> bool:
    """Is process ``pid`` (on this host) running? A zombie (exited, not yet reaped by its
    parent, e.g. a Spark worker the JVM has not waited for yet) is not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            # "pid (comm) state ...": comm may hold spaces and parentheses, the state follows the last ")"
            return stat.read().rpartition(b")")[2].split()[0] != b"Z"
    except (OSError, IndexError):
        return True  # no /proc (not Linux) or it went away: kill(0) said it exists


def matches(subscribed: str, topic: str) -> bool:
    if subscribed.startswith("^"):
        return re.fullmatch(subscribed, topic) is not None
    return subscribed == topic


def subscribed(subscription: tuple[str, ...], topic: str) -> bool:
    return any(matches(s, topic) for s in subscription)

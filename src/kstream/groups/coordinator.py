"""Group membership between processes of one machine: Kafka's eager rebalance protocol
kept in the cluster's metadata database.

There is no broker, so the coordinator is a set of rows, one heartbeat file
per member and one file per offset commit in flight; every member runs the
protocol's steps itself, each in one short SQLite write transaction (which
serializes them across processes, with no other lock):

- **join**: a new member (or a changed subscription) moves the group to
  ``PreparingRebalance``. Each member notices (its heartbeat thread reads the
  group row), revokes its partitions (committing first, while its generation
  is still valid) and *rejoins*. This is Kafka's barrier: nobody gets the new
  assignment until every member has given up the old one, so a partition has
  one owner at a time.
- **complete**: the member whose rejoin is the last one missing computes the
  assignment with the group's assignor, bumps the generation and moves the
  group to ``Stable``; members pick up their partitions on their next poll.
- **heartbeats take no lock**: a member's liveness is the mtime of its file
  ``<cluster>/groups/heartbeats/<group hash>-<member hash>``, which its
  heartbeat thread touches (``os.utime``) unless it finds itself already past
  its session timeout; the thread only *reads* the group rows (a WAL reader
  never blocks a writer). A process is stopped
  (SIGSTOP, swap) with every thread at once; had heartbeats been SQLite
  writes, one stopped inside its write would hold the database's write lock
  and freeze every member of every group (and every metadata writer) until
  SIGCONT. The files are not fsynced: liveness is not durable state (after a
  crash of the machine every member is gone anyway), and a missing file falls
  back to the member row's ``last_heartbeat_ms`` (set at join and rejoin).
  Only when a member's heartbeat (or a join, a claim, an operator's reset or
  delete) sees a member expired does it take a (short) write transaction to
  remove it. The write transactions of the protocol
  (join, rejoin, leave, expiry) are a few statements each; a member
  stopped inside one still blocks the others until it is resumed (SQLite has
  no lock leases; see docs/GROUPS.md for how often).
- **leave / expire**: a member that leaves, whose process is gone (on this
  host; not a static member), that misses heartbeats for
  ``session.timeout.ms`` (any member's heartbeat notices), or does not rejoin
  within its rebalance timeout (``max.poll.interval.ms``), is removed and the
  rest rebalance. A group left with no members is ``Empty`` and its
  generation is bumped, which fences every zombie.
- **fencing**: an offset commit names a member id and generation; it is
  accepted only if that member is in the group and the generation is the
  group's current one (:meth:`Coordinator.begin_commit`: a file in
  ``<cluster>/groups/commits/`` registers it, then a read checks it; taken
  after the committer took the table snapshot it builds on). Neither that nor
  the slow Delta write after it holds a lock, so a committer paused there (SIGSTOP, GC, swap) never stops the
  group: its heartbeats stop, it is expired after ``session.timeout.ms`` and
  the others rebalance. The check registers the commit as in flight; one
  whose member or generation is gone by then is *stale*, and before anyone
  reads the group's offsets to start from them, a fence commit rewrites the
  group's offsets (:meth:`stale_commits`), so the stale write, prepared
  against an older table version, fails Delta's optimistic concurrency check
  and is refused with FencedError (see :mod:`kstream.groups.service`).
- **static membership**: a member with ``group.instance.id`` that comes back
  takes over its old slot (and assignment) without a rebalance, if its
  subscription is unchanged; the old member id is fenced.
- **Spark queries** claim a group outright (:meth:`Coordinator.claim`): a new
  query fences the previous one. A group is used by Spark queries or by
  Python consumers, not both at once.
- **readers write nothing**: describe, list, lag, the console and the Admin
  client show :meth:`Coordinator.view`, the group as if its expired members
  were removed (the state the next writer leaves it in), computed from the
  rows, the heartbeat files and the members' pids; the rows are only changed
  by writers (members, claims, operators), as transaction timeouts are
  (:mod:`kstream.log.transactions.view`).

This module is the protocol's state machine and its rows; the group's shapes and
the rules read from them alone (expiry, commit checks) are in
:mod:`kstream.groups.group_model`, the heartbeat and commit-in-flight files in
:mod:`kstream.groups.member_files`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from kstream.errors import ConfigError, FencedError, GroupBusyError
from kstream.groups.assignors import ASSIGNORS
from kstream.groups.group_model import (
    CONSUMER,
    EMPTY,
    PREPARING,
    SPARK,
    STABLE,
    Group,
    Member,
    MemberSpec,
    commit_refusal,
    expired,
    live,
    matches,
    member_gone,
    stale,
    subscribed,
    without,
)
from kstream.groups.member_files import MemberFiles
from kstream.log.cluster.cluster import Cluster

# Re-exported: the group's shapes and rules are imported from here by the service, membership,
# transactional offsets, the console and the monitor.
__all__ = ["CONSUMER", "EMPTY", "PREPARING", "SPARK", "STABLE", "Coordinator", "Group", "Member",
           "MemberSpec", "commit_refusal", "member_gone"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS consumer_groups (
    group_id TEXT PRIMARY KEY, generation INTEGER NOT NULL, state TEXT NOT NULL,
    protocol TEXT, leader TEXT, rebalance_started_ms INTEGER NOT NULL,
    topics TEXT NOT NULL, updated_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS group_members (
    group_id TEXT NOT NULL, member_id TEXT NOT NULL, instance_id TEXT, client_id TEXT NOT NULL,
    host TEXT NOT NULL, pid INTEGER NOT NULL, kind TEXT NOT NULL, subscription TEXT NOT NULL,
    joined_generation INTEGER NOT NULL, assignment TEXT NOT NULL,
    session_timeout_ms INTEGER NOT NULL, rebalance_timeout_ms INTEGER NOT NULL,
    joined_ms INTEGER NOT NULL, last_heartbeat_ms INTEGER NOT NULL,
    PRIMARY KEY (group_id, member_id));
"""
_MEMBER_COLUMNS = ("member_id, instance_id, client_id, host, pid, kind, subscription, "
                   "joined_generation, assignment, session_timeout_ms, rebalance_timeout_ms, "
                   "joined_ms, last_heartbeat_ms")


def _now_ms() -> int:
    return int(time.time() * 1000)


class Coordinator:
    """The group rows of one cluster (see the module docstring)."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.metadata = cluster.metadata
        self._lock_dir = os.path.join(cluster.path, "groups")
        self._files = MemberFiles(self._lock_dir)
        self._removed: list[tuple[str, str]] = []  # heartbeat files to remove once committed

    def _tables(self) -> bool:
        """Do the group tables exist? A cluster where no group was ever joined, claimed or
        sent transaction offsets has none: readers see no groups and create nothing; writes
        make them (:meth:`ensure_schema`)."""
        return self.metadata.has_schema("groups", _SCHEMA)

    # -- the group lock ----------------------------------------------------------------

    @contextmanager
    def lock(self, group: str) -> Iterator[None]:
        """Exclusive across threads and processes (a fresh open file description each time);
        released by the kernel if the holder dies."""
        os.makedirs(self._lock_dir, exist_ok=True)
        name = hashlib.sha1(group.encode()).hexdigest()[:24] + ".lock"
        fd = os.open(os.path.join(self._lock_dir, name), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    @contextmanager
    def _locked(self, group: str) -> Iterator[sqlite3.Connection]:
        """One write transaction of the protocol. No group flock: SQLite's write lock
        serializes the steps already, and a flock held by a stopped member would stop the
        others' expiry of it (heartbeats, joins) for as long as it is stopped."""
        with self._write() as tx:
            yield tx

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction; the heartbeat files of members it removed go once it committed."""
        self.ensure_schema()
        self._removed = []
        with self.metadata.transaction() as tx:
            yield tx
        self._forget_removed()

    # -- reading -----------------------------------------------------------------------

    def describe(self, group: str) -> Group | None:
        """The group's rows as stored, as of one read transaction (a WAL reader: never waits
        for writers): what its members act on. An expired member is there until a writer
        removes it; what readers show is :meth:`view`."""
        if not self._tables():
            return None
        tx = self.metadata.connection
        tx.execute("BEGIN")
        try:
            return self._read(tx, group)
        finally:
            tx.execute("COMMIT")

    def view(self, group: str) -> Group | None:
        """The group as every reader shows it (describe, list, lag, the console, the Admin
        client): as if its expired members (process gone, session timed out; see
        :func:`kstream.groups.group_model.expired`) were removed, which is the state the
        next writer of the group leaves it in. Writes nothing, like :meth:`describe`."""
        current = self.describe(group)
        return None if current is None else live(current, _now_ms())

    def expire(self, group: str) -> Group | None:
        """Remove the group's expired members, if it has any (one write transaction then; a
        read only otherwise); the group after. For writers that act on "no active members"
        (an operator's reset or delete): what they checked must be what is stored."""
        current = self.describe(group)
        now = _now_ms()
        if current is None or not any(expired(m, current, now) for m in current.members):
            return current
        with self._locked(group) as tx:
            self._expire(tx, group, now)
            return self._read(tx, group)

    def list_groups(self) -> list[str]:
        if not self._tables():
            return []
        return [r[0] for r in self.metadata.connection.execute("SELECT group_id FROM consumer_groups ORDER BY 1")]

    def _read(self, tx: sqlite3.Connection, group: str) -> Group | None:
        row = tx.execute("SELECT generation, state, protocol, leader, rebalance_started_ms, topics "
                         "FROM consumer_groups WHERE group_id = ?", (group,)).fetchone()
        if row is None:
            return None
        members = tuple(
            Member(r[0], r[1], r[2], r[3], r[4], r[5], tuple(json.loads(r[6])), r[7],
                   tuple((t, p) for t, p in json.loads(r[8])), r[9], r[10], r[11],
                   self._files.last_heartbeat_ms(group, r[0], r[12]) if r[5] == CONSUMER else r[12])
            for r in tx.execute(f"SELECT {_MEMBER_COLUMNS} FROM group_members WHERE group_id = ? "
                                "ORDER BY joined_ms, member_id", (group,)))
        return Group(group, row[0], row[1], row[2], row[3], members, row[4], row[5])

    # -- membership ---------------------------------------------------------------------

    def join(self, group: str, spec: MemberSpec) -> str:
        """Add a member; returns its member id. Its assignment arrives when the group is Stable."""
        if spec.assignor not in ASSIGNORS:
            raise ConfigError(f"partition.assignment.strategy={spec.assignor!r} is not known; "
                              f"use one of {', '.join(ASSIGNORS)}")
        member_id = f"{spec.client_id}-{uuid.uuid4()}"
        self._files.create_heartbeat(group, member_id)
        now = _now_ms()
        try:
            self._join(group, spec, member_id, now)
        except BaseException:
            self._removed = [(group, member_id)]
            self._forget_removed()
            raise
        return member_id

    def _forget_removed(self) -> None:
        removed, self._removed = self._removed, []
        self._files.remove_heartbeats(removed)

    def _join(self, group: str, spec: MemberSpec, member_id: str, now: int) -> None:
        with self._locked(group) as tx:
            self._expire(tx, group, now)
            current = self._ensure_group(tx, group, now)
            if any(m.kind == SPARK for m in current.members):
                raise GroupBusyError(
                    f"group {group!r} is owned by a running Spark query; a Python consumer "
                    "cannot join it (use another group.id, or stop the query)")
            if current.members and current.protocol not in (None, spec.assignor):
                raise ConfigError(
                    f"group {group!r} uses partition.assignment.strategy={current.protocol}; "
                    f"this consumer asks for {spec.assignor} (every member must use the same)")
            static = next((m for m in current.members
                           if spec.instance_id and m.instance_id == spec.instance_id), None)
            if static is not None:  # static membership: take the old slot over
                tx.execute("UPDATE group_members SET member_id = ?, pid = ?, host = ?, "
                           "last_heartbeat_ms = ? WHERE group_id = ? AND member_id = ?",
                           (member_id, os.getpid(), socket.gethostname(), now, group,
                            static.member_id))
                self._removed.append((group, static.member_id))
                if static.subscription == spec.subscription:
                    return
                tx.execute("UPDATE group_members SET subscription = ? WHERE group_id = ? "
                           "AND member_id = ?", (json.dumps(spec.subscription), group, member_id))
            else:
                _insert_member(tx, group, member_id, spec, current.generation + 1, now)
            tx.execute("UPDATE consumer_groups SET protocol = ? WHERE group_id = ?",
                       (spec.assignor, group))
            self._prepare_rebalance(tx, group, now)
            self._try_complete(tx, group)

    def rejoin(self, group: str, member_id: str) -> bool:
        """A member has revoked its partitions for the pending rebalance. False if it is
        no longer in the group (expired or fenced): it must join again as a new member."""
        with self._locked(group) as tx:
            self._expire(tx, group, _now_ms())
            current = self._read(tx, group)
            if current is None or current.member(member_id) is None:
                return False
            tx.execute("UPDATE group_members SET joined_generation = ?, last_heartbeat_ms = ? "
                       "WHERE group_id = ? AND member_id = ?",
                       (current.generation + 1, _now_ms(), group, member_id))
            if current.state != PREPARING:
                self._prepare_rebalance(tx, group, _now_ms())
            self._try_complete(tx, group)
        return True

    def leave(self, group: str, member_id: str) -> None:
        with self._locked(group) as tx:
            self._remove(tx, group, [member_id], _now_ms())

    def heartbeat(self, group: str, member_id: str) -> Group | None:
        """Record that the member is alive (touch its heartbeat file: no database write, see
        the module docstring), expire dead members and, on the leader, notice subscribed
        topics that appeared or grew; the group as the member should now see it (None: the
        group is gone). Writes to the database only to expire someone or start a rebalance.

        A member that is itself past its session timeout (it was stopped, or its heartbeats
        starved) does not touch its file: it is expired here, as readers already showed it
        (:meth:`view`), and joins again as a new member. So a member a reader saw gone never
        comes back."""
        if not self._tables():
            return None  # (a member's join made them: only a cluster replaced under it has none)
        tx = self.metadata.connection
        tx.execute("BEGIN")  # a read transaction: one consistent view, never waits for writers
        try:
            current = self._read(tx, group)
            grown = current is not None and current.state == STABLE and current.leader == member_id \
                and self._topics_changed(tx, current)
        finally:
            tx.execute("COMMIT")
        if current is None:
            return None
        now = _now_ms()  # (after the read: the moment the touch below vouches for)
        me = current.member(member_id)
        if me is not None and not expired(me, current, now):
            self._files.touch_heartbeat(group, member_id)
        if grown or any(expired(m, current, now) for m in current.members):
            with self._locked(group) as locked:
                self._expire(locked, group, now)
                current = self._read(locked, group)
                if grown and current is not None and current.state == STABLE:
                    self._prepare_rebalance(locked, group, now)
                    current = self._read(locked, group)
        return current

    def claim(self, group: str, client_id: str) -> tuple[str, int]:
        """A Spark query takes the group over, fencing any earlier query: (member id, generation)."""
        member_id = f"{client_id}-{uuid.uuid4()}"
        now = _now_ms()
        with self._locked(group) as tx:
            self._expire(tx, group, now)
            current = self._ensure_group(tx, group, now)
            consumers = [m for m in current.members if m.kind != SPARK]
            if consumers:
                raise GroupBusyError(
                    f"group {group!r} has {len(consumers)} active Python consumer(s) "
                    f"({', '.join(m.member_id for m in consumers)}); a Spark query cannot share "
                    "it: use another group.id or stop those consumers")
            tx.execute("DELETE FROM group_members WHERE group_id = ?", (group,))
            self._removed.extend((group, m.member_id) for m in current.members)
            generation = current.generation + 1
            _insert_member(tx, group, member_id, MemberSpec(client_id, (), session_timeout_ms=0,
                                                            rebalance_timeout_ms=0, kind=SPARK),
                           generation, now)
            tx.execute("UPDATE consumer_groups SET generation = ?, state = ?, leader = ?, "
                       "protocol = NULL, updated_ms = ? WHERE group_id = ?",
                       (generation, STABLE, member_id, now, group))
        return member_id, generation

    def begin_commit(self, group: str, member_id: str | None, generation: int) -> str:
        """Register a commit as in flight, then check it (as :meth:`check_commit`); returns
        its token for :meth:`end_commit`. Take the table snapshot the commit builds on
        BEFORE this: a member expired after the check then finds its commit in flight,
        stale, and the fence written after that snapshot makes the write conflict.

        No database write and no lock: the registration is a file in
        ``<cluster>/groups/commits/`` made before the check (so any expiry after the check
        comes after it), and the check is a read. Not fsynced: after a crash of the
        machine the committer is gone too, and its write can no longer land."""
        token = self._files.register_commit(group, member_id, generation, _now_ms())
        try:
            self.check_commit(group, member_id, generation)
        except BaseException:
            self.end_commit(token)
            raise
        return token

    def end_commit(self, token: str) -> None:
        """The commit is written or given up (no lock needed)."""
        self.forget_commits([token])

    def stale_commits(self, group: str) -> list[str]:
        """Tokens of commits in flight whose member left the group or whose generation is
        gone (their committer was paused or died mid-write): a fence must make them fail."""
        flights = self._files.commits_in_flight(group)
        if not flights:
            return []
        current = self.describe(group)
        if current is None:
            return [token for token, _, _ in flights]
        return [token for token, member_id, generation in flights if stale(current, member_id, generation)]

    def forget_commits(self, tokens: Sequence[str]) -> None:
        self._files.forget_commits(tokens)

    def check_commit(self, group: str, member_id: str | None, generation: int) -> None:
        """Raise FencedError unless this member may commit now. Only reads: a member past
        its timeout counts as gone even before someone removed it."""
        refusal = commit_refusal(group, self.describe(group), member_id, generation, _now_ms())
        if refusal is not None:
            raise FencedError(refusal)

    def read_in(self, tx: sqlite3.Connection, group: str) -> Group | None:
        """The group as seen inside the caller's (write) transaction ``tx`` (made with this
        cluster's metadata connection after :meth:`ensure_schema`)."""
        return self._read(tx, group)

    def ensure_schema(self) -> None:
        """Create the group tables if missing (never inside a transaction: it commits one).
        Write paths only."""
        self.metadata.ensure_schema("groups", _SCHEMA)

    def delete(self, group: str) -> None:
        with self._locked(group) as tx:
            current = self._read(tx, group)
            self._removed.extend((group, m.member_id) for m in (current.members if current else ()))
            tx.execute("DELETE FROM group_members WHERE group_id = ?", (group,))
            tx.execute("DELETE FROM consumer_groups WHERE group_id = ?", (group,))

    def fence_all(self, group: str) -> None:
        """Remove every member and bump the generation (an operator's forced reset)."""
        with self._locked(group) as tx:
            current = self._read(tx, group)
            if current is not None:
                self._remove(tx, group, [m.member_id for m in current.members], _now_ms())

    # -- the protocol's steps (inside a locked transaction) -----------------------------------

    def _ensure_group(self, tx: sqlite3.Connection, group: str, now: int) -> Group:
        tx.execute("INSERT OR IGNORE INTO consumer_groups VALUES (?, 0, ?, NULL, NULL, 0, '{}', ?)",
                   (group, EMPTY, now))
        current = self._read(tx, group)
        assert current is not None
        return current

    @staticmethod
    def _prepare_rebalance(tx: sqlite3.Connection, group: str, now: int) -> None:
        tx.execute("UPDATE consumer_groups SET state = ?, rebalance_started_ms = ?, updated_ms = ? "
                   "WHERE group_id = ? AND state != ?", (PREPARING, now, now, group, PREPARING))

    def _remove(self, tx: sqlite3.Connection, group: str, member_ids: Sequence[str], now: int) -> None:
        before = self._read(tx, group)
        if before is None:
            return
        after = without(before, member_ids, now)  # the one rule, which readers apply too (view)
        if after is before:
            return  # nobody to remove (e.g. a fenced query leaving): no rebalance
        tx.executemany("DELETE FROM group_members WHERE group_id = ? AND member_id = ?",
                       [(group, m) for m in member_ids])
        self._removed.extend((group, m) for m in member_ids)
        if (after.state, after.generation) != (before.state, before.generation):
            tx.execute("UPDATE consumer_groups SET state = ?, generation = ?, leader = ?, protocol = ?, "
                       "rebalance_started_ms = ?, updated_ms = ? WHERE group_id = ?",
                       (after.state, after.generation, after.leader, after.protocol,
                        after.rebalance_started_ms, now, group))
        if after.state == PREPARING:
            self._try_complete(tx, group)

    def _expire(self, tx: sqlite3.Connection, group: str, now: int) -> None:
        current = self._read(tx, group)
        if current is not None:
            self._remove(tx, group, [m.member_id for m in current.members if expired(m, current, now)], now)

    def _try_complete(self, tx: sqlite3.Connection, group: str) -> None:
        current = self._read(tx, group)
        if current is None or current.state != PREPARING or not current.members:
            return
        target = current.generation + 1
        if any(m.joined_generation != target for m in current.members):
            return
        counts = self._partition_counts(tx, {t for m in current.members for t in m.subscription})
        subscriptions = {m.member_id: [t for t in counts if subscribed(m.subscription, t)]
                         for m in current.members}
        assignor = ASSIGNORS[current.protocol or "range"]
        assignment = assignor(subscriptions, {t: counts[t] for t in counts
                                              if any(t in s for s in subscriptions.values())})
        tx.executemany("UPDATE group_members SET assignment = ? WHERE group_id = ? AND member_id = ?",
                       [(json.dumps(assignment[m]), group, m) for m in assignment])
        tx.execute("UPDATE consumer_groups SET generation = ?, state = ?, leader = ?, topics = ?, "
                   "updated_ms = ? WHERE group_id = ?",
                   (target, STABLE, current.members[0].member_id, json.dumps(counts, sort_keys=True),
                    _now_ms(), group))

    def _topics_changed(self, tx: sqlite3.Connection, group: Group) -> bool:
        """Did a subscribed topic appear, vanish or grow since the last assignment?"""
        wanted = self._partition_counts(tx, {t for m in group.members for t in m.subscription})
        return bool(json.loads(group.topics) != wanted)

    @staticmethod
    def _partition_counts(tx: sqlite3.Connection, subscription: set[str]) -> dict[str, int]:
        counts = dict(tx.execute("SELECT topic, COUNT(*) FROM partitions GROUP BY topic").fetchall())
        return {t: int(n) for t, n in sorted(counts.items())
                if any(matches(s, t) for s in subscription)}


def _insert_member(tx: sqlite3.Connection, group: str, member_id: str, spec: MemberSpec,
                   joined_generation: int, now: int) -> None:
    tx.execute(f"INSERT INTO group_members ({_MEMBER_COLUMNS}, group_id) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
               (member_id, spec.instance_id, spec.client_id, socket.gethostname(), os.getpid(), spec.kind,
                json.dumps(spec.subscription), joined_generation, "[]", spec.session_timeout_ms,
                spec.rebalance_timeout_ms, now, now, group))


"""Consumer groups of one cluster: committing and reading offsets, lag, describe, reset, delete.

The one place that writes the group offsets table. A commit is checked
before anything is written (a legal group name, see :mod:`kstream.group_names`;
topic and partition exist, offset between 0 and
the log end offset), then the table version it builds on is taken, then it
is fenced (the member and generation must be current, see
:mod:`kstream.groups.coordinator`: a file registers it, a read checks it),
and it is written as one Delta commit for all its partitions (atomic) against
that version. No lock and no metadata write: a committer paused anywhere in a
commit does not stop heartbeats, joins, rebalances or other commits. If
another commit changed the group's offsets meanwhile (a
concurrent member, or the fence written for a stale commit), Delta refuses
the write and the commit is checked and tried again; a committer that lost
its membership meanwhile gets FencedError then, and its offsets are never
written. A commit that carries an app transaction (app id, version) already
in the table, or that changes no offset, writes nothing: re-commits are
idempotent.

Offsets a transaction carries (``send_offsets_to_transaction``) are applied
by whoever finishes the transaction (:mod:`kstream.groups.transactional_offsets`), with
``force`` and an app transaction. Every other write of a group's offsets
(a commit, a reset, a delete) first finishes the decided ones for the group
(:func:`kstream.groups.transactional_offsets.roll_forward`); a read writes nothing and
sees them laid over the table (:mod:`kstream.groups.offsets_view`).

Lag is computed from the table and the log, the Burrow way: right even when
every consumer of the group is dead.

Committed offsets belong to one incarnation of their topic: rows of a
deleted topic read as absent everywhere (committed, lag, describe, the group
list, ``startingOffsets=group``), by the rule of
:mod:`kstream.groups.topic_incarnations`, and the group's next commit drops
them from the table.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pyarrow as pa
from deltalake.exceptions import CommitFailedError

from kstream.errors import (
    GroupBusyError,
    KStreamError,
    OffsetOutOfRangeError,
    PartitionNotFoundError,
)
from kstream.group_names import check_group_name
from kstream.groups.coordinator import Coordinator, Group, Member
from kstream.groups.offsets_table import FILE_SCHEMA, Offsets, OffsetsTable
from kstream.groups.offsets_view import current_offsets
from kstream.groups.topic_incarnations import TopicIncarnations
from kstream.groups.transactional_offsets import roll_forward, wait_stable
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.metadata import TopicInfo
from kstream.log.partition_bounds import PartitionBounds, bounds

_COMMIT_ATTEMPTS = 50  # concurrent commits of one group conflict; each conflict means one succeeded


@dataclass(frozen=True)
class OffsetCommit:
    """What a committer gives for one partition."""

    offset: int
    metadata: str | None = None
    leader_epoch: int | None = None


@dataclass(frozen=True)
class PartitionLag:
    topic: str
    partition: int
    committed: int | None  # None: the group never committed this partition
    log_start_offset: int
    high_watermark: int
    log_end_offset: int
    owner: str | None = None  # member id, when a live member has it assigned

    @property
    def lag(self) -> int | None:
        """High watermark minus committed offset: what the group can still read."""
        return None if self.committed is None else max(0, self.high_watermark - self.committed)


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str  # Empty / PreparingRebalance / Stable, or Dead (offsets only, no member rows)
    generation: int
    protocol: str | None
    members: tuple[Member, ...]
    partitions: tuple[PartitionLag, ...]
    # "consumer" once members have joined (kept while the group exists, Empty included, as
    # Kafka keeps a group's protocol type); "" for a group that only ever committed offsets
    # (Kafka's simple consumer group: assign() and commit)
    protocol_type: str = ""

    @property
    def total_lag(self) -> int:
        return sum(p.lag or 0 for p in self.partitions)


class ConsumerGroups:
    """Groups of one open cluster; cheap to create, safe to use from one thread at a time."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.coordinator = Coordinator(cluster)
        self.table = OffsetsTable(cluster.path, cluster.config["offsets.history.retention.ms"],
                                  cluster.metadata)
        self._seen_hw: dict[tuple[str, str, int], int] = {}
        self.incarnations = TopicIncarnations(cluster)  # which rows are of a topic that exists now
        self.identity = f"{socket.gethostname()}:{os.getpid()}"

    # -- committing -------------------------------------------------------------------

    def commit(self, group: str, offsets: Mapping[tuple[str, int], int | OffsetCommit], *,
               member_id: str | None = None, generation: int = -1,
               transaction: tuple[str, int] | None = None, force: bool = False,
               custom_metadata: Mapping[str, str] | None = None) -> int | None:
        """Commit ``offsets`` (next offset to read, per (topic, partition)) for ``group``.

        Returns the table version written, or None when nothing needed writing (an app
        transaction already committed, or no offset changed). Raises FencedError for a stale
        member/generation, and TopicNotFound/PartitionNotFound/OffsetOutOfRange for bad input;
        in every failure the table is unchanged."""
        check_group_name(group)
        checked = self.check_offsets(offsets)
        keys = list(checked)
        values = [c.offset for c in checked.values()]
        metadata = [c.metadata for c in checked.values()]
        epochs = [c.leader_epoch for c in checked.values()]
        n = len(keys)
        topic_ids = [self._topic(topic).topic_id for topic, _ in keys]
        if transaction is None:  # (a transaction's own offsets come from its finisher)
            roll_forward(self, group)  # a decided transaction's offsets land before this commit
        new = pa.table({
            "topic": [k[0] for k in keys], "partition": pa.array([k[1] for k in keys], pa.int32()),
            "offset": pa.array(values, pa.int64()), "leader_epoch": pa.array(epochs, pa.int32()),
            "metadata": pa.array(metadata, pa.string()), "generation": pa.array([generation] * n, pa.int32()),
            "member_id": pa.array([member_id] * n, pa.string()), "committer": [self.identity] * n,
            "commit_time": pa.array([dt.datetime.now(dt.UTC)] * n, pa.timestamp("us", tz="UTC")),
            "topic_id": pa.array(topic_ids, pa.string()),
        }, schema=FILE_SCHEMA)
        if not self.table.created:
            with self.coordinator.lock("\x00offsets-table"):  # one creator at a time
                self.table.ensure_created()
        for _ in range(_COMMIT_ATTEMPTS):
            token = None
            try:
                # The snapshot first, then the check: a fence for a member expired after the
                # check is written after this snapshot, so the write conflicts. No group lock:
                # a committer stopped here must not stop the others' commits and rebalances.
                snapshot = self.table.snapshot()
                if not force:
                    token = self.coordinator.begin_commit(group, member_id, generation)
                if snapshot is not None and transaction is not None:
                    done = snapshot.transaction_version(transaction[0])
                    if done is not None and done >= transaction[1]:
                        return None
                current = self.table.rows(group, snapshot=snapshot)
                old = dict(zip(zip(current["topic"].to_pylist(), current["partition"].to_pylist(), strict=True),
                               zip(current["offset"].to_pylist(), current["metadata"].to_pylist(),
                                   current["topic_id"].to_pylist(), strict=True),
                               strict=True))
                if transaction is None and all(old.get(k) == (o, m, t) for k, o, m, t
                                               in zip(keys, values, metadata, topic_ids, strict=True)):
                    return None
                replaced = set(keys)
                # Rows of a deleted topic's incarnation go with this commit (cleanup; reads
                # ignore them anyway).
                kept = current.filter(pa.array([
                    k not in replaced and self._of_current_topic(k[0], topic_id, commit_time)
                    for k, topic_id, commit_time in zip(old, current["topic_id"].to_pylist(),
                                                        current["commit_time"].to_pylist(), strict=True)],
                    pa.bool_()))
                return self.table.write(group, pa.concat_tables([kept, new]), transaction, custom_metadata,
                                        snapshot=snapshot)
            except CommitFailedError:
                continue  # the group's offsets changed since the check: check and build again
            finally:
                if token is not None:
                    self.coordinator.end_commit(token)
        raise KStreamError(f"the commit for group {group!r} conflicted with other commits "
                           f"{_COMMIT_ATTEMPTS} times in a row; nothing was written, try again")

    def check_offsets(self, offsets: Mapping[tuple[str, int], int | OffsetCommit | tuple[int, str | None, int | None]]
                      ) -> dict[tuple[str, int], OffsetCommit]:
        """Validate offsets to commit (topic and partition exist, 0 <= offset <= log end offset);
        returns them with the partition's leader epoch where none was given. Writes nothing."""
        topics: dict[str, TopicInfo] = {}
        checked = {}
        for (topic, partition), given in offsets.items():
            if isinstance(given, tuple):
                given = OffsetCommit(int(given[0]), given[1], given[2])
            commit = given if isinstance(given, OffsetCommit) else OffsetCommit(int(given))
            info = topics.get(topic) or topics.setdefault(topic, self._topic(topic))
            epoch = self._check_offset(info, partition, commit.offset)
            checked[(topic, partition)] = OffsetCommit(
                commit.offset, commit.metadata, commit.leader_epoch if commit.leader_epoch is not None else epoch)
        return checked

    def _fence_stale_commits(self, group: str) -> None:
        """Make commits whose committer lost the group mid-write fail: rewrite the group's
        offsets, so their write (made against an older version) conflicts. Runs before the
        group's offsets are read to start from, so a stale write can never land after."""
        stale = self.coordinator.stale_commits(group)
        if not stale:
            return
        for _ in range(_COMMIT_ATTEMPTS):
            snapshot = self.table.snapshot()
            try:
                self.table.write(group, self.table.rows(group, snapshot=snapshot),
                                 custom_metadata={"kstream.operation": "fence"}, snapshot=snapshot)
                break
            except CommitFailedError:
                continue  # someone committed meanwhile: that is a fence too, but be sure
        self.coordinator.forget_commits(stale)

    def _topic(self, name: str) -> TopicInfo:
        """Topic metadata, cached until the metadata database changes."""
        return self.incarnations.topic(name)

    def _of_current_topic(self, topic: str, topic_id: str | None, commit_time: dt.datetime | None) -> bool:
        """Is a row for the topic as it exists now (not for a deleted incarnation of it)?"""
        return self.incarnations.is_current(topic, topic_id, commit_time)

    def _current(self, rows: Offsets) -> Offsets:
        """``rows`` without those of deleted topic incarnations."""
        return {key: row for key, row in rows.items()
                if self._of_current_topic(row.topic, row.topic_id, row.commit_time)}

    def _check_offset(self, info: TopicInfo, partition: int, offset: int) -> int:
        """Validate one commit; returns the partition's current leader epoch."""
        topic = info.name
        if not 0 <= partition < info.num_partitions:
            raise PartitionNotFoundError(
                f"topic {topic!r} has partitions 0..{info.num_partitions - 1}; cannot commit an "
                f"offset for partition {partition}")
        if offset < 0:
            raise OffsetOutOfRangeError(f"cannot commit offset {offset} for {topic}-{partition}: "
                                        "offsets are >= 0 (the next offset to read)")
        if offset > self._seen_hw.get((topic, info.topic_id, partition), -1):
            end = self._bounds(info, partition).log_end_offset
            if offset > end:
                raise OffsetOutOfRangeError(
                    f"cannot commit offset {offset} for {topic}-{partition}: the log ends at "
                    f"{end} (a committed offset is the next offset to read, at most the log "
                    "end offset)")
        return info.partitions[partition].leader_epoch

    def _bounds(self, info: TopicInfo, partition: int) -> PartitionBounds:
        """The partition's bounds (the engine's: a HW a power loss took is rebuilt there, so
        lag is never shown as 0 for a partition full of records). Reads only."""
        found = bounds(self.cluster, info, partition)
        self._seen_hw[(info.name, info.topic_id, partition)] = found.high_watermark  # commits up to it need no re-read
        return found

    def ends(self, topic: str, partition: int) -> tuple[int, int, int]:
        """(log start offset, high watermark, log end offset) of a partition's leader."""
        found = self._bounds(self._topic(topic), partition)
        return found.log_start_offset, found.high_watermark, found.log_end_offset

    # -- reading ----------------------------------------------------------------------

    def committed(self, group: str, version: int | None = None,
                  timestamp: dt.datetime | None = None, *, require_stable: bool = True) -> Offsets:
        """The group's committed offsets now, at a table version, or as of a time. Writes
        nothing. The current offsets include those of decided transactions not applied yet
        (:mod:`kstream.groups.offsets_view`); with ``require_stable`` (Kafka's name; what a
        consumer starting from them needs) the open transactions that may still commit
        offsets for the group are waited for first (:func:`kstream.groups.transactional_offsets.wait_stable`).
        Rows of a deleted topic incarnation are left out (see the module docstring), in
        history reads too: an old version's offsets are never applied to a topic created since."""
        check_group_name(group)
        if version is None and timestamp is None:
            if require_stable:
                wait_stable(self, group)
            return self._current(self._view(group))
        return self._current(self.table.read(group, version, timestamp))

    def start_offsets(self, group: str) -> Offsets:
        """What a member that got its assignment starts from: :meth:`committed` (stable),
        after fencing the commits in flight of members that left (a write of the table
        only when there are such: a member is not a reader, it writes its membership)."""
        check_group_name(group)
        wait_stable(self, group)
        self._fence_stale_commits(group)
        return self._current(self._view(group))

    def _view(self, group: str) -> Offsets:
        return current_offsets(self.table, self.cluster.metadata, group, self.incarnations.topic_id)

    def list_groups(self) -> list[str]:
        """Groups with member rows, or with committed offsets of a topic that exists now. As
        in Kafka, a group whose offsets went with their topic and that has no members is
        gone: :meth:`describe` calls it Dead, and it is not listed."""
        members = set(self.coordinator.list_groups())
        with_offsets = {group for group in self.table.groups() if group not in members
                        and self._has_current_offsets(group)}
        return sorted(members | with_offsets)

    def exists(self, group: str) -> bool:
        """Would :meth:`list_groups` list ``group``? (Reads that group only.)"""
        return self.coordinator.describe(group) is not None or self._has_current_offsets(group)

    def _has_current_offsets(self, group: str) -> bool:
        return any(self._of_current_topic(row["topic"], row["topic_id"], row["commit_time"])
                   for row in self.table.rows(group).select(["topic", "topic_id", "commit_time"]).to_pylist())

    def lag(self, group: str, topics: Iterable[str] | None = None) -> list[PartitionLag]:
        """Per partition the group committed (or, with ``topics``, every partition of those)."""
        # Decided transactions' offsets laid over the table: never half a transaction, no write.
        committed = self._current(self._view(check_group_name(group)))
        keys = set(committed)
        for topic in topics or ():
            keys |= {(topic, p) for p in range(self._topic(topic).num_partitions)}
        existing = set(self.cluster.list_topics())
        current = self.coordinator.view(group)  # an expired member owns nothing (written by no reader)
        owners = {tp: m.member_id for m in (current.members if current else ()) for tp in m.assignment}
        result = []
        for topic, partition in sorted(keys):
            if topic not in existing:
                continue
            start, hw, end = self.ends(topic, partition)
            row = committed.get((topic, partition))
            result.append(PartitionLag(topic, partition, row.offset if row else None, start, hw,
                                       end, owners.get((topic, partition))))
        return result

    def describe(self, group: str) -> GroupDescription:
        """State, members and lag as every reader shows them: a member whose process is gone or
        whose session timed out is left out, the state what its removal will make it
        (:meth:`Coordinator.view`); nothing is written."""
        current = self.coordinator.view(check_group_name(group))
        subscribed = sorted({t for m in (current.members if current else ()) for t, _ in m.assignment})
        partitions = tuple(self.lag(group, subscribed))
        if current is None:
            state = "Dead" if not partitions else "Empty"
            return GroupDescription(group, state, -1, None, (), partitions)
        return GroupDescription(group, current.state, current.generation, current.protocol,
                                current.members, partitions, protocol_type="consumer")

    # -- operator actions -------------------------------------------------------------

    def _refuse_if_active(self, group: str, action: str, force: bool) -> Group | None:
        # A writer: it removes the expired members first (they are not active, and a stopped
        # one must not come back over what this action writes).
        current = self.coordinator.expire(group)
        if current is not None and current.members and not force:
            raise GroupBusyError(
                f"group {group!r} has {len(current.members)} active member(s) "
                f"({', '.join(m.member_id for m in current.members)}); stop them before you "
                f"{action}, or force it (--force): forcing fences them")
        return current

    def reset_offsets(self, group: str, offsets: Mapping[tuple[str, int], int],
                      force: bool = False) -> int | None:
        """Set the group's offsets (an operator's reset); refused while members are active."""
        check_group_name(group)  # before fencing anyone
        current = self._refuse_if_active(group, "reset its offsets", force)
        roll_forward(self, group)  # a decided transaction's offsets land before the reset, not after
        if current is not None and current.members:
            self.coordinator.fence_all(group)
        return self.commit(group, offsets, force=True,
                           custom_metadata={"kstream.operation": "reset-offsets"})

    def delete(self, group: str, force: bool = False) -> None:
        """Forget the group: its member rows and its offsets (history stays in old versions)."""
        check_group_name(group)
        self._refuse_if_active(group, "delete it", force)
        roll_forward(self, group)
        self.coordinator.delete(group)
        if group in self.table.groups():
            with self.coordinator.lock(group):
                self.table.write(group, [], custom_metadata={"kstream.operation": "delete-group"})

    def recreate_offsets_table(self) -> str:
        """Replace a lost or unreadable offsets table by an empty one, the old one moved aside
        (see :meth:`OffsetsTable.recreate`); where it went. Every group then has no committed
        offsets: its consumers start from ``auto.offset.reset``."""
        with self.coordinator.lock("\x00offsets-table"):  # no commit creates one meanwhile
            return self.table.recreate()

    def close(self) -> None:
        """Holds no file open between calls (the bounds are read afresh each time); kept so
        callers close what they open."""


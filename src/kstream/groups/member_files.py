"""The group coordinator's files beside the database: members' heartbeats and commits in flight.

Under ``<cluster>/groups/``:

- ``heartbeats/<group hash>-<member hash>``: a live consumer member's liveness is
  the file's mtime, touched by its heartbeat thread (``os.utime``: no database
  write, see :mod:`kstream.groups.coordinator` for why). Created before the
  member's row exists, removed once a transaction that removed the member
  committed.
- ``commits/<group hash>-<uuid>``: one file per offset commit in flight, a JSON
  record of its group, member id and generation, made before the commit is
  checked and removed when it is written or given up.

Names are sha1 digests cut to ``_HASH_CHARS`` hex characters, so a file name is
49 characters whatever the group and member names. None of these files is
fsynced: liveness and commits in flight are not durable state (after a crash of
the machine the members and committers are gone too). Safe from any thread or
process: each call is one file operation, and a file gone meanwhile is no error.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Iterable, Sequence

HEARTBEATS_DIR = "heartbeats"  # under <cluster>/groups/: one file per live consumer member
COMMITS_DIR = "commits"  # under <cluster>/groups/: one file per offset commit in flight
_HASH_CHARS = 24  # of a sha1 hex digest: a file name of 49 characters whatever the names

# An offset commit in flight: (token, member id or None, generation).
Flight = tuple[str, str | None, int]


def digest(name: str) -> str:
    """The hashed form of a group or member name in file names."""
    return hashlib.sha1(name.encode()).hexdigest()[:_HASH_CHARS]


class MemberFiles:
    """The heartbeat and commit files of the groups of one cluster (``groups_dir``)."""

    __slots__ = ("_commit_dir", "_heartbeat_dir")

    def __init__(self, groups_dir: str):
        self._heartbeat_dir = os.path.join(groups_dir, HEARTBEATS_DIR)
        self._commit_dir = os.path.join(groups_dir, COMMITS_DIR)

    # -- heartbeats (liveness, not durable state: never fsynced) --------------------

    def _heartbeat_path(self, group: str, member_id: str) -> str:
        return os.path.join(self._heartbeat_dir, f"{digest(group)}-{digest(member_id)}")

    def create_heartbeat(self, group: str, member_id: str) -> None:
        """Before the member's row exists, so its liveness never reads older than its join."""
        os.makedirs(self._heartbeat_dir, exist_ok=True)
        os.close(os.open(self._heartbeat_path(group, member_id), os.O_WRONLY | os.O_CREAT, 0o644))

    def touch_heartbeat(self, group: str, member_id: str) -> None:
        """The member is alive now (nothing when its file is gone: it was removed)."""
        try:
            os.utime(self._heartbeat_path(group, member_id))
        except FileNotFoundError:
            pass  # removed with the member (expired): the group read says so

    def last_heartbeat_ms(self, group: str, member_id: str, row_ms: int) -> int:
        """The member's last heartbeat: its file's mtime, at least ``row_ms`` (its row's)."""
        try:
            return max(row_ms, os.stat(self._heartbeat_path(group, member_id)).st_mtime_ns // 1_000_000)
        except FileNotFoundError:  # joined by an older kstream, or just removed
            return row_ms

    def remove_heartbeats(self, members: Iterable[tuple[str, str]]) -> None:
        """Remove the heartbeat files of these (group, member id)s."""
        for group, member_id in members:
            try:
                os.unlink(self._heartbeat_path(group, member_id))
            except FileNotFoundError:
                pass

    # -- offset commits in flight ----------------------------------------------------

    def register_commit(self, group: str, member_id: str | None, generation: int, started_ms: int) -> str:
        """Record a commit as in flight; its token (for :meth:`forget_commits`)."""
        token = f"{digest(group)}-{uuid.uuid4().hex}"
        os.makedirs(self._commit_dir, exist_ok=True)
        record = json.dumps({"group": group, "member_id": member_id, "generation": generation,
                             "started_ms": started_ms}).encode()
        fd = os.open(os.path.join(self._commit_dir, token), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, record)
        finally:
            os.close(fd)
        return token

    def commits_in_flight(self, group: str) -> list[Flight]:
        """The group's commits in flight whose record is complete (one still being written has
        not been checked yet, so it cannot be stale)."""
        prefix = f"{digest(group)}-"
        try:
            names = [n for n in os.listdir(self._commit_dir) if n.startswith(prefix)]
        except FileNotFoundError:  # nobody of this cluster has committed yet
            return []
        flights = []
        for name in names:
            try:
                with open(os.path.join(self._commit_dir, name), "rb") as f:
                    record = json.loads(f.read())
            except FileNotFoundError:
                continue  # ended meanwhile
            except ValueError:
                continue  # still being written: its check has not run, so it is not stale yet
            if record.get("group") == group:
                flights.append((name, record.get("member_id"), int(record.get("generation", -1))))
        return flights

    def forget_commits(self, tokens: Sequence[str]) -> None:
        """The commits are written or given up."""
        for token in tokens:
            try:
                os.unlink(os.path.join(self._commit_dir, token))
            except FileNotFoundError:
                pass

"""A group's recent commits, from the Delta history of the group offsets table.

Every commit of a group is one Delta version that replaces the group's
partition with one new Parquet file holding all its offsets
(:mod:`kstream.groups.offsets_table`). So "the group's last N commits" is:
walk the commit files ``_delta_log/<version>.json`` from the newest back
(newline-delimited JSON actions, the Delta protocol), keep the versions whose
``commitInfo`` names the group (``kstream.group``) and that ``add`` a file for
it, and read the ``topic``/``partition``/``offset`` columns of those files.
One walk serves any number of groups (:func:`recent_commits`), which is what
the groups page needs; delta-rs's ``history()`` has no ``add`` paths and a
time-travel load per version costs a log replay each.

Skipped: fence commits (``kstream.operation=fence``: the offsets rewritten
unchanged to make a stale commit conflict; not the consumer's commit) and
deletes (no ``add``). Bounds: at most ``max_versions`` commit files are read
(:data:`MAX_VERSIONS` at most) and ``per_group`` commits kept per group. History
ends where retention removed the commit files or the data files
(``offsets.history.retention.ms``): the walk stops there, quietly, since that
is the history's start, not an error.

Reads only; safe from any thread. Commit files and data files are write-once, so
what was parsed from them is kept across calls in two bounded
:class:`~kstream.tools.monitor.file_memo.FileMemo` (keyed on each file's identity: a file
gone or replaced is read again, never answered from memory), so a console reloading
the groups page re-reads only the commits made since.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from urllib.parse import unquote

import pyarrow.parquet as pq

from kstream.errors import ConfigError
from kstream.groups.offsets_table import TABLE_DIR
from kstream.tools.monitor.file_memo import FileMemo

MAX_VERSIONS = 100_000
DEFAULT_VERSIONS = 2_000
_COMMIT_FILE = re.compile(r"^(\d{20})\.json$")
Current = Callable[[str, "str | None", "dt.datetime | None"], bool]
"""Is a row (topic, topic id, commit time) of a topic as it exists now?"""


@dataclass(frozen=True)
class GroupCommit:
    """One commit of a group: the Delta version, its time and every offset it stored."""

    version: int
    ts_ms: int
    offsets: Mapping[tuple[str, int], int]  # read-only (shared by every caller of the memo)


def recent_commits(cluster_path: str, groups: Collection[str] | None = None, *,
                   per_group: int, max_versions: int = DEFAULT_VERSIONS, current: Current | None = None
                   ) -> dict[str, list[GroupCommit]]:
    """The last ``per_group`` commits of each group (of ``groups``; None: every group met),
    oldest first, found among the newest ``max_versions`` table versions. With ``current``
    (:meth:`kstream.groups.topic_incarnations.TopicIncarnations.is_current`), a commit's
    offsets leave out the rows it rejects: those of deleted topics."""
    if not 1 <= max_versions <= MAX_VERSIONS:
        raise ConfigError(f"max_versions={max_versions}: must be from 1 to {MAX_VERSIONS}")
    if per_group < 1:
        raise ConfigError(f"per_group={per_group}: must be 1 or more")
    table = os.path.join(cluster_path, TABLE_DIR)
    log_dir = os.path.join(table, "_delta_log")
    try:
        versions = sorted((int(m.group(1)) for name in os.listdir(log_dir)
                           if (m := _COMMIT_FILE.match(name))), reverse=True)
    except FileNotFoundError:
        return {}  # no group ever committed in this cluster
    found: dict[str, list[tuple[int, int, str]]] = {}
    wanted = None if groups is None else set(groups)
    for version in versions[:max_versions]:
        entry = _read_commit(os.path.join(log_dir, f"{version:020d}.json"))
        if entry is None:
            break  # removed by log retention: older history is gone
        group, ts_ms, path = entry
        if group is None or path is None or (wanted is not None and group not in wanted):
            continue
        kept = found.setdefault(group, [])
        if len(kept) < per_group:
            kept.append((version, ts_ms, path))
        if wanted is not None and all(len(found.get(g, ())) >= per_group for g in wanted):
            break
    result: dict[str, list[GroupCommit]] = {}
    for group, entries in found.items():
        commits = []
        for version, ts_ms, path in entries:  # newest first
            offsets = _read_offsets(os.path.join(table, path), current)
            if offsets is None:
                break  # vacuumed: history starts after it
            commits.append(GroupCommit(version, ts_ms, offsets))
        result[group] = commits[::-1]
    return result


def _read_commit(path: str) -> tuple[str | None, int, str | None] | None:
    """(group, commit time, path of the group's added file) of one commit file; None when
    the file is gone. Group or path is None for commits that are not a group's commit."""
    try:
        return _COMMITS.get(path)
    except FileNotFoundError:
        return None


def _parse_commit(path: str) -> tuple[str | None, int, str | None]:
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    group, ts_ms, added = None, 0, None
    fence = False
    for line in lines:
        if not line.strip():
            continue
        action = json.loads(line)
        info = action.get("commitInfo")
        if info is not None:
            group = info.get("kstream.group")
            ts_ms = int(info.get("timestamp", 0))
            fence = info.get("kstream.operation") == "fence"
        add = action.get("add")
        if add is not None:
            added = add["path"]
    if fence:
        return None, ts_ms, None
    return group, ts_ms, None if added is None else unquote(added)


def _read_offsets(path: str, current: Current | None) -> Mapping[tuple[str, int], int] | None:
    """The offsets a data file stored (those ``current`` keeps); None when vacuumed."""
    try:
        rows = _OFFSETS.get(path)
    except FileNotFoundError:
        return None  # vacuumed
    return MappingProxyType({(topic, partition): offset for topic, partition, offset, topic_id, commit_time in rows
                             if current is None or current(topic, topic_id, commit_time)})


_Row = tuple[str, int, int, "str | None", "dt.datetime | None"]


def _parse_offsets(path: str) -> tuple[_Row, ...]:
    """(topic, partition, offset, topic id, commit time) of each row; a file written before
    topic ids were recorded has no topic_id column (read as None)."""
    names = pq.read_schema(path).names
    columns = ["topic", "partition", "offset", "commit_time", *(["topic_id"] if "topic_id" in names else [])]
    rows = pq.read_table(path, columns=columns, use_threads=False).to_pydict()
    ids = rows.get("topic_id", [None] * len(rows["topic"]))
    return tuple((t, int(p), int(o), i, c) for t, p, o, i, c in zip(rows["topic"], rows["partition"], rows["offset"],
                                                                     ids, rows["commit_time"], strict=True))


MAX_MEMO_FILES = 10_000
"""Commit files and data files whose contents are kept (each memo): 1,000 groups x
Burrow's window of 10 commits fit. A commit entry is a few hundred bytes; an offsets
entry is about 100 bytes per partition the group committed."""
_COMMITS: FileMemo[tuple[str | None, int, str | None]] = FileMemo(_parse_commit, MAX_MEMO_FILES)
_OFFSETS: FileMemo[tuple[_Row, ...]] = FileMemo(_parse_offsets, MAX_MEMO_FILES)

"""A group's lag per partition with its Burrow status, and a summary of every group.

Figures per partition (:class:`PartitionLagStatus`):

- ``committed``, ``log_end`` (the log end offset), ``high_watermark`` and
  ``lag`` = high watermark - committed, the same numbers as
  ``kstream groups describe`` (both come from
  :meth:`kstream.groups.ConsumerGroups.describe`; with acks=all the high
  watermark is the log end a consumer can read to);
- ``lag_seconds``: the age of the oldest record the group has not consumed,
  now - timestamp of the record at ``committed`` (0 when lag is 0; None when
  that record is gone, e.g. deleted by retention, or never committed);
- ``status``/``reason``: :func:`kstream.tools.monitor.burrow.evaluate` over the last
  ``window`` commits, read from the offsets table's Delta history
  (:mod:`kstream.tools.monitor.commit_history`). The log end *at each commit* is the
  ``high_watermark`` sample of ``__kstream_metrics`` nearest in time (within
  :data:`NEAREST_SAMPLE_MS`); without one (no sampler ran) it is the current
  high watermark, which overstates past lags: then WARN cannot be told from OK
  (the rule needs lag at commit time) and ``log_ends_sampled`` says how many
  commits had a sample.

The evaluation reads, and never writes anything the CLI's ``groups describe``
would not: nothing (decided transactions that carry offsets are laid over the
table in its view, as every read of a group's offsets does). Cost: one metadata read and a few stat/pread calls
per partition, one walk of the recent Delta commit files for all groups, one
scan of the high watermark samples; each partition's log start and end are read once
per evaluation however many groups consume it (:class:`SharedReadsGroups`).
"""

from __future__ import annotations

import bisect
import datetime as dt
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from kstream.errors import KStreamError
from kstream.groups.coordinator import Member
from kstream.groups.offsets_table import CommittedOffset, Offsets, OffsetsTable, read_data_file
from kstream.groups.service import ConsumerGroups, GroupDescription
from kstream.log.cluster.cluster import Cluster
from kstream.log.partition_bounds import bounds
from kstream.log.transactions.store import TransactionStore
from kstream.tools.monitor import history
from kstream.tools.monitor.burrow import (
    DEFAULT_MIN_DISTANCE_MS,
    DEFAULT_WINDOW,
    Commit,
    PartitionStatus,
    evaluate,
    group_status,
)
from kstream.tools.monitor.commit_history import GroupCommit, recent_commits
from kstream.tools.monitor.file_memo import FileMemo
from kstream.tools.monitor.partition_reads import PartitionReads

NEAREST_SAMPLE_MS = 10 * 60 * 1000
"""A high watermark sample further than this from a commit is not its log end."""
MAX_GROUPS = 10_000


@dataclass(frozen=True)
class PartitionLagStatus:
    """One partition of a group: where it is, how far behind, and its Burrow status."""

    topic: str
    partition: int
    committed: int | None
    log_start_offset: int
    high_watermark: int
    log_end: int
    lag: int | None
    lag_seconds: float | None
    status: PartitionStatus
    reason: str
    commits: tuple[Commit, ...]  # the evaluation window, oldest first
    log_ends_sampled: int  # commits whose log end came from a metrics sample
    owner: str | None = None


@dataclass(frozen=True)
class GroupLag:
    """A group's partitions at ``now_ms``; ``status`` is Burrow's group status."""

    group: str
    state: str
    members: int
    partitions: tuple[PartitionLagStatus, ...]
    status: PartitionStatus
    total_lag: int
    now_ms: int
    generation: int = -1
    member_list: tuple[Member, ...] = ()  # ids, hosts, assignments: the page needs no 2nd read


@dataclass(frozen=True)
class GroupSummary:
    """One line of the groups list."""

    group: str
    state: str
    members: int
    partitions: int
    total_lag: int
    max_lag_seconds: float | None
    status: PartitionStatus


def group_lag(cluster_path: str, group: str, now_ms: int | None = None, *,
              window: int = DEFAULT_WINDOW, min_distance_ms: int = DEFAULT_MIN_DISTANCE_MS) -> GroupLag:
    """``group``'s lag and status per partition (see the module docstring); ``window`` and
    ``min_distance_ms`` are :func:`~kstream.tools.monitor.burrow.evaluate`'s.

    Raises ClusterNotFoundError (no cluster at the path; nothing is created) and the
    CLI's errors for a bad group name."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    cluster = Cluster.open(cluster_path)
    reads = PartitionReads(cluster)
    service = SharedReadsGroups(cluster, reads)
    try:
        description = service.describe(group)
        commits = recent_commits(cluster_path, [group], per_group=window,
                                 current=service.incarnations.is_current).get(group, [])
        ends = _sampled_ends(cluster_path, commits, now_ms)
        return _group_lag(reads, description, commits, ends, now_ms, window, min_distance_ms)
    finally:
        service.close()
        reads.close()
        cluster.close()


def groups_summary(cluster_path: str, now_ms: int | None = None, *,
                   window: int = DEFAULT_WINDOW, min_distance_ms: int = DEFAULT_MIN_DISTANCE_MS
                   ) -> list[GroupSummary]:
    """Every group of the cluster (members or offsets), sorted by name, with its state,
    member count, total lag, worst lag_seconds and Burrow status."""
    cluster = Cluster.open(cluster_path)
    try:
        result = []
        for lag in all_groups_lag(cluster, now_ms, window=window, min_distance_ms=min_distance_ms):
            ages = [p.lag_seconds for p in lag.partitions if p.lag_seconds is not None]
            result.append(GroupSummary(lag.group, lag.state, lag.members, len(lag.partitions),
                                       lag.total_lag, max(ages) if ages else None, lag.status))
        return result
    finally:
        cluster.close()


def all_groups_lag(cluster: Cluster, now_ms: int | None = None, *, window: int = DEFAULT_WINDOW,
                   min_distance_ms: int = DEFAULT_MIN_DISTANCE_MS) -> list[GroupLag]:
    """:func:`group_lag` of every group of the open ``cluster``, sorted by name, in one
    evaluation: one walk of the commit history, one scan of the high watermark samples,
    each partition's log read once (:class:`SharedReadsGroups`). At most
    :data:`MAX_GROUPS` groups (more raises, naming the limit)."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    reads = PartitionReads(cluster)
    service = SharedReadsGroups(cluster, reads)
    try:
        names = service.list_groups()
        if len(names) > MAX_GROUPS:
            raise KStreamError(f"{len(names)} groups; an evaluation handles at most {MAX_GROUPS}")
        history_by_group = recent_commits(cluster.path, names, per_group=window,
                                          current=service.incarnations.is_current)
        ends = _sampled_ends(cluster.path, [c for cs in history_by_group.values() for c in cs],
                             now_ms)
        return [_group_lag(reads, service.describe(name), history_by_group.get(name, []), ends,
                           now_ms, window, min_distance_ms) for name in names]
    finally:
        service.close()
        reads.close()


# -- one group -----------------------------------------------------------------------

_Ends = Mapping[tuple[str, int], tuple[list[int], list[float]]]


def _group_lag(reads: PartitionReads, description: GroupDescription, commits: Sequence[GroupCommit],
               ends: _Ends, now_ms: int, window: int, min_distance_ms: int) -> GroupLag:
    partitions = []
    for p in description.partitions:
        key = (p.topic, p.partition)
        history_points = [(c.ts_ms, c.offsets[key]) for c in commits if key in c.offsets]
        burrow_commits, sampled = [], 0
        for ts_ms, offset in history_points:
            end = _nearest(ends.get(key), ts_ms)
            sampled += end is not None
            burrow_commits.append(Commit(ts_ms, offset, p.high_watermark if end is None else end))
        # Commit times are the committers' clocks; "now" is never before them.
        evaluated_at = max([now_ms, *(t for t, _ in history_points)])
        result = evaluate(burrow_commits, evaluated_at, p.high_watermark, window,
                          min_distance_ms=min_distance_ms)
        partitions.append(PartitionLagStatus(
            p.topic, p.partition, p.committed, p.log_start_offset, p.high_watermark,
            p.log_end_offset, p.lag, _lag_seconds(reads, p.topic, p.partition, p.committed,
                                                  p.lag, now_ms),
            result.status, result.reason, result.window, sampled, p.owner))
    return GroupLag(description.group_id, description.state, len(description.members),
                    tuple(partitions), group_status(p.status for p in partitions),
                    description.total_lag, now_ms, description.generation, description.members)


def _lag_seconds(reads: PartitionReads, topic: str, partition: int, committed: int | None,
                 lag: int | None, now_ms: int) -> float | None:
    if committed is None or lag is None:
        return None
    if lag == 0:
        return 0.0
    ts_ms = reads.timestamp(topic, partition, committed)
    return None if ts_ms is None else max(0.0, (now_ms - ts_ms) / 1000.0)


class SharedReadsGroups(ConsumerGroups):
    """The groups service for one evaluation of many groups: ``ends`` (log start, high
    watermark, log end; what ``describe`` shows per partition) come from one
    :class:`~kstream.tools.monitor.partition_reads.PartitionReads`, so a partition's log is read
    once per page, not once per group that consumes it, and every group of the page is
    measured against the same high watermark. Same figures as the CLI's ``describe`` (the
    engine's :func:`~kstream.log.partition_bounds.bounds` on those reads); a snapshot: make one per
    evaluation and close it. Offsets data files are read through :data:`DATA_FILES`."""

    def __init__(self, cluster: Cluster, reads: PartitionReads):
        super().__init__(cluster)
        self._reads = reads
        self._ends: dict[tuple[str, int], tuple[int, int, int]] = {}  # every group sees one HW
        self._store = TransactionStore.for_cluster(cluster)
        self.table = MemoOffsetsTable(cluster.path, cluster.config["offsets.history.retention.ms"],
                                      cluster.metadata)

    def ends(self, topic: str, partition: int) -> tuple[int, int, int]:
        key = (topic, partition)
        found = self._ends.get(key)
        if found is None:
            found_bounds = bounds(self.cluster, self._reads.topic(topic), partition, store=self._store,
                                  log_offsets=self._reads.offsets(topic, partition))
            found = self._ends[key] = (found_bounds.log_start_offset, found_bounds.high_watermark,
                                       found_bounds.log_end_offset)
        return found


class MemoOffsetsTable(OffsetsTable):
    """The offsets table, reading each data file through :data:`DATA_FILES` (data files are
    written once and named by a UUID, so a file's Arrow table, immutable itself, can be
    reused while the file is the same: see :mod:`kstream.tools.monitor.file_memo`), and a group's
    current offsets from each file's rows converted once into frozen ``CommittedOffset``
    objects (:data:`DATA_ROWS`; the conversion cost ~7 us a row on every page)."""

    def _read_file(self, path: str) -> pa.Table:
        return DATA_FILES.get(path)

    def read(self, group: str, version: int | None = None,
             timestamp: dt.datetime | None = None) -> Offsets:
        if version is not None or timestamp is not None:
            return super().read(group, version, timestamp)
        table = self._at(None, None)
        rows: Offsets = {}
        if table is None:
            return rows
        for path in self._group_files(table).get(group, ()):  # (files in the order read() takes)
            try:
                parsed = DATA_ROWS.get(path)
            except FileNotFoundError:  # vacuumed meanwhile: the table's own read and its error
                return super().read(group)
            for committed in parsed:
                rows[(committed.topic, committed.partition)] = committed
        return rows


def _committed_offsets(path: str) -> tuple[CommittedOffset, ...]:
    return tuple(CommittedOffset(**row) for row in read_data_file(path).to_pylist())


MAX_MEMO_DATA_FILES = 2_000
"""Offsets data files kept (a group's current file each, so 2,000 groups; one file is
about 100 bytes per partition the group committed)."""
DATA_FILES: FileMemo[pa.Table] = FileMemo(read_data_file, MAX_MEMO_DATA_FILES)
MAX_MEMO_ROWS = 100_000
"""Rows kept as ``CommittedOffset`` objects (about 0.5 KB each: 50 MB at most)."""
DATA_ROWS: FileMemo[tuple[CommittedOffset, ...]] = FileMemo(
    _committed_offsets, MAX_MEMO_DATA_FILES, weigh=len, max_weight=MAX_MEMO_ROWS)


def record_timestamp(cluster: Cluster, topic: str, partition: int, offset: int) -> int | None:
    """The timestamp (ms) of the record at ``offset`` (see :meth:`PartitionReads.timestamp`)."""
    with PartitionReads(cluster) as reads:
        return reads.timestamp(topic, partition, offset)


# -- log ends at past commits ---------------------------------------------------------

def _sampled_ends(cluster_path: str, commits: Sequence[GroupCommit], now_ms: int) -> _Ends:
    """High watermark samples per partition, sorted by time, around the commits' times."""
    if not commits:
        return {}
    since = min(c.ts_ms for c in commits) - NEAREST_SAMPLE_MS
    until = min(now_ms, max(c.ts_ms for c in commits) + NEAREST_SAMPLE_MS)
    table = history.scan(cluster_path, "high_watermark", since, until)
    if table is None or table.num_rows == 0:
        return {}
    rows = table.to_pydict()
    ends: dict[tuple[str, int], tuple[list[int], list[float]]] = {}
    for name, topic, partition, group, ts_ms, value in zip(
            rows["name"], rows["topic_name"], rows["partition_number"], rows["group"],
            rows["ts_ms"], rows["value"], strict=True):
        if name != "high_watermark" or topic is None or partition is None or group is not None:
            continue
        times, values = ends.setdefault((topic, partition), ([], []))
        times.append(ts_ms)
        values.append(value)
    for times, values in ends.values():
        order = sorted(range(len(times)), key=times.__getitem__)
        times[:] = [times[i] for i in order]
        values[:] = [values[i] for i in order]
    return ends


def _nearest(samples: tuple[list[int], list[float]] | None, ts_ms: int) -> int | None:
    if not samples:
        return None
    times, values = samples
    i = bisect.bisect_left(times, ts_ms)
    # The sample just before or the one at/after ts_ms, whichever is closer (the earlier on a
    # tie); written out, not min() over a generator: this runs per commit of every partition.
    best, distance = -1, 0
    if i > 0:
        best, distance = i - 1, ts_ms - times[i - 1]
    if i < len(times) and (best < 0 or times[i] - ts_ms < distance):
        best, distance = i, times[i] - ts_ms
    return int(values[best]) if distance <= NEAREST_SAMPLE_MS else None

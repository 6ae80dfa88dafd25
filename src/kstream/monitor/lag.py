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
- ``status``/``reason``: :func:`kstream.monitor.burrow.evaluate` over the last
  ``window`` commits, read from the offsets table's Delta history
  (:mod:`kstream.monitor.commit_history`). The log end *at each commit* is the
  ``high_watermark`` sample of ``__kstream_metrics`` nearest in time (within
  :data:`NEAREST_SAMPLE_MS`); without one (no sampler ran) it is the current
  high watermark, which overstates past lags: then WARN cannot be told from OK
  (the rule needs lag at commit time) and ``log_ends_sampled`` says how many
  commits had a sample.

The evaluation reads, and never writes anything the CLI's ``groups describe``
would not (that settles decided transactions that carry offsets, as every read
of a group's offsets does). Cost: one metadata read and a few stat/pread calls
per partition, one walk of the recent Delta commit files for all groups, one
scan of the high watermark samples.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kstream.errors import KStreamError, OffsetOutOfRangeError
from kstream.groups.coordinator import Member
from kstream.groups.service import ConsumerGroups, GroupDescription
from kstream.log.cluster import Cluster
from kstream.log.log_reader import LogReader
from kstream.log.metadata import TopicInfo
from kstream.log.output import decode_frame
from kstream.log.records import PayloadCodec
from kstream.monitor import history
from kstream.monitor.burrow import (
    DEFAULT_MIN_DISTANCE_MS,
    DEFAULT_WINDOW,
    Commit,
    PartitionStatus,
    evaluate,
    group_status,
)
from kstream.monitor.commit_history import GroupCommit, recent_commits

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
    ``min_distance_ms`` are :func:`~kstream.monitor.burrow.evaluate`'s.

    Raises ClusterNotFoundError (no cluster at the path; nothing is created) and the
    CLI's errors for a bad group name."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    cluster = Cluster.open(cluster_path)
    service = ConsumerGroups(cluster)
    try:
        description = service.describe(group)
        commits = recent_commits(cluster_path, [group], per_group=window).get(group, [])
        ends = _sampled_ends(cluster_path, commits, now_ms)
        return _group_lag(RecordTimes(cluster), description, commits, ends, now_ms, window, min_distance_ms)
    finally:
        service.close()
        cluster.close()


def groups_summary(cluster_path: str, now_ms: int | None = None, *,
                   window: int = DEFAULT_WINDOW, min_distance_ms: int = DEFAULT_MIN_DISTANCE_MS
                   ) -> list[GroupSummary]:
    """Every group of the cluster (members or offsets), sorted by name, with its state,
    member count, total lag, worst lag_seconds and Burrow status."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    cluster = Cluster.open(cluster_path)
    service = ConsumerGroups(cluster)
    try:
        names = service.list_groups()
        if len(names) > MAX_GROUPS:
            raise KStreamError(f"{len(names)} groups; the summary handles at most {MAX_GROUPS}")
        history_by_group = recent_commits(cluster_path, names, per_group=window)
        ends = _sampled_ends(cluster_path, [c for cs in history_by_group.values() for c in cs],
                             now_ms)
        result = []
        times = RecordTimes(cluster)
        for name in names:
            lag = _group_lag(times, service.describe(name), history_by_group.get(name, []), ends,
                             now_ms, window, min_distance_ms)
            ages = [p.lag_seconds for p in lag.partitions if p.lag_seconds is not None]
            result.append(GroupSummary(name, lag.state, lag.members, len(lag.partitions),
                                       lag.total_lag, max(ages) if ages else None, lag.status))
        return result
    finally:
        service.close()
        cluster.close()


# -- one group -----------------------------------------------------------------------

_Ends = Mapping[tuple[str, int], tuple[list[int], list[float]]]


def _group_lag(times: RecordTimes, description: GroupDescription, commits: Sequence[GroupCommit],
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
            p.log_end_offset, p.lag, _lag_seconds(times, p.topic, p.partition, p.committed,
                                                  p.lag, now_ms),
            result.status, result.reason, result.window, sampled, p.owner))
    return GroupLag(description.group_id, description.state, len(description.members),
                    tuple(partitions), group_status(p.status for p in partitions),
                    description.total_lag, now_ms, description.generation, description.members)


def _lag_seconds(times: RecordTimes, topic: str, partition: int, committed: int | None,
                 lag: int | None, now_ms: int) -> float | None:
    if committed is None or lag is None:
        return None
    if lag == 0:
        return 0.0
    ts_ms = times.get(topic, partition, committed)
    return None if ts_ms is None else max(0.0, (now_ms - ts_ms) / 1000.0)


class RecordTimes:
    """Timestamps of records by (topic, partition, offset) in one open cluster, for one
    evaluation: topic metadata and answers are cached (groups of one topic often sit at the
    same offsets), at most :data:`MAX_CACHED` answers. Not thread-safe."""

    MAX_CACHED = 100_000

    def __init__(self, cluster: Cluster):
        self._cluster = cluster
        self._infos: dict[str, TopicInfo] = {}
        self._times: dict[tuple[str, int, int], int | None] = {}
        self._codec = PayloadCodec()

    def get(self, topic: str, partition: int, offset: int) -> int | None:
        """The timestamp (ms) of the record at ``offset`` in the partition's leader replica;
        None when there is none (deleted by retention, or beyond the log end)."""
        key = (topic, partition, offset)
        if key in self._times:
            return self._times[key]
        if len(self._times) >= self.MAX_CACHED:
            self._times.clear()
        info = self._infos.get(topic)
        if info is None:
            info = self._infos[topic] = self._cluster.topic(topic)
        value = self._times[key] = self._read(info, partition, offset)
        return value

    def _read(self, info: TopicInfo, partition: int, offset: int) -> int | None:
        placement = info.partitions[partition]
        reader = LogReader(self._cluster.replica_dirs(info, placement)[placement.leader])
        try:
            frames = reader.read(offset, 1)
        except OffsetOutOfRangeError:
            return None
        finally:
            reader.close()
        if not frames:
            return None
        stored = decode_frame(self._codec, frames[0], frozenset({"timestamp"}))
        index = offset - stored.base_offset
        if stored.log_append_time or "timestamp" not in stored.batch.schema.names:
            return stored.max_timestamp
        if not 0 <= index < stored.batch.num_rows:
            return None
        value = stored.batch.column("timestamp")[index].as_py()
        return None if value is None else int(value)


def record_timestamp(cluster: Cluster, topic: str, partition: int, offset: int) -> int | None:
    """The timestamp (ms) of the record at ``offset`` (see :meth:`RecordTimes.get`)."""
    return RecordTimes(cluster).get(topic, partition, offset)


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
    best = min((j for j in (i - 1, i) if 0 <= j < len(times)), key=lambda j: abs(times[j] - ts_ms))
    return int(values[best]) if abs(times[best] - ts_ms) <= NEAREST_SAMPLE_MS else None

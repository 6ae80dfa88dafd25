"""The console's bridge to :mod:`kstream.tools.monitor`: lag with Burrow statuses, series for
charts, the samplers' latest figures, and the Prometheus text.

Pages take their figures from here so that how a figure is computed lives in
``kstream.tools.monitor`` (docs/MONITOR.md) and how it is shown lives in the templates.
The group page adds what only the groups service has (members and their
assignments: ``ConsumerGroups.describe``, as `kstream groups describe --members`)
and, when a client reports librdkafka-style statistics into the metrics topic,
the client's own records-lag per partition beside the committed lag.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kstream.errors import GroupNotFoundError
from kstream.tools.monitor import history
from kstream.tools.monitor.csv_reporter import CsvReporter
from kstream.tools.monitor.lag import GroupLag, GroupSummary, group_lag
from kstream.tools.monitor.lag import groups_summary as summary
from kstream.tools.monitor.prometheus import registry
from kstream.tools.monitor.sampler import Sampler
from kstream.tools.web.clusters import ClusterRef, open_groups

if TYPE_CHECKING:
    from kstream.groups.coordinator import Group
    from kstream.tools.monitor.isr_shrinks import IsrShrinks
    from kstream.tools.web.state import ConsoleState

CLIENT_LAG_NAME = "client_consumer_lag"
CLIENT_LAG_WINDOW_MS = 5 * 60 * 1000  # a client's figure older than this is not shown
MAX_SERIES_POINTS = 2000
SERIES_NAMES_BY_SCOPE = {"group": ("lag", "lag_seconds", "committed_offset", "records_out_per_s"),
                         "topic": ("records_in_per_s", "log_end_offset", "high_watermark",
                                   "partition_bytes")}


@dataclass(frozen=True)
class GroupView:
    """The group page: membership (the coordinator's view: generation, assignor, members and
    their assignments, expired members left out; None when the group has no row) and per-partition lag and status
    (:func:`kstream.tools.monitor.lag.group_lag`), plus client records-lag where reported."""

    membership: Group | None
    lag: GroupLag
    client_lag: Mapping[tuple[str, int], float]


def groups_summary(ref: ClusterRef) -> list[GroupSummary]:
    return summary(ref.path)


def group_view(ref: ClusterRef, group: str) -> GroupView:
    """GroupNotFoundError (the CLI's message) for a group with neither members nor offsets."""
    with open_groups(ref) as service:
        if not service.exists(group):
            raise GroupNotFoundError(
                f"Consumer group {group!r} does not exist (it has no members and no committed "
                "offsets). List groups with `kstream groups list`.")
        # (group_lag reads the offsets: not twice.) Expired members left out, nothing written.
        membership = service.coordinator.view(group)
    return GroupView(membership, group_lag(ref.path, group), client_lag(ref, group))


def client_lag(ref: ClusterRef, group: str) -> dict[tuple[str, int], float]:
    """The newest ``client_consumer_lag`` per partition of ``group`` in the last
    :data:`CLIENT_LAG_WINDOW_MS` (empty: no client of the group reports statistics)."""
    since_ms = int(time.time() * 1000) - CLIENT_LAG_WINDOW_MS
    table = history.scan(ref.path, CLIENT_LAG_NAME, since_ms, None)
    if table is None:
        return {}
    newest: dict[tuple[str, int], tuple[int, float]] = {}
    for row in table.to_pylist():
        if row["name"] != CLIENT_LAG_NAME or row["group"] != group or row["topic_name"] is None:
            continue
        key = (row["topic_name"], row["partition_number"])
        if key not in newest or row["ts_ms"] >= newest[key][0]:
            newest[key] = (row["ts_ms"], row["value"])
    return {key: value for key, (_, value) in newest.items()}


def series(ref: ClusterRef, name: str, *, topic: str | None, partition: int | None, group: str | None,
           since_ms: int, until_ms: int | None, limit: int) -> list[tuple[int, float]]:
    return history.series(ref.path, name, topic=topic, partition=partition, group=group, since_ms=since_ms,
                          until_ms=until_ms, limit=min(limit, MAX_SERIES_POINTS))


CHART_PARTITIONS = 8  # a chart draws at most this many partitions' lines
TABLE_POINTS = 20
CHART_WINDOW_MS = 3600_000


def lag_tables(ref: ClusterRef, view: GroupView) -> dict[str, list[tuple[int, float]]]:
    """The chart's data as tables (pages without the vendored uPlot): "topic-partition" ->
    the last hour's lag points, at most :data:`TABLE_POINTS` each."""
    since_ms = int(time.time() * 1000) - CHART_WINDOW_MS
    table = history.scan(ref.path, "lag", since_ms, None)  # one scan for every partition's line
    return {f"{p.topic}-{p.partition}": [] if table is None else history.pick(
                table, "lag", topic=p.topic, partition=p.partition, group=view.lag.group, limit=TABLE_POINTS)
            for p in view.lag.partitions[:CHART_PARTITIONS]}


def topic_rates(console: ConsoleState, cluster: str) -> dict[str, dict[str, float]]:
    """Topic name -> {"records_in_per_s": v, "records_out_per_s": v} from the cluster's
    sampler's latest set (empty before its first round, or with no sampler)."""
    sampler = console.samplers.get(cluster)
    rates: dict[str, dict[str, float]] = {}
    for sample in (getattr(sampler, "latest", None) or ()) if sampler is not None else ():
        if sample.name in ("records_in_per_s", "records_out_per_s") and sample.topic is not None \
                and sample.partition is None:
            per_topic = rates.setdefault(sample.topic, {})
            per_topic[sample.name] = per_topic.get(sample.name, 0.0) + sample.value
    return rates


SHOWN_SHRINKS = 50  # partitions listed on the overview (the most shrinks first)


def isr_shrinks(console: ConsoleState, cluster: str) -> IsrShrinks | None:
    """The last hour's ISR shrinks the cluster's sampler saw (memory only, see
    :mod:`kstream.tools.monitor.isr_shrinks`); None without a sampler."""
    sampler = console.samplers.get(cluster)
    tracker = getattr(sampler, "isr_shrinks", None)
    return None if tracker is None else tracker.shrinks(int(time.time() * 1000))


def sampling_note(console: ConsoleState, cluster: str) -> str:
    sampler = console.samplers.get(cluster)
    if sampler is None:
        return "No sampler runs in this console: rates and history come from other writers, if any."
    interval = getattr(sampler, "interval_s", None)
    where = ("kept in memory only (--read-only: nothing is written)" if console.read_only
             else "written to __kstream_metrics")
    return f"Sampled every {interval} s, {where}."


def prometheus_text(console: ConsoleState) -> tuple[bytes, str]:
    """The samplers' latest figures as Prometheus text; a sampler that has not sampled yet
    (not started, e.g. in tests) samples once now."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    for sampler in console.samplers.values():
        if not getattr(sampler, "latest", None):
            sampler.sample()
    return generate_latest(registry(console.samplers)), CONTENT_TYPE_LATEST


def make_samplers(clusters: Mapping[str, ClusterRef], interval_s: float, write: bool,
                  csv_dir: str | None = None) -> dict[str, Any]:
    """One (not yet started) sampler per cluster; with ``csv_dir``, each also appends its
    rounds to CSV files under ``csv_dir/NAME/`` (Kafka's CsvReporter layout)."""
    samplers = {}
    for name, ref in clusters.items():
        reporters = [CsvReporter(os.path.join(csv_dir, name))] if csv_dir else []
        samplers[name] = Sampler(ref.path, interval_s, write, reporters=reporters)
    return samplers

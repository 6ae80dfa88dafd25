"""The sampler: the cluster's figures every ``interval_s``, kept in memory and (optionally)
appended to ``__kstream_metrics``.

One :meth:`Sampler.sample` reads, for every partition of every topic, the
leader's log start and end offsets, high watermark, last stable offset, bytes
on disk, ISR size and replica count; for every log dir, online and bytes; for
every group, committed offset, lag and lag_seconds per partition (the numbers
``kstream groups describe`` shows, via :class:`kstream.groups.ConsumerGroups`);
and two rates derived from the previous sample: ``records_in_per_s`` per topic
(growth of the summed log end offsets) and ``records_out_per_s`` per topic and
group (growth of the summed committed offsets). The first sample has no rates.
Per group also ``group_status``, Burrow's status as its number
(:attr:`kstream.tools.monitor.burrow.PartitionStatus.severity`: OK 1, WARN 2, ERR 3, STOP 4,
STALL 5, REWIND 6), from the evaluation the groups page shows; per round
``isr_shrinks``, the partitions whose ISR is smaller than in the previous round
(:class:`kstream.tools.monitor.isr_shrinks.IsrShrinkTracker`, which keeps the last hour's
for the overview page).

What it writes: with ``write=True`` the samples go to the metrics topic (created
on first use); with ``write=False`` (the console's ``--read-only``) nothing is
written, :attr:`Sampler.latest` only feeds ``/metrics`` and the live pages. A
reporter (e.g. :class:`kstream.tools.monitor.csv_reporter.CsvReporter`) may get each
sample set too. The partition figures are the engine's
(:func:`kstream.log.partition_bounds.bounds`): a high watermark a power cut took
from a lock file is rebuilt, not left out, and nothing is created.

Threads: :meth:`start` runs :meth:`sample` on one daemon thread every
``interval_s`` until :meth:`stop`. A failed round is logged, kept in
:attr:`last_error` (a page shows it) and the next round is tried: a monitor
that died on one bad read would hide every later figure. :attr:`latest` is
replaced whole under a lock; readers get an immutable tuple.

Limits: ``interval_s`` in [:data:`MIN_INTERVAL_S`, :data:`MAX_INTERVAL_S`]; at most
:data:`MAX_PARTITIONS` partitions and :data:`MAX_GROUPS` groups per round (more
raises, naming the limit).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence

from kstream.errors import ConfigError, KStreamError
from kstream.log.cluster.cluster import Cluster
from kstream.log.partition_bounds import bounds
from kstream.log.transactions.store import TransactionStore
from kstream.tools.monitor.isr_shrinks import IsrShrinkTracker
from kstream.tools.monitor.lag import all_groups_lag
from kstream.tools.monitor.metrics_topic import MetricsWriter, Sample

log = logging.getLogger(__name__)

MIN_INTERVAL_S = 1.0
MAX_INTERVAL_S = 3600.0
MAX_PARTITIONS = 100_000
MAX_GROUPS = 10_000  # (kstream.tools.monitor.lag.MAX_GROUPS, which the group round checks)

Reporter = Callable[[Sequence[Sample]], object]


class Sampler:
    """Samples one cluster; see the module docstring for the contract."""

    def __init__(self, cluster_path: str, interval_s: float, write: bool, *,
                 reporters: Sequence[Reporter] = (), groups: bool = True):
        if not MIN_INTERVAL_S <= interval_s <= MAX_INTERVAL_S:
            raise ConfigError(f"interval_s={interval_s}: the sample interval must be from "
                              f"{MIN_INTERVAL_S} to {MAX_INTERVAL_S} seconds")
        self.cluster_path = cluster_path
        self.interval_s = float(interval_s)
        self.write = write
        self.groups = groups
        self._reporters = tuple(reporters)
        self._writer = MetricsWriter(cluster_path) if write else None
        self._lock = threading.Lock()
        self._latest: tuple[Sample, ...] = ()
        self._previous: dict[tuple[str, str | None, str | None], tuple[int, float]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None
        self.rounds = 0
        self.isr_shrinks = IsrShrinkTracker()  # (the overview page reads it)

    @property
    def latest(self) -> tuple[Sample, ...]:
        """The last round's samples (empty before the first)."""
        with self._lock:
            return self._latest

    def sample(self, now_ms: int | None = None) -> list[Sample]:
        """One round: read every figure, derive the rates, keep, write and report them."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        cluster = Cluster.open(self.cluster_path)
        try:
            samples = _log_samples(cluster, now_ms)
            if self.groups:
                samples += _group_samples(cluster, now_ms)
        finally:
            cluster.close()
        samples += self._rates(samples, now_ms)
        samples.append(self._isr_shrinks(samples, now_ms))
        with self._lock:
            self._latest = tuple(samples)
        if self._writer is not None:
            self._writer.write(samples)
        for reporter in self._reporters:
            reporter(samples)
        self.rounds += 1
        return samples

    def _rates(self, samples: Sequence[Sample], now_ms: int) -> list[Sample]:
        """records_in_per_s per topic and records_out_per_s per (topic, group), from the sums
        of log end / committed offsets against the previous round."""
        sums: dict[tuple[str, str | None, str | None], float] = {}
        key: tuple[str, str | None, str | None]
        for s in samples:
            if s.name == "log_end_offset" and s.topic is not None:
                key = ("records_in_per_s", s.topic, None)
            elif s.name == "committed_offset" and s.topic is not None:
                key = ("records_out_per_s", s.topic, s.group)
            else:
                continue
            sums[key] = sums.get(key, 0.0) + s.value
        rates = []
        for key, total in sums.items():
            before = self._previous.get(key)
            if before is not None and now_ms > before[0]:
                per_s = max(0.0, (total - before[1]) * 1000.0 / (now_ms - before[0]))
                source = "log" if key[0] == "records_in_per_s" else "group"
                rates.append(Sample(now_ms, source, key[0], per_s, topic=key[1], group=key[2]))
        self._previous = {key: (now_ms, total) for key, total in sums.items()}
        return rates

    def _isr_shrinks(self, samples: Sequence[Sample], now_ms: int) -> Sample:
        """``isr_shrinks``: partitions whose ISR is smaller than in the previous round (0 in
        the first round); the tracker keeps which, for the overview."""
        sizes = {(s.topic, s.partition): int(s.value) for s in samples
                 if s.name == "isr_size" and s.topic is not None and s.partition is not None}
        shrunk = self.isr_shrinks.observe(now_ms, sizes)
        return Sample(now_ms, "log", "isr_shrinks", float(len(shrunk)))

    # -- the background thread ------------------------------------------------------------

    def start(self) -> None:
        """Sample now and then every ``interval_s`` on a daemon thread (idempotent)."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"kstream-sampler:{self.cluster_path}",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.sample()
                self.last_error = None
            except (KStreamError, OSError) as exc:
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("sampling %s failed (next try in %.0f s): %s", self.cluster_path,
                            self.interval_s, exc)
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - started)))

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop the thread (waits for a round in progress) and close the writer."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout_s)
        if self._writer is not None:
            self._writer.close()


# -- reading the figures ---------------------------------------------------------------

def _log_samples(cluster: Cluster, now_ms: int) -> list[Sample]:
    store = TransactionStore.for_cluster(cluster)
    log_dirs = cluster.metadata.log_dirs()
    online = {i: up for i, _, up in log_dirs}
    dir_bytes = dict.fromkeys(online, 0)
    samples: list[Sample] = []
    count = 0
    for name in cluster.list_topics():
        info = cluster.topic(name)
        count += info.num_partitions
        if count > MAX_PARTITIONS:
            raise KStreamError(f"the cluster has more than {MAX_PARTITIONS} partitions; the "
                               "sampler reads at most that many per round")
        for placement in info.partitions:
            p = placement.partition
            dirs = cluster.replica_dirs(info, placement)
            for log_dir, directory in dirs.items():
                if online.get(log_dir):
                    dir_bytes[log_dir] += _bytes(directory)

            def figure(metric: str, value: float, topic: str = name, partition: int = p) -> None:
                samples.append(Sample(now_ms, "log", metric, value, topic=topic, partition=partition))

            figure("replicas", len(placement.replicas))
            figure("isr_size", len([r for r in placement.isr if online.get(r)]))
            if placement.leader < 0 or not online.get(placement.leader):
                continue  # offline: no offsets to read
            found = bounds(cluster, info, p, store=store)
            figure("log_start_offset", found.log_start_offset)
            figure("log_end_offset", found.log_end_offset)
            figure("partition_bytes", _bytes(dirs[placement.leader]))
            figure("high_watermark", found.high_watermark)
            figure("last_stable_offset", found.last_stable_offset)
    for log_dir, up in online.items():
        labels = {"log_dir": str(log_dir)}
        samples.append(Sample(now_ms, "log", "log_dir_online", 1.0 if up else 0.0, labels=labels))
        samples.append(Sample(now_ms, "log", "log_dir_bytes", float(dir_bytes[log_dir]), labels=labels))
    return samples


def _bytes(directory: str) -> int:
    """Bytes of the replica's segment files (``.log``) in ``directory``; 0 when it is gone."""
    try:
        with os.scandir(directory) as entries:
            return sum(e.stat().st_size for e in entries if e.name.endswith(".log"))
    except FileNotFoundError:
        return 0


def _group_samples(cluster: Cluster, now_ms: int) -> list[Sample]:
    """Per group and partition: committed offset, lag, lag_seconds (when the record at the
    committed offset is still there); per group: ``group_status``, Burrow's status number
    (:attr:`kstream.tools.monitor.burrow.PartitionStatus.severity`) of the evaluation the groups
    page shows."""
    samples: list[Sample] = []
    for lag in all_groups_lag(cluster, now_ms):  # (at most lag.MAX_GROUPS == MAX_GROUPS)
        samples.append(Sample(now_ms, "group", "group_status", float(lag.status.severity), group=lag.group))
        for p in lag.partitions:
            if p.committed is None or p.lag is None:
                continue

            def figure(metric: str, value: float, topic: str = p.topic, partition: int = p.partition,
                       group: str = lag.group) -> None:
                samples.append(Sample(now_ms, "group", metric, value, topic=topic,
                                      partition=partition, group=group))

            figure("committed_offset", p.committed)
            figure("lag", p.lag)
            if p.lag_seconds is not None:
                figure("lag_seconds", p.lag_seconds)
    return samples

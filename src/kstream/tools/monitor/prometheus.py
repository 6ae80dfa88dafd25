"""Prometheus exposition of the samplers' latest figures (a custom collector).

:func:`registry` returns a fresh ``CollectorRegistry`` holding one collector
that, on every scrape, turns each sampler's :attr:`~kstream.tools.monitor.sampler.Sampler.latest`
samples into gauges (prometheus_client's custom collector API: ``collect()``
yields ``GaugeMetricFamily`` objects). Names are the metric names prefixed
``kstream_`` (``kstream_lag``, ``kstream_records_in_per_s``, ...). Labels:
``cluster`` (the sampler's name in the mapping), then ``topic``,
``partition``, ``group`` and each sample label key used by that metric (e.g.
``log_dir``); a label a sample lacks is ``""``, so every family has one label
set. Plus, per cluster, ``kstream_sampler_last_round_timestamp_seconds`` and
``kstream_sampler_error`` (1 when the last round failed).

A scrape reads memory only (never the disk): the figures are as old as the
sampler's last round. Safe from any thread (``latest`` is an immutable tuple).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

if TYPE_CHECKING:
    from kstream.tools.monitor.sampler import Sampler

PREFIX = "kstream_"
_FIXED_LABELS = ("cluster", "topic", "partition", "group")


class SamplerCollector(Collector):
    """Gauges from the latest samples of each named sampler."""

    def __init__(self, samplers: Mapping[str, Sampler]):
        self._samplers = dict(samplers)

    def collect(self) -> Iterator[Metric]:
        rows: dict[str, list[tuple[dict[str, str], float]]] = {}
        last_round = GaugeMetricFamily(PREFIX + "sampler_last_round_timestamp_seconds",
                                       "Time of the sampler's last round", labels=["cluster"])
        error = GaugeMetricFamily(PREFIX + "sampler_error", "1 when the sampler's last round failed",
                                  labels=["cluster"])
        for cluster, sampler in sorted(self._samplers.items()):
            latest = sampler.latest
            if latest:
                last_round.add_metric([cluster], max(s.ts_ms for s in latest) / 1000.0)
            error.add_metric([cluster], 1.0 if sampler.last_error else 0.0)
            for s in latest:
                labels = {"cluster": cluster, "topic": s.topic or "",
                          "partition": "" if s.partition is None else str(s.partition),
                          "group": s.group or "", **{k: str(v) for k, v in s.labels.items()
                                                     if k not in _FIXED_LABELS}}
                rows.setdefault(s.name, []).append((labels, s.value))
        for name, values in sorted(rows.items()):
            extra = sorted({k for labels, _ in values for k in labels} - set(_FIXED_LABELS))
            names = [*_FIXED_LABELS, *extra]
            family = GaugeMetricFamily(PREFIX + name, f"kstream {name} (see docs/MONITOR.md)",
                                       labels=names)
            for labels, value in values:
                family.add_metric([labels.get(k, "") for k in names], value)
            yield family
        yield last_round
        yield error


def registry(samplers: Mapping[str, Sampler]) -> CollectorRegistry:
    """A new registry exposing ``samplers`` (cluster name -> sampler); serve it with
    ``prometheus_client.generate_latest(registry)``."""
    result = CollectorRegistry(auto_describe=False)
    result.register(SamplerCollector(samplers))
    return result

"""Prometheus figures of a running mirror (``kstream mirror --metrics-port``).

:func:`registry` returns a ``CollectorRegistry`` holding one collector over the run's
:class:`~kstream.mirror.progress.Progress`; each scrape reads its counters (memory only,
as old as the copying loop's last chunk and its last progress line's ends). Families, each
labelled ``mirror`` (the mirror's name) and ``direction`` (``into-kstream`` or ``into-kafka``):

* ``kstream_mirror_records_total``: records copied by this run (a counter);
* ``kstream_mirror_transactions_total``: transactions committed (into kstream: kstream's; into
  Kafka with ``--exactly-once``: Kafka's; 0 into Kafka at least once);
* ``kstream_mirror_records_per_second``: the run's average rate;
* ``kstream_mirror_position`` and ``kstream_mirror_lag``, per source ``topic`` and
  ``partition``: the next source offset the mirror copies, and the source's end (last
  stable offset, refreshed with each progress line) minus it.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from kstream.mirror.progress import Progress

PREFIX = "kstream_mirror_"
_LABELS = ["mirror", "direction"]


class ProgressCollector(Collector):
    """The figures of one mirror run, read from its Progress at each scrape."""

    def __init__(self, progress: Progress, direction: str):
        self._progress = progress
        self._direction = direction

    def collect(self) -> Iterator[Metric]:
        progress = self._progress
        run = [progress.name, self._direction]
        positions = dict(progress.positions)  # a copy in one step: the copying loop updates these
        lag = progress.lag()
        records = CounterMetricFamily(PREFIX + "records", "Records copied by this run", labels=_LABELS)
        records.add_metric(run, progress.records)
        transactions = CounterMetricFamily(PREFIX + "transactions", "Transactions committed (kstream's into kstream, "
                                           "Kafka's into Kafka with --exactly-once)", labels=_LABELS)
        transactions.add_metric(run, progress.transactions)
        rate = GaugeMetricFamily(PREFIX + "records_per_second", "The run's average copy rate", labels=_LABELS)
        rate.add_metric(run, progress.rate())
        position = GaugeMetricFamily(PREFIX + "position", "The next source offset the mirror copies",
                                     labels=[*_LABELS, "topic", "partition"])
        for (topic, partition), offset in sorted(positions.items()):
            position.add_metric([*run, topic, str(partition)], offset)
        behind = GaugeMetricFamily(PREFIX + "lag", "The source's end (last stable offset) minus the mirror's position",
                                   labels=[*_LABELS, "topic", "partition"])
        for (topic, partition), count in lag.items():
            behind.add_metric([*run, topic, str(partition)], count)
        yield from (records, transactions, rate, position, behind)


def registry(progress: Progress, direction: str) -> CollectorRegistry:
    """A registry with the run's collector only (no process or platform collectors)."""
    out = CollectorRegistry(auto_describe=True)
    out.register(ProgressCollector(progress, direction))
    return out

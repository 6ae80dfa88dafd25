"""kstream.tools.perf: Kafka-style perf runs, several clients at once, and the benchmark study.

Modules: ``result`` (PerfResult and combining clients), ``payload`` (record
values), ``runs`` (one producer / consumer / end-to-end run), ``parallel``
(N client processes started together), ``pair`` (a producer and a consumer
at once), ``ceiling`` (raw Arrow IPC and fdatasync on the same dirs),
``peer`` (confluent-kafka against Tansu), ``kafka_peer`` (Apache Kafka itself on
loopback, docs/KAFKA_PEER.md), ``csv_report`` (``--csv``), and the
study: ``plan`` (conf/study.toml), ``study`` (runs a plan), ``plots``.
Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kstream._lazy import lazy_exports

if TYPE_CHECKING:
    from kstream.tools.perf.pair import pair
    from kstream.tools.perf.parallel import run_clients, run_together, split_partitions
    from kstream.tools.perf.result import PerfResult, combine
    from kstream.tools.perf.runs import consume, end_to_end, produce

__all__ = ["PerfResult", "combine", "consume", "end_to_end", "pair", "produce", "run_clients", "run_together",
           "split_partitions"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "PerfResult": "kstream.tools.perf.result", "combine": "kstream.tools.perf.result",
    "consume": "kstream.tools.perf.runs", "end_to_end": "kstream.tools.perf.runs", "produce": "kstream.tools.perf.runs",
    "pair": "kstream.tools.perf.pair",
    "run_clients": "kstream.tools.perf.parallel", "run_together": "kstream.tools.perf.parallel",
    "split_partitions": "kstream.tools.perf.parallel",
}, __all__)

"""A ``stats_cb`` that writes a client's statistics into the metrics topic.

``Consumer({..., "statistics.interval.ms": 5000, "stats_cb": metrics_stats_cb(path)})``:
each statistics document (librdkafka's layout, see :mod:`kstream.client.stats`)
becomes samples with source ``client`` and names ``client_<field>``:

- client-wide: ``client_msg_cnt``, ``client_msg_size``, ``client_txmsgs``,
  ``client_txmsg_bytes``, ``client_rxmsgs``, ``client_rxmsg_bytes``;
- per partition (``topic``, ``partition`` set): :data:`PARTITION_FIELDS`, e.g.
  ``client_consumer_lag`` (records lag, as the client sees it: high watermark -
  its position) next to the group's committed lag the sampler writes.

Labels ``client_id`` and ``type`` (producer/consumer) tell clients apart;
``group`` is set when given (the group page shows the group's clients). Fields
at -1 (librdkafka's "unknown") are left out. The samples' time is the
document's ``time`` (unix seconds).

The callback runs on the client's thread (as every callback, from
``poll()``/``consume()``/``flush()``); it writes synchronously through one
:class:`~kstream.tools.monitor.metrics_topic.MetricsWriter` (a lock makes it safe if
several clients share the callback). A failed write raises out of the
client's call that served the callback: metrics that cannot be written are
not dropped quietly. ``then`` chains a callback of the caller's own.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from kstream.errors import InvalidRecordError
from kstream.tools.monitor.metrics_topic import MetricsWriter, Sample

CLIENT_FIELDS = ("msg_cnt", "msg_size", "txmsgs", "txmsg_bytes", "rxmsgs", "rxmsg_bytes")
PARTITION_FIELDS = ("consumer_lag", "consumer_lag_stored", "committed_offset", "stored_offset",
                    "app_offset", "hi_offset", "ls_offset", "lo_offset", "txmsgs", "rxmsgs",
                    "msgq_cnt")


def stats_samples(document: str, group: str | None = None) -> list[Sample]:
    """The samples of one statistics document (see the module docstring)."""
    try:
        stats: dict[str, Any] = json.loads(document)
        ts_ms = int(stats["time"]) * 1000
        labels = {"client_id": str(stats.get("client_id", "")), "type": str(stats.get("type", ""))}
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidRecordError(f"not a statistics document: {exc}") from exc
    samples = [Sample(ts_ms, "client", "client_" + name, float(stats[name]), group=group, labels=labels)
               for name in CLIENT_FIELDS if isinstance(stats.get(name), int | float)]
    for topic, entry in sorted(stats.get("topics", {}).items()):
        for key, partition in sorted(entry.get("partitions", {}).items()):
            number = int(partition.get("partition", key))
            if number < 0:
                continue  # librdkafka's internal UA partition
            for name in PARTITION_FIELDS:
                value = partition.get(name)
                if isinstance(value, int | float) and value != -1:
                    samples.append(Sample(ts_ms, "client", "client_" + name, float(value), topic=topic,
                                          partition=number, group=group, labels=labels))
    return samples


def metrics_stats_cb(cluster_path: str, *, group: str | None = None,
                     then: Callable[[str], None] | None = None) -> Callable[[str], None]:
    """A ``stats_cb`` writing each statistics document into ``cluster_path``'s metrics topic."""
    writer = MetricsWriter(cluster_path)
    lock = threading.Lock()

    def stats_cb(document: str) -> None:
        samples = stats_samples(document, group)
        with lock:
            writer.write(samples)
        if then is not None:
            then(document)

    return stats_cb

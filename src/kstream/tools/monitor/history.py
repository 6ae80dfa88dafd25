"""Reading one series back from the metrics topic, for charts and for lag history.

:func:`series` answers "the values of metric NAME for this topic / partition /
group between two times" with one bounded scan: the name's partition of
``__kstream_metrics`` (records are routed by name, see
:mod:`kstream.tools.monitor.metrics_topic`), from the first record at or after
``since_ms`` (the time index) to ``until_ms`` or the high watermark, decoding
only the columns it filters on, filtering with Arrow compute. It reads with a
Consumer that belongs to no group, so it writes nothing and commits nothing.

Bounds: at most :data:`MAX_SCAN_ROWS` records are scanned (more raises
:class:`~kstream.errors.ResourceExhaustedError` naming the range: ask for a
shorter one); at most ``limit`` points are returned, evenly thinned (the
newest point always kept) when more matched.

A cluster without a metrics topic has no history: the answer is ``[]``
(no sampler ever ran there; that is not an error).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kstream.client.consumer import Consumer
from kstream.errors import ConfigError, ResourceExhaustedError
from kstream.message import TopicPartition
from kstream.tools.monitor.metrics_topic import SCHEMA, TOPIC, partition_for

MAX_SCAN_ROWS = 5_000_000
MAX_LIMIT = 100_000
_POLL_RECORDS = 50_000

Point = tuple[int, float]


def series(cluster_path: str, name: str, *, topic: str | None = None, partition: int | None = None,
           group: str | None = None, labels: Mapping[str, str] | None = None, since_ms: int,
           until_ms: int | None = None, limit: int) -> list[Point]:
    """``(ts_ms, value)`` points of one series, oldest first.

    A series is the samples of ``name`` whose ``topic_name``, ``partition_number`` and
    ``group`` equal ``topic``, ``partition`` and ``group`` (None matches only a null:
    ``records_in_per_s`` of a topic has ``partition=None``), and whose labels equal
    ``labels`` when given (None: any labels). ``since_ms`` inclusive, ``until_ms``
    inclusive (None: up to the newest sample). ``limit``: 1..:data:`MAX_LIMIT`.
    """
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ConfigError(f"limit={limit!r}: must be an integer from 1 to {MAX_LIMIT}")
    if until_ms is not None and until_ms < since_ms:
        raise ConfigError(f"until_ms={until_ms} is before since_ms={since_ms}")
    table = scan(cluster_path, name, since_ms, until_ms)
    if table is None:
        return []
    return pick(table, name, topic=topic, partition=partition, group=group, labels=labels, limit=limit)


def pick(table: pa.Table, name: str, *, topic: str | None = None, partition: int | None = None,
         group: str | None = None, labels: Mapping[str, str] | None = None, limit: int) -> list[Point]:
    """One series (as :func:`series` selects it) out of the rows of one :func:`scan`: a page
    drawing several series of one name scans once and picks each."""
    assert 1 <= limit <= MAX_LIMIT, limit
    mask = _equals(table, "name", name)
    for column, wanted in (("topic_name", topic), ("partition_number", partition), ("group", group)):
        mask = pc.and_(mask, _equals(table, column, wanted))
    if labels is not None:
        mask = pc.and_(mask, _equals(table, "labels", json.dumps(dict(labels), sort_keys=True)))
    picked = table.filter(mask)
    points = list(zip(picked.column("ts_ms").to_pylist(), picked.column("value").to_pylist(),
                      strict=True))
    return thin(points, limit)


def scan(cluster_path: str, name: str, since_ms: int, until_ms: int | None,
         columns: tuple[str, ...] = ("ts_ms", "name", "topic_name", "partition_number", "group",
                                     "labels", "value")) -> pa.Table | None:
    """The rows of ``name``'s partition with ``since_ms <= ts_ms <= until_ms`` (all names of
    that partition: callers filter); None when the cluster has no metrics topic."""
    consumer = Consumer({"cluster": cluster_path})
    try:
        if TOPIC not in consumer.cluster.list_topics():
            return None
        p = partition_for(name)
        start = consumer.offsets_for_times([TopicPartition(TOPIC, p, since_ms)])[0].offset
        if start < 0:
            return SCHEMA.empty_table().select(list(columns))
        _, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, p))
        consumer.assign([TopicPartition(TOPIC, p, start)])
        return _read(consumer, start, high, since_ms, until_ms, columns)
    finally:
        consumer.close()


def _read(consumer: Any, start: int, high: int, since_ms: int, until_ms: int | None,
          columns: tuple[str, ...]) -> pa.Table:
    parts: list[pa.Table] = []
    scanned, position = 0, start
    while position < high:
        batch = consumer.poll_batch(max_records=_POLL_RECORDS, timeout=1.0)
        if batch is None:
            break  # the high watermark we read may include records retention just removed
        scanned += batch.num_rows
        if scanned > MAX_SCAN_ROWS:
            raise ResourceExhaustedError(
                f"reading {TOPIC} from {since_ms} ms would scan more than {MAX_SCAN_ROWS} "
                "records; ask for a shorter range (since_ms/until_ms)")
        position = batch.column("offset")[-1].as_py() + 1
        table = pa.Table.from_batches([batch]).select(list(columns))
        ts = table.column("ts_ms")
        keep = pc.greater_equal(ts, since_ms)
        if until_ms is not None:
            keep = pc.and_(keep, pc.less_equal(ts, until_ms))
        parts.append(table.filter(keep))
        if until_ms is not None and pc.min(ts).as_py() > until_ms:
            break  # samples are written in time order per writer; one batch past the end suffices
    return pa.concat_tables(parts) if parts else SCHEMA.empty_table().select(list(columns))


def _equals(table: pa.Table, column: str, wanted: object) -> pa.ChunkedArray:
    values = table.column(column)
    if wanted is None:
        return pc.is_null(values)
    return pc.fill_null(pc.equal(values, pa.scalar(wanted, values.type)), False)


def thin(points: list[Point], limit: int) -> list[Point]:
    """At most ``limit`` of ``points``, evenly spaced by index, the last one always kept."""
    if len(points) <= limit:
        return points
    if limit == 1:
        return points[-1:]
    step = (len(points) - 1) / (limit - 1)
    return [points[round(i * step)] for i in range(limit)]

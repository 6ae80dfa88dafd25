"""The union read without Spark: the Python data source's planning and split reads, and the
Consumer, over a tiered topic whose local segments below the lake end were deleted."""

from __future__ import annotations

import json
import re
import time

import pyarrow as pa
import pytest
from click.testing import CliRunner
from pyspark.sql.streaming.datasource import ReadMaxRows
from pyspark.sql.types import StructType
from tier_helpers import SEGMENT_BYTES, fill, null_lake_cell, tier_then_trim

from kstream import AdminClient, Consumer, NewTopic, Producer, TopicPartition
from kstream.admin import OffsetSpec
from kstream.data_source import KStreamBatchReader, KStreamDataSource, KStreamStreamReader
from kstream.errors import OffsetOutOfRangeError
from kstream.log.cluster.cluster import Cluster
from kstream.log.partition_bounds import bounds
from kstream.message import OFFSET_BEGINNING
from kstream.tiering import Tierer
from kstream.tiering.lake_table import TierError
from kstream.tools.cli.main import cli

PARTITIONS = 2
# Milliseconds survive Delta's microseconds; recent, so time retention (7 days) keeps them.
STAMP_MS = int(time.time()) * 1000 - 3_600_000 + 123


@pytest.fixture
def scene(cluster_path, make_topic, tmp_path):
    """(lake path, oracle, {partition: (lake end, log start)}): lake [0, e), log [e', ...) with
    e' <= e, the log below the lake end gone."""
    lake = str(tmp_path / "lake" / "t")
    make_topic("t", PARTITIONS, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": lake})
    fill(cluster_path, "t", PARTITIONS, timestamp_ms=STAMP_MS)
    want, edges = tier_then_trim(cluster_path, "t", PARTITIONS, timestamp_ms=STAMP_MS)
    for end, log_start in edges.values():
        assert 0 < log_start <= end  # the lake holds what the log lost
        assert any(row[1] < log_start for row in want)
    return lake, want, edges


def _schema(options: dict) -> StructType:
    source = KStreamDataSource(options)
    return source.schema()


def _batch_rows(options: dict) -> list[tuple]:
    """(partition, offset, key, value, headers, timestamp ms) read through the batch reader's
    partitions and read(), as Spark's Python worker calls them."""
    schema = _schema(options)
    reader = KStreamBatchReader(options, schema)
    rows = []
    for split in reader.partitions():
        for batch in reader.read(split):
            for r in batch.to_pylist():
                headers = tuple((h["key"], h["value"]) for h in (r.get("headers") or []))
                rows.append((r["partition"], r["offset"], r["key"], r["value"], headers,
                             int(r["timestamp"].timestamp() * 1000)))
    return rows


def _options(cluster_path, **more):
    selector = {} if "assign" in more else {"subscribe": "t"}
    return {"cluster": cluster_path, **selector, "includeHeaders": "true", "reader": "python", **more}


def test_a_batch_read_from_earliest_is_the_full_log(cluster_path, scene):
    _, want, _ = scene
    got = _batch_rows(_options(cluster_path))
    assert len(got) == len(set((p, o) for p, o, *_ in got))  # each offset once
    assert sorted(got) == want


def test_ranges_straddling_the_lake_end(cluster_path, scene):
    _, want, edges = scene
    for back, ahead in ((1, 1), (5, 7), (12, 3)):
        start = {"t": {str(p): max(0, end - back) for p, (end, _) in edges.items()}}
        stop = {"t": {str(p): end + ahead for p, (end, _) in edges.items()}}
        got = _batch_rows(_options(cluster_path, startingOffsets=_json(start), endingOffsets=_json(stop)))
        expected = [row for row in want if start["t"][str(row[0])] <= row[1] < stop["t"][str(row[0])]]
        assert sorted(got) == expected, (back, ahead)
        assert got or back == 1
    # Wholly in the lake, below the log start.
    start = {"t": {str(p): 1 for p in edges}}
    stop = {"t": {str(p): log_start - 1 for p, (_, log_start) in edges.items()}}
    got = _batch_rows(_options(cluster_path, startingOffsets=_json(start), endingOffsets=_json(stop)))
    assert sorted(got) == [row for row in want if 1 <= row[1] < stop["t"][str(row[0])]]


def test_split_cutting_in_the_lake(cluster_path, scene):
    _, want, _ = scene
    options = _options(cluster_path, maxRecordsPerPartition="7")
    reader = KStreamBatchReader(options, _schema(options))
    assert len(reader.partitions()) > 2 * PARTITIONS
    assert sorted(_batch_rows(options)) == want


def test_an_offset_in_neither_lake_nor_log_is_data_loss(cluster_path, scene, tmp_path):
    """delete-records past the lake end makes a hole between the lake end and the log start:
    reading it fails with failOnDataLoss, and is skipped without it."""
    _, want, edges = scene
    end, _ = edges[0]
    admin = AdminClient({"cluster": cluster_path})
    try:
        admin.delete_records([TopicPartition("t", 0, end + 4)])
    finally:
        admin.close()
    cluster = Cluster.open(cluster_path)
    try:
        log_start = bounds(cluster, "t", 0).log_start_offset
    finally:
        cluster.close()
    assert log_start > end
    options = _options(cluster_path, assign='{"t":[0]}')
    with pytest.raises(OffsetOutOfRangeError, match=rf"offsets {end}\.\.{log_start - 1} were deleted .* "
                                                    rf"holds the partition below {end}"):
        _batch_rows(options)
    got = _batch_rows({**options, "failOnDataLoss": "false"})
    assert sorted(got) == [row for row in want if row[0] == 0 and not end <= row[1] < log_start]


def _json(offsets: dict) -> str:
    return json.dumps(offsets)


def _consume(consumer: Consumer) -> list[tuple]:
    rows = []
    while (m := consumer.poll(0.3)) is not None:
        assert m.error() is None, m.error()
        headers = tuple((k, v) for k, v in (m.headers() or []))
        rows.append((m.partition(), m.offset(), m.key(), m.value(), headers, m.timestamp()[1]))
    return rows


def test_a_consumer_reads_the_lake_then_the_log(cluster_path, scene):
    _, want, edges = scene
    consumer = Consumer({"cluster": cluster_path, "auto.offset.reset": "error"})
    try:
        consumer.assign([TopicPartition("t", p, 0) for p in range(PARTITIONS)])
        assert sorted(_consume(consumer)) == want
        # seek() into the lake, just below its end: the rest of the lake, then the log.
        end, _ = edges[1]
        consumer.seek(TopicPartition("t", 1, end - 3))
        assert sorted(_consume(consumer)) == [row for row in want if row[0] == 1 and row[1] >= end - 3]
        consumer.assign([TopicPartition("t", 0, OFFSET_BEGINNING)])
        assert consumer.position([TopicPartition("t", 0)])[0].offset == 0
        assert sorted(_consume(consumer)) == [row for row in want if row[0] == 0]
    finally:
        consumer.close()


def test_the_low_watermark_and_earliest_count_the_lake_as_kafkas_tiered_storage_does(cluster_path, scene):
    """KIP-405: the log start offset a client sees (ListOffsets EARLIEST, the low watermark) is
    the first offset of remote and local storage together; a lookup by time searches both."""
    _, want, edges = scene
    first = {p: min(row[1] for row in want if row[0] == p) for p in range(PARTITIONS)}
    consumer = Consumer({"cluster": cluster_path, "auto.offset.reset": "error"})
    admin = AdminClient({"cluster": cluster_path})
    try:
        for p in range(PARTITIONS):
            tp = TopicPartition("t", p)
            low, high = consumer.get_watermark_offsets(tp)
            assert low == first[p] < edges[p][1]  # the lake's first offset, below the log start
            assert high > max(row[1] for row in want if row[0] == p)
            assert admin.list_offsets({tp: OffsetSpec.earliest()})[tp].result().offset == first[p]
            by_time = admin.list_offsets({tp: OffsetSpec.for_timestamp(STAMP_MS)})[tp].result()
            assert (by_time.offset, by_time.timestamp) == (first[p], STAMP_MS)
        consumer.assign([TopicPartition("t", 0, 0)])
        assert consumer.poll(5) is not None
        assert consumer.get_watermark_offsets(TopicPartition("t", 0), cached=True)[0] == first[0]
        # kafka-get-offsets: earliest counts the lake, earliest-local (KIP-1005) does not.
        for time, want_offset in (("earliest", first[1]), ("-4", edges[1][1]), ("earliest-local", edges[1][1]),
                                  (str(STAMP_MS), first[1])):
            result = CliRunner().invoke(cli, ["--cluster", cluster_path, "get-offsets", "--topic", "t",
                                              "--partitions", "1", "--time", time])
            assert (result.exit_code, result.output.split()) == (0, [f"t:1:{want_offset}"]), result.output
    finally:
        consumer.close()
        admin.close()


@pytest.mark.parametrize("column", ["timestamp", "offset"])
def test_a_lookup_by_time_refuses_a_lake_row_with_a_null_offset_or_timestamp(cluster_path, scene, column):
    """A tier table row with a null offset or timestamp (kstream never writes one: the table was
    damaged or written by another writer) is a TierError naming the table and the file, not a
    row skipped (which answered the next offset as the first at the time); the JVM reader says
    the same (tests/spark/test_jvm_union_lookups.py)."""
    lake, _, _ = scene
    damaged = null_lake_cell(lake, 0, 0, column)
    words = (rf"t-0: the tier table {re.escape(lake)} \(Delta version \d+\): its data file {re.escape(damaged)} "
             rf"has 1 row\(s\) with a null {column}; kstream never writes such a row, so the table is damaged "
             r".* restore the table from a backup")
    with pytest.raises(TierError, match=words):
        _batch_rows(_options(cluster_path, assign='{"t":[0]}', startingTimestamp=str(STAMP_MS)))
    consumer = Consumer({"cluster": cluster_path})
    try:
        with pytest.raises(TierError, match=words):
            consumer.offsets_for_times([TopicPartition("t", 0, STAMP_MS)])
    finally:
        consumer.close()
    with pytest.raises(TierError, match=words):  # a read of both partitions too; partition 1 alone is whole
        _batch_rows(_options(cluster_path, startingTimestamp=str(STAMP_MS)))
    assert _batch_rows(_options(cluster_path, assign='{"t":[1]}', startingTimestamp=str(STAMP_MS)))


def test_a_read_refuses_a_lake_row_with_a_null_offset(cluster_path, scene):
    """A tier table row with a null offset is a TierError naming the table and the file (the
    words of a lookup by time, and of the JVM reader: tests/spark/test_jvm_union_lookups.py) in
    a read from the lake's first offset, a read starting inside the file (whose offset filter
    dropped the row), latestPerKey and the Consumer, not a row dropped or read with no offset."""
    lake, want, _ = scene
    damaged = null_lake_cell(lake, 0, 0, "offset")
    words = (rf"t-0: the tier table {re.escape(lake)} \(Delta version \d+\): its data file {re.escape(damaged)} "
             r"has 1 row\(s\) with a null offset; kstream never writes such a row, so the table is damaged "
             r".* restore the table from a backup")
    for more in ({}, {"startingOffsets": _json({"t": {"0": 1}})}, {"latestPerKey": "true"}):
        with pytest.raises(TierError, match=words):
            _batch_rows(_options(cluster_path, assign='{"t":[0]}', **more))
    consumer = Consumer({"cluster": cluster_path, "auto.offset.reset": "error"})
    try:
        consumer.assign([TopicPartition("t", 0, 1)])
        with pytest.raises(TierError, match=words):
            consumer.poll(2)
    finally:
        consumer.close()
    assert sorted(_batch_rows(_options(cluster_path, assign='{"t":[1]}'))) == [r for r in want if r[0] == 1]


def test_a_consumer_in_a_hole_gets_auto_offset_reset(cluster_path, scene):
    _, want, edges = scene
    end, _ = edges[0]
    admin = AdminClient({"cluster": cluster_path})
    try:
        admin.delete_records([TopicPartition("t", 0, end + 4)])
    finally:
        admin.close()
    consumer = Consumer({"cluster": cluster_path, "auto.offset.reset": "error"})
    try:
        consumer.assign([TopicPartition("t", 0, end + 1)])
        message = consumer.poll(2)
        assert message is not None and message.error() is not None
        assert "_AUTO_OFFSET_RESET" in message.error().name()
        last = max(o for p, o, *_ in want if p == 0 and o < end)
        consumer.seek(TopicPartition("t", 0, last))  # the lake's last record, then the hole
        rows = []
        while (m := consumer.poll(0.5)) is not None and m.error() is None:
            rows.append((m.partition(), m.offset()))
        assert rows == [(0, last)]
        assert m is not None and m.error() is not None
    finally:
        consumer.close()


def _typed_rows(batches) -> list[dict]:
    rows = []
    for batch in batches:
        for r in batch.to_pylist():
            r["timestamp"] = int(r["timestamp"].timestamp() * 1000)
            rows.append(r)
    return sorted(rows, key=lambda r: r["offset"])


def test_a_typed_topic_with_an_added_column(cluster_path, admin, tmp_path):
    """A typed topic's own columns, and one added by schema evolution partway through the lake
    (older lake files lack it: null), come back as the log gave them; latestPerKey too."""
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
    lake = str(tmp_path / "typed")
    admin.create_topics([NewTopic("typed", 1, 1, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": lake},
                                  schema=schema)])["typed"].result()

    def produce(start, count, note=False):
        with Producer({"cluster": cluster_path}) as producer:
            for first in range(start, start + count, 10):
                ids = list(range(first, first + 10))
                keys = [(f"early{i}" if i < 10 else f"k{i % 7}").encode() for i in ids]  # early: the lake's only
                columns = {"key": keys, "id": ids, "name": [f"n{i}" for i in ids],
                           "timestamp": pa.array([STAMP_MS + i for i in ids], pa.timestamp("ms"))}
                if note:
                    columns["note"] = [f"note{i}" for i in ids]
                producer.produce_batch("typed", pa.table(columns), partition=0)

    def tier():
        cluster = Cluster.open(cluster_path)
        try:
            Tierer(cluster).run(["typed"], force=True)
        finally:
            cluster.close()

    produce(0, 200)
    tier()
    admin.evolve_schema("typed", schema.append(pa.field("note", pa.string())))
    produce(200, 200, note=True)
    tier()
    produce(400, 100, note=True)
    want = _typed_rows(_poll_batches(cluster_path, "typed"))  # the log's, before anything is deleted
    assert len(want) == 500
    cluster = Cluster.open(cluster_path)
    try:
        cluster.alter_topic_config("typed", {"retention.bytes": "1"})
        handle = cluster.partition("typed", 0)
        try:
            handle.leader_log.apply_retention()
        finally:
            handle.close()
        assert bounds(cluster, "typed", 0).log_start_offset > 200  # the lake holds the added column's start
    finally:
        cluster.close()
    options = {"cluster": cluster_path, "subscribe": "typed", "includeHeaders": "true", "reader": "python"}
    reader = KStreamBatchReader(options, _schema(options))
    got = _typed_rows(b for split in reader.partitions() for b in reader.read(split))
    assert got == want
    # Offsets for times are looked up in the lake first (record i has timestamp STAMP_MS + i).
    timed = {"startingTimestamp": str(STAMP_MS + 50), "endingTimestamp": str(STAMP_MS + 120), **options}
    reader = KStreamBatchReader(timed, _schema(timed))
    got = _typed_rows(b for split in reader.partitions() for b in reader.read(split))
    assert [r["offset"] for r in got] == list(range(50, 120))
    consumer = Consumer({"cluster": cluster_path})
    try:
        assert consumer.offsets_for_times([TopicPartition("typed", 0, STAMP_MS + 50)])[0].offset == 50
    finally:
        consumer.close()
    latest = {"latestPerKey": "true", **options}
    reader = KStreamBatchReader(latest, _schema(latest))
    got = _typed_rows(b for split in reader.partitions() for b in reader.read(split))
    newest = {r["key"]: r for r in want}
    assert b"early3" in newest  # a key only the lake holds
    assert got == sorted(newest.values(), key=lambda r: r["offset"])
    assert _typed_rows(_poll_batches(cluster_path, "typed")) == want


def test_a_split_planned_on_the_log_reads_the_lake_once_retention_deleted_it(cluster_path, make_topic, tmp_path):
    """Planned while the log held everything (no table opened), read after a tier pass and
    retention deleted the log below the lake end: the split reads those offsets from the
    table's latest version, and nothing is lost or doubled."""
    make_topic("t", PARTITIONS, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": str(tmp_path / "lake")})
    fill(cluster_path, "t", PARTITIONS, timestamp_ms=STAMP_MS)
    options = _options(cluster_path)
    reader = KStreamBatchReader(options, _schema(options))
    splits = reader.partitions()
    assert splits and all(split.split.lake is None for split in splits)
    want, edges = tier_then_trim(cluster_path, "t", PARTITIONS, more_rounds=0)
    assert all(log_start > 0 for _, log_start in edges.values())
    rows = []
    for split in splits:
        for batch in reader.read(split):
            rows += [(r["partition"], r["offset"], r["key"], r["value"],
                      tuple((h["key"], h["value"]) for h in (r["headers"] or [])),
                      int(r["timestamp"].timestamp() * 1000)) for r in batch.to_pylist()]
    assert sorted(rows) == want


def test_a_stream_reads_each_offset_once_while_the_lake_grows(cluster_path, make_topic, tmp_path):
    """The stream reader driven as Spark drives it (latestOffset with a small limit, then
    partitions and read per micro-batch) from earliest: part of the history is tiered and
    deleted before it starts, more is tiered and deleted between its micro-batches; each
    micro-batch pins the lake version it finds, and every offset comes once, as the oracle."""
    make_topic("t", PARTITIONS, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": str(tmp_path / "lake")})
    fill(cluster_path, "t", PARTITIONS, timestamp_ms=STAMP_MS)
    want, edges = tier_then_trim(cluster_path, "t", PARTITIONS, more_rounds=6, timestamp_ms=STAMP_MS)
    options = {**_options(cluster_path), "startingOffsets": "earliest", "maxOffsetsPerTrigger": "13"}
    reader = KStreamStreamReader(options, _schema(options))
    start = reader.initialOffset()
    assert start == {"t": {str(p): 0 for p in range(PARTITIONS)}}
    rows, batches, tiered_again = [], 0, False
    try:
        while True:
            end = reader.latestOffset(start, ReadMaxRows(13))
            if end == start:
                break
            for split in reader.partitions(start, end):
                for batch in reader.read(split):
                    rows += [(r["partition"], r["offset"], r["key"], r["value"],
                              tuple((h["key"], h["value"]) for h in (r["headers"] or [])),
                              int(r["timestamp"].timestamp() * 1000)) for r in batch.to_pylist()]
            reader.commit(end)
            start, batches = end, batches + 1
            if batches == 3 and not tiered_again:  # still in the first lake: tier the rest and delete it
                _, later = tier_then_trim(cluster_path, "t", PARTITIONS, more_rounds=0)
                assert all(later[p][1] > edges[p][1] for p in range(PARTITIONS))
                tiered_again = True
    finally:
        reader.stop()
    assert tiered_again and batches > 10
    assert len(rows) == len({(p, o) for p, o, *_ in rows})
    assert sorted(rows) == want


def _poll_batches(cluster_path: str, topic: str) -> list:
    """Every batch a Consumer's poll_batch() gives from offset 0 of partition 0, until one poll finds none."""
    consumer = Consumer({"cluster": cluster_path})
    consumer.assign([TopicPartition(topic, 0, 0)])
    try:
        batches = []
        while (batch := consumer.poll_batch(timeout=0.3)) is not None:
            batches.append(batch)
    finally:
        consumer.close()
    return batches

"""The union read through Spark (Python reader): a tiered topic whose local segments below the
lake end were deleted reads as the full log, in batch and as a stream crossing the lake/log
boundary (docs/TIERING.md "Union read")."""

from __future__ import annotations

import json
import time

import pytest
from tests.spark.jvm_support import JAR, NO_JAR_REASON
from tests.tiering.tier_helpers import SEGMENT_BYTES, fill, tier_then_trim

pytestmark = pytest.mark.spark
PARTITIONS = 2
STAMP_MS = int(time.time()) * 1000 - 3_600_000 + 123  # recent (time retention keeps it), with milliseconds


@pytest.fixture
def scene(cluster_path, make_topic, tmp_path):
    make_topic("t", PARTITIONS, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": str(tmp_path / "lake")})
    fill(cluster_path, "t", PARTITIONS, timestamp_ms=STAMP_MS)
    want, edges = tier_then_trim(cluster_path, "t", PARTITIONS, timestamp_ms=STAMP_MS)
    assert all(0 < log_start <= end for end, log_start in edges.values())
    return want, edges


def _load(spark, cluster_path, **options):
    reader = (spark.read.format("kstream").option("cluster", cluster_path).option("subscribe", "t")
              .option("includeHeaders", "true").option("reader", "python"))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def _rows(frame) -> list[tuple]:
    out = []
    for r in frame.collect():
        headers = tuple((h["key"], bytes(h["value"])) for h in (r["headers"] or []))
        out.append((r["partition"], r["offset"], bytes(r["key"]) if r["key"] is not None else None,
                    bytes(r["value"]), headers, int(r["timestamp"].timestamp() * 1000)))
    return sorted(out)


def test_batch_reads_of_lake_and_log(spark, cluster_path, scene):
    want, edges = scene
    frame = _load(spark, cluster_path)
    assert [f.name for f in frame.schema] == ["key", "value", "topic", "partition", "offset", "timestamp",
                                              "timestampType", "headers"]
    assert _rows(frame) == want
    assert {r.topic for r in frame.select("topic").distinct().collect()} == {"t"}
    assert {r.timestampType for r in frame.select("timestampType").distinct().collect()} == {0}
    start = {"t": {str(p): end - 6 for p, (end, _) in edges.items()}}
    stop = {"t": {str(p): end + 9 for p, (end, _) in edges.items()}}
    got = _rows(_load(spark, cluster_path, startingOffsets=json.dumps(start), endingOffsets=json.dumps(stop)))
    assert got and got == [row for row in want if end_of(start, row) <= row[1] < end_of(stop, row)]


def end_of(offsets, row):
    return offsets["t"][str(row[0])]


def test_a_stream_from_earliest_crosses_into_the_log(spark, cluster_path, scene, tmp_path):
    want, _ = scene
    output, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    query = (spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", "t")
             .option("reader", "python").option("includeHeaders", "true").option("startingOffsets", "earliest")
             .option("maxOffsetsPerTrigger", 17).load()
             .writeStream.format("parquet").option("path", output).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    batches = [p for p in query.recentProgress if p["numInputRows"]]
    assert len(batches) > 4
    written = spark.read.parquet(output)
    got = _rows(written)
    assert len(got) == len({(p, o) for p, o, *_ in got})  # each offset once
    assert got == want


@pytest.mark.skipif(JAR is None, reason=NO_JAR_REASON)
def test_both_readers_read_a_tiered_topic_alike(spark, cluster_path, scene):
    """reader=auto with the jar on the session: the JVM reader does the union read, and gives the
    Python reader's rows, a read from a timestamp too (looked up in the lake first: issue 24;
    tests/spark/test_jvm_union_lookups.py compares the readers over many times)."""
    want, _ = scene
    frame = _load(spark, cluster_path, reader="auto")
    assert "kstream JVM reader" in frame._jdf.queryExecution().executedPlan().toString()
    assert _rows(frame) == want
    by_time = _load(spark, cluster_path, reader="auto", startingTimestamp=str(STAMP_MS))
    assert "kstream JVM reader" in by_time._jdf.queryExecution().executedPlan().toString()
    assert _rows(by_time) == want  # every record has STAMP_MS

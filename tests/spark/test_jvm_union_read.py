"""The JVM reader's union read of a tiered topic (docs/JVM_READER.md, "Tiered topics"): offsets
below a partition's lake end come from its Delta table (pinned at planning), the rest from the
log, and a read returns the rows, offsets and schema a read of the whole log returned before
retention deleted what the lake holds.

The topic: two partitions of many small segments, each round three plain records (keys, a
header), a committed transaction and an aborted one (so the lake has gaps: aborted records and
markers are not in it). The oracle is a read of the whole log before retention deleted what the
lake holds: the JVM reader's before the topic tiered, or the Python reader's."""

from __future__ import annotations

import glob
import json
import os
import sys
import time

import pytest
from tests.spark.jvm_support import JAR, NO_JAR_REASON, load, rows

from kstream import Admin, NewTopic, Producer
from kstream.log.cluster.cluster import Cluster
from kstream.log.partition_bounds import bounds
from kstream.tiering import Tierer

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tiering"))
from tier_helpers import SEGMENT_BYTES, fill, retention_everywhere

pytestmark = [pytest.mark.spark, pytest.mark.jvm]
if JAR is None:
    pytest.skip(NO_JAR_REASON, allow_module_level=True)

PARTITIONS = 2


def _make_topic(cluster_path: str, config: dict[str, str]) -> None:
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("t", PARTITIONS, 1, config=config)])["t"].result()


def _tier(cluster_path: str) -> dict[int, int]:
    """One forced tier pass; each partition's lake end."""
    cluster = Cluster.open(cluster_path)
    try:
        return {done.partition: done.end_offset for done in Tierer(cluster).run(force=True)}
    finally:
        cluster.close()


def _retention(cluster_path: str) -> dict[int, int]:
    """Retention on every partition (retention.bytes=1: all it may delete); each log start after."""
    return retention_everywhere(cluster_path, "t", PARTITIONS)


def _offsets(spec: dict[int, int]) -> str:
    return json.dumps({"t": {str(p): o for p, o in spec.items()}})


def _read(spark, cluster_path, **options):
    frame = load(spark, cluster_path, "jvm", subscribe="t", includeHeaders="true", **options)
    assert "kstream JVM reader" in frame._jdf.queryExecution().executedPlan().toString()
    return frame.schema, rows(frame)


def _in(got_rows, ranges: dict[int, tuple[int, int]]):
    """The rows (partition at index 3, offset at 4) in each partition's [start, end)."""
    return [r for r in got_rows if ranges[r[3]][0] <= r[4] < ranges[r[3]][1]]


def _plain_tail(cluster_path: str) -> None:
    """Two small plain records per partition: the active segment (never tiered) holds rows."""
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for p in range(PARTITIONS):
            for i in range(2):
                producer.produce("t", f"tail-{p}-{i}".encode(), key=b"tail", partition=p)
            producer.flush()


@pytest.fixture
def tiered(spark, cluster_path, tmp_path):
    """The topic tiered and its local segments below the lake end deleted; the oracle read before."""
    lake = str(tmp_path / "lake")
    _make_topic(cluster_path, {"segment.bytes": SEGMENT_BYTES, "tier.delta.path": lake, "retention.bytes": "1"})
    fill(cluster_path, "t", PARTITIONS, rounds=6)
    _plain_tail(cluster_path)
    schema, before = _read(spark, cluster_path)
    ends = _tier(cluster_path)
    return cluster_path, lake, schema, before, ends


def test_the_union_read_equals_the_whole_log_read_before_retention(spark, tiered):
    cluster_path, _lake, schema, before, ends = tiered
    assert all(end > 0 for end in ends.values())
    latest = {p: max(r[4] for r in before if r[3] == p) + 1 for p in range(PARTITIONS)}
    assert all(ends[p] < latest[p] for p in range(PARTITIONS))  # a tail in the log
    # lake and log both hold [log start, lake end): read from the lake
    assert _read(spark, cluster_path) == (schema, before)
    starts = _retention(cluster_path)
    assert starts == ends  # every segment below the lake end is gone
    assert _read(spark, cluster_path) == (schema, before)
    explicit = {p: 0 for p in range(PARTITIONS)}  # below the log start, held by the lake: not data loss
    assert _read(spark, cluster_path, startingOffsets=_offsets(explicit), failOnDataLoss="true") == (schema, before)
    for name, ranges in {
        "straddling": {p: (ends[p] - 5, min(ends[p] + 3, latest[p])) for p in range(PARTITIONS)},
        "lake only, inside": {p: (2, ends[p] - 3) for p in range(PARTITIONS)},
        "the whole lake": {p: (0, ends[p]) for p in range(PARTITIONS)},
        "the log only": {p: (ends[p], latest[p]) for p in range(PARTITIONS)},
    }.items():
        got = _read(spark, cluster_path, startingOffsets=_offsets({p: r[0] for p, r in ranges.items()}),
                    endingOffsets=_offsets({p: r[1] for p, r in ranges.items()}))
        assert got == (schema, _in(before, ranges)), name
        assert got[1], name
    # Spark's own column pruning and an aggregate over the union
    frame = load(spark, cluster_path, "jvm", subscribe="t").select("offset", "partition")
    assert sorted((r.partition, r.offset) for r in frame.collect()) == sorted((r[3], r[4]) for r in before)
    assert load(spark, cluster_path, "jvm", subscribe="t").count() == len(before)


def test_the_lake_splits_are_one_per_file_and_pruned_by_statistics(spark, tiered):
    cluster_path, lake, _, _before, ends = tiered
    _retention(cluster_path)
    files = {p: len(glob.glob(os.path.join(lake, f"partition={p}", "*.parquet"))) for p in range(PARTITIONS)}
    whole = load(spark, cluster_path, "jvm", subscribe="t")
    assert whole.rdd.getNumPartitions() == sum(files.values()) + PARTITIONS  # each file, and each log tail
    tail = load(spark, cluster_path, "jvm", subscribe="t",
                startingOffsets=_offsets({p: ends[p] for p in range(PARTITIONS)}))
    assert tail.rdd.getNumPartitions() == PARTITIONS  # no lake file holds an offset at or past the lake end


def test_a_checkpoint_and_later_commits_with_the_json_below_it_cleaned_up(spark, cluster_path, tmp_path):
    """Several tier commits, a Delta checkpoint, the commit files it covers deleted (Delta's log
    cleanup), one more commit after it: the replay reads the checkpoint and the JSON after it."""
    from deltalake import DeltaTable

    lake = str(tmp_path / "lake")
    # no retention until the oracle is read (writers run it after their appends)
    _make_topic(cluster_path, {"segment.bytes": SEGMENT_BYTES, "tier.delta.path": lake})
    for _ in range(3):
        fill(cluster_path, "t", PARTITIONS, rounds=2)
        _tier(cluster_path)
    table = DeltaTable(lake)
    table.create_checkpoint()
    checkpoint = table.version()
    assert checkpoint >= 2
    for v in range(checkpoint):  # Delta's log cleanup keeps the checkpoint's own commit
        os.remove(os.path.join(lake, "_delta_log", f"{v:020d}.json"))
    fill(cluster_path, "t", PARTITIONS, rounds=2)
    ends = _tier(cluster_path)
    assert DeltaTable(lake).version() == checkpoint + 1
    # the oracle: the Python reader's read of the whole log, before retention
    want = rows(load(spark, cluster_path, "python", subscribe="t", includeHeaders="true"))
    _alter(cluster_path, "retention.bytes", "1")
    starts = _retention(cluster_path)
    assert starts == ends
    got = _read(spark, cluster_path)[1]
    assert got == want
    assert min(r[4] for r in got if r[3] == 0) < starts[0]  # the lake part was read


def test_offsets_deleted_before_the_topic_tiered_are_data_loss(spark, cluster_path, tmp_path):
    """A topic tiered after retention deleted its first segments: the lake starts at that log
    start; below it is data loss (failOnDataLoss), earliest is the lake's first offset."""
    lake = str(tmp_path / "lake")
    _make_topic(cluster_path, {"segment.bytes": SEGMENT_BYTES, "retention.bytes": "1"})
    fill(cluster_path, "t", PARTITIONS, rounds=2)
    deleted_to = _retention(cluster_path)
    assert all(start > 0 for start in deleted_to.values())
    _alter(cluster_path, "tier.delta.path", lake)  # from now on retention keeps what the lake lacks
    fill(cluster_path, "t", PARTITIONS, rounds=4)
    _plain_tail(cluster_path)
    _, before = _read(spark, cluster_path)
    assert all(min(r[4] for r in before if r[3] == p) >= deleted_to[p] for p in range(PARTITIONS))
    ends = _tier(cluster_path)
    assert _retention(cluster_path) == ends
    assert _read(spark, cluster_path)[1] == before  # earliest: the lake's first offset
    start_zero = _offsets({p: 0 for p in range(PARTITIONS)})
    with pytest.raises(Exception, match=r"OffsetOutOfRangeError: t-\d: offsets 0\.\.\d+ were deleted by retention"):
        _read(spark, cluster_path, startingOffsets=start_zero, failOnDataLoss="true")
    assert _read(spark, cluster_path, startingOffsets=start_zero, failOnDataLoss="false")[1] == before


def _alter(cluster_path: str, name: str, value: str) -> None:
    with Admin({"cluster": cluster_path}) as admin:
        admin.alter_topic_config("t", {name: value})


def test_a_stream_from_earliest_crosses_from_the_lake_into_the_log(spark, tiered, tmp_path):
    cluster_path, _, _, before, _ends = tiered
    _retention(cluster_path)
    name = f"union_{int(time.time() * 1000)}"
    query = (spark.readStream.format("kstream").option("cluster", cluster_path).option("reader", "jvm")
             .option("subscribe", "t").option("startingOffsets", "earliest").option("failOnDataLoss", "true")
             .option("maxOffsetsPerTrigger", "7")
             .load().writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    assert query.awaitTermination(180)
    got = sorted((r.partition, r.offset, r.value) for r in spark.sql(f"SELECT * FROM {name}").collect())
    assert got == sorted((r[3], r[4], r[1]) for r in before)  # each offset once
    assert len(query.recentProgress) > 2
    assert "kstream JVM reader" in str(query.lastProgress["sources"][0]["description"])


def test_a_typed_topic_reads_its_own_columns_from_the_lake(spark, cluster_path, tmp_path):
    import pyarrow as pa

    lake = str(tmp_path / "lake")
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("t", 1, 1, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": lake,
                                                         "retention.bytes": "1"},
                                      schema=pa.schema([("id", pa.int64()), ("name", pa.string())]))])["t"].result()
        with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
            for i in range(0, 200, 10):
                producer.produce_batch("t", pa.table({"id": list(range(i, i + 10)),
                                                      "name": [f"n{j}" for j in range(i, i + 10)]}))
                producer.flush()
        admin.evolve_schema("t", pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())]))
        with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
            for i in range(200, 260, 10):
                producer.produce_batch("t", pa.table({"id": list(range(i, i + 10)),
                                                      "name": [f"n{j}" for j in range(i, i + 10)],
                                                      "score": [j / 2 for j in range(i, i + 10)]}))
                producer.flush()
    before = rows(load(spark, cluster_path, "jvm", subscribe="t"))
    schema = load(spark, cluster_path, "jvm", subscribe="t").schema
    end = _tier_one(cluster_path)
    assert _retention_one(cluster_path) == end > 200  # the lake has files with and without 'score'
    frame = load(spark, cluster_path, "jvm", subscribe="t")
    assert frame.schema == schema and rows(frame) == before
    pruned = load(spark, cluster_path, "jvm", subscribe="t", columns="score,offset")
    assert sorted((r.offset, r.score) for r in pruned.collect()) == sorted((r[6], r[3]) for r in before)


def _tier_one(cluster_path: str) -> int:
    cluster = Cluster.open(cluster_path)
    try:
        return Tierer(cluster).run(force=True)[0].end_offset
    finally:
        cluster.close()


def _retention_one(cluster_path: str) -> int:
    cluster = Cluster.open(cluster_path)
    try:
        handle = cluster.partition("t", 0)
        try:
            handle.leader_log.apply_retention()
        finally:
            handle.close()
        return bounds(cluster, "t", 0).log_start_offset
    finally:
        cluster.close()

"""jobs/topic_to_delta.py: a topic landed in a Delta table exactly once, the group's offsets
following it; a replayed batch is skipped; a crash between the table commit and the group commit,
then a restart with a fresh checkpoint, duplicates nothing."""

from __future__ import annotations

import importlib.util
import os

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from helpers import committed_offsets, produce_range

pytestmark = pytest.mark.spark

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
spec = importlib.util.spec_from_file_location("topic_to_delta", os.path.join(ROOT, "jobs", "topic_to_delta.py"))
job = importlib.util.module_from_spec(spec)
spec.loader.exec_module(job)


def produce(cluster_path, start, count):
    produce_range(cluster_path, "events", start, count, prefix="e", partitions=3, config={"acks": "1"})


def landed(table):
    rows = [r for path in DeltaTable(table).file_uris() for r in pq.read_table(path, columns=["partition", "offset"])
            .to_pylist()]
    return sorted((r["partition"], r["offset"]) for r in rows)


def group_offsets(cluster_path):
    return {p: o for (_, p), o in committed_offsets(cluster_path, "landing").items()}


def test_land_replay_crash_and_fresh_checkpoint(spark, cluster_path, make_topic, tmp_path):
    make_topic("events", partitions=3)
    table = str(tmp_path / "table")
    produce(cluster_path, 0, 90)
    job.run(spark, cluster_path, "events", table, "landing", str(tmp_path / "cp1"), available_now=True
            ).awaitTermination()
    assert landed(table) == [(p, o) for p in range(3) for o in range(30)]
    assert group_offsets(cluster_path) == {0: 30, 1: 30, 2: 30}

    # A replayed batch (same app id and batch id) is skipped (checked on a table of its own).
    other = str(tmp_path / "other")
    lander = job.batch_lander(other, lambda: "landing:replayed", {})
    frame = (spark.read.format("kstream").option("cluster", cluster_path).option("subscribe", "events")
             .option("startingOffsets", "earliest").load())
    lander(frame, 7)
    version = DeltaTable(other).version()
    lander(frame, 7)
    lander(frame, 6)
    assert DeltaTable(other).version() == version and len(landed(other)) == 90
    assert job.stored_offsets(other) == {"events": {"0": 30, "1": 30, "2": 30}}

    # A crash after the table commit, before the group commit: new records land, the group does not move.
    produce(cluster_path, 90, 30)
    new = (spark.read.format("kstream").option("cluster", cluster_path).option("subscribe", "events")
           .option("startingOffsets", '{"events":{"0":30,"1":30,"2":30}}').load())
    job.batch_lander(table, lambda: "landing:crashed-query", job.stored_offsets(table))(new, 0)
    assert group_offsets(cluster_path) == {0: 30, 1: 30, 2: 30}
    produce(cluster_path, 120, 30)
    job.run(spark, cluster_path, "events", table, "landing", str(tmp_path / "cp2"), available_now=True
            ).awaitTermination()
    assert landed(table) == [(p, o) for p in range(3) for o in range(50)]  # each record once
    assert group_offsets(cluster_path) == {0: 50, 1: 50, 2: 50}

"""format("kstream") streaming writes in Spark's three output modes (issue 20, item 1).

``update`` needs the kstream jar on the session: pyspark 4.3's Python write builder cannot take
it, and the jar's provider adds it around the Python sink (docs/JVM_READER.md). Each mode is
exactly once as the sink always is: a micro-batch Spark replays after a crash writes nothing
twice."""

from __future__ import annotations

import os

import pytest
from tests.spark.jvm_support import JAR, NO_JAR_REASON

from helpers import consume_values
from kstream import Producer

pytestmark = pytest.mark.spark


def produce_keys(cluster_path: str, topic: str, keys: str) -> None:
    """One record per character of ``keys``, keyed by it."""
    with Producer({"cluster": cluster_path}) as producer:
        for key in keys:
            producer.produce(topic, b"click", key=key.encode())


def counts_query(spark, cluster_path: str, source: str, sink: str, checkpoint: str, mode: str):  # type: ignore[no-untyped-def]
    """Clicks per key, written as "key:count" values to ``sink`` in output mode ``mode``; runs
    what is there (availableNow) and returns the finished query."""
    query = (spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", source)
             .option("startingOffsets", "earliest").load()
             .groupBy("key").count()
             .selectExpr("key", "concat(cast(key as string), ':', cast(count as string)) as value")
             .writeStream.format("kstream").option("cluster", cluster_path).option("topic", sink)
             .option("checkpointLocation", checkpoint).outputMode(mode).trigger(availableNow=True).start())
    query.awaitTermination()
    return query


def forget_last_commit(checkpoint: str) -> int:
    """Deletes the checkpoint's newest commit-log entry, as a crash after the sink's commit and
    before Spark's does: the restarted query replays that batch. Returns its id."""
    commits = os.path.join(checkpoint, "commits")
    last = max(int(name) for name in os.listdir(commits) if name.isdigit())
    for name in (str(last), f".{last}.crc"):
        if os.path.exists(os.path.join(commits, name)):
            os.remove(os.path.join(commits, name))
    return last


@pytest.mark.jvm
@pytest.mark.skipif(JAR is None, reason=NO_JAR_REASON)
def test_update_mode_writes_each_batchs_changed_counts_exactly_once_across_restarts(
        spark, cluster_path, make_topic, tmp_path):
    make_topic("clicks", 1)
    make_topic("counts", 1)
    checkpoint = str(tmp_path / "cp")
    produce_keys(cluster_path, "clicks", "aaabb")
    counts_query(spark, cluster_path, "clicks", "counts", checkpoint, "update")
    first = consume_values(cluster_path, "counts", 1)
    assert sorted(first) == [b"a:3", b"b:2"]

    replayed = forget_last_commit(checkpoint)  # the restart replays the batch just written
    produce_keys(cluster_path, "clicks", "ac")
    query = counts_query(spark, cluster_path, "clicks", "counts", checkpoint, "update")
    assert query.lastProgress is not None and query.lastProgress["batchId"] > replayed
    values = consume_values(cluster_path, "counts", 1)
    # The replayed batch wrote nothing twice; the next batch holds only the keys it changed (b
    # is not written again), with their new counts: update mode, not complete.
    assert values[:2] == first
    assert sorted(values[2:]) == [b"a:4", b"c:1"]


@pytest.mark.jvm
@pytest.mark.skipif(JAR is None, reason=NO_JAR_REASON)
def test_complete_mode_still_writes_every_count_through_the_jars_provider(spark, cluster_path, make_topic, tmp_path):
    make_topic("clicks", 1)
    make_topic("totals", 1)
    checkpoint = str(tmp_path / "cp")
    produce_keys(cluster_path, "clicks", "aab")
    counts_query(spark, cluster_path, "clicks", "totals", checkpoint, "complete")
    produce_keys(cluster_path, "clicks", "c")
    counts_query(spark, cluster_path, "clicks", "totals", checkpoint, "complete")
    values = consume_values(cluster_path, "totals", 1)
    assert sorted(values[:2]) == [b"a:2", b"b:1"]
    assert sorted(values[2:]) == [b"a:2", b"b:1", b"c:1"]

"""Reader options beyond offsets: timestamps as positions, admission control (maxBytesPerTrigger,
minOffsetsPerTrigger + maxTriggerDelay) and splitting big partitions (maxRecordsPerPartition,
minPartitions) on record-batch boundaries."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

from kstream import Producer

pytestmark = pytest.mark.spark


def fill(cluster_path, make_topic, partitions=2, batches=10, per_batch=50, base_ts=1_000_000):
    """``batches`` record batches per partition; record i of partition p has timestamp base_ts + i*1000."""
    make_topic("t", partitions)
    with Producer({"cluster": cluster_path, "acks": "1"}) as producer:
        for p in range(partitions):
            for b in range(batches):
                offsets = range(b * per_batch, (b + 1) * per_batch)
                producer.produce_batch("t", pa.table({
                    "value": [f"p{p}-{i}".encode() for i in offsets],
                    "timestamp": pa.array([base_ts + i * 1000 for i in offsets], pa.timestamp("ms"))}),
                    partition=p)


def read(spark, cluster_path, **options):
    reader = spark.read.format("kstream").option("cluster", cluster_path).option("subscribe", "t")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def offsets(frame):
    return sorted((r.partition, r.offset) for r in frame.select("partition", "offset").collect())


def test_timestamps_as_positions(spark, cluster_path, make_topic):
    fill(cluster_path, make_topic, batches=2)  # offsets 0..99, timestamps 1_000_000 + offset s
    got = offsets(read(spark, cluster_path, startingTimestamp=1_050_000, endingTimestamp=1_060_500))
    assert got == [(p, o) for p in range(2) for o in range(50, 61)]
    by_partition = '{"t":{"0":1_010_000,"1":1_090_000}}'.replace("_", "")
    got = offsets(read(spark, cluster_path, startingOffsetsByTimestamp=by_partition))
    assert got == [(0, o) for o in range(10, 100)] + [(1, o) for o in range(90, 100)]
    with pytest.raises(Exception, match="no record at or after timestamp"):
        read(spark, cluster_path, startingTimestamp=9_000_000).collect()
    late = read(spark, cluster_path, startingTimestamp=9_000_000, startingOffsetsByTimestampStrategy="latest")
    assert late.count() == 0


def test_max_records_per_partition_and_min_partitions_cut_on_batch_boundaries(spark, cluster_path, make_topic):
    fill(cluster_path, make_topic, partitions=2, batches=10, per_batch=50)
    whole = read(spark, cluster_path)
    assert whole.rdd.getNumPartitions() == 2
    split = read(spark, cluster_path, maxRecordsPerPartition=120)  # 5 pieces of 100, cut at batch starts
    assert split.rdd.getNumPartitions() == 2 * 5
    assert offsets(split) == offsets(whole)
    sizes = split.rdd.glom().map(len).collect()
    assert all(s % 50 == 0 for s in sizes) and max(sizes) <= 150
    more = read(spark, cluster_path, minPartitions=6)
    assert more.rdd.getNumPartitions() >= 6 and offsets(more) == offsets(whole)


def test_max_bytes_per_trigger_and_min_offsets_per_trigger(spark, cluster_path, make_topic, tmp_path):
    fill(cluster_path, make_topic, partitions=1, batches=8, per_batch=50)
    query = (spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", "t")
             .option("startingOffsets", "earliest").option("maxBytesPerTrigger", 1).load()
             .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "bytes"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sizes == [50] * 8  # one record batch per trigger: the smallest budget still progresses

    query = (spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", "t")
             .option("startingOffsets", "latest").option("minOffsetsPerTrigger", 100)
             .option("maxTriggerDelay", "1h").load()
             .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "min"))
             .trigger(processingTime="100 milliseconds").start())
    try:
        with Producer({"cluster": cluster_path, "acks": "1"}) as producer:
            while not query.recentProgress:
                time.sleep(0.1)
            producer.produce_batch("t", pa.table({"value": [b"x"] * 60}), partition=0)
            time.sleep(2)  # many triggers pass: 60 < 100 records, so no batch
            assert sum(p["numInputRows"] for p in query.recentProgress) == 0
            producer.produce_batch("t", pa.table({"value": [b"y"] * 40}), partition=0)
        deadline = time.monotonic() + 60
        while sum(p["numInputRows"] for p in query.recentProgress) < 100:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [100]
    finally:
        query.stop()

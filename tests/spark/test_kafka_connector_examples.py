"""The Spark Kafka connector's documented Python examples (Structured Streaming + Kafka
Integration Guide), run on kstream.

Each test holds the guide's snippet with only these changes: ``format("kafka")`` ->
``format("kstream")`` and ``.option("kafka.bootstrap.servers", "host1:port1,host2:port2")``
-> ``.option("cluster", cluster)``. One more, forced by pyspark: a batch write says
``.mode("append")``, because pyspark refuses the default save mode (ErrorIfExists) for
every Python data source before the sink is asked. Streaming writes get their checkpoint
from ``spark.sql.streaming.checkpointLocation`` (the guide's snippets leave it to the
session too); without ``.option("checkpointLocation")`` the kstream sink is at least once,
as the connector's is. What runs around a snippet (topics, records, starting and
stopping queries, assertions) is the test's own.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os

import pytest

from helpers import consume_values
from kstream import Producer

pytestmark = pytest.mark.spark

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
_spec = importlib.util.spec_from_file_location("kafka_connector_port",
                                               os.path.join(ROOT, "jobs", "kafka_connector_port.py"))
port_job = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(port_job)

_query_names = itertools.count()


@pytest.fixture
def cluster(cluster_path, make_topic):
    """topic1 (2 partitions, 60 records each) and topic2 (1 partition, 10 records), as the
    guide's offsets JSON needs them; records carry a header."""
    make_topic("topic1", 2)
    make_topic("topic2", 1)
    produce(cluster_path, "topic1", 60, partitions=2)
    produce(cluster_path, "topic2", 10, partitions=1)
    return cluster_path


def produce(cluster_path, topic, per_partition, partitions, prefix="v"):
    with Producer({"cluster": cluster_path}) as producer:
        for p in range(partitions):
            for i in range(per_partition):
                producer.produce(topic, f"{prefix}{p}-{i}".encode(), key=f"k{i}".encode(), partition=p,
                                 headers=[("source", topic.encode())])


def rows_of(frame):
    return sorted(tuple(r) for r in frame.collect())


def new_rows_of_stream(spark, cluster_path, df, produce_new):
    """Run a streaming DataFrame into a memory table, add records, return what it read:
    the guide's streaming reads start at latest, so only records produced after the start."""
    name = f"kafka_example_{next(_query_names)}"
    query = df.writeStream.format("memory").queryName(name).start()
    try:
        query.processAllAvailable()
        produce_new()
        query.processAllAvailable()
        return spark.sql(f"SELECT * FROM {name}").collect()
    finally:
        query.stop()


@pytest.fixture
def session_checkpoint(spark, tmp_path):
    """spark.sql.streaming.checkpointLocation set for the test (the guide's streaming writes
    name no checkpoint)."""
    spark.conf.set("spark.sql.streaming.checkpointLocation", str(tmp_path / "checkpoints"))
    yield
    spark.conf.unset("spark.sql.streaming.checkpointLocation")


def test_streaming_reads_subscribe_headers_multiple_topics_and_pattern(spark, cluster):
    # Subscribe to 1 topic
    df = spark \
      .readStream \
      .format("kstream") \
      .option("cluster", cluster) \
      .option("subscribe", "topic1") \
      .load()
    df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")
    one = df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")

    # Subscribe to 1 topic, with headers
    df = spark \
      .readStream \
      .format("kstream") \
      .option("cluster", cluster) \
      .option("subscribe", "topic1") \
      .option("includeHeaders", "true") \
      .load()
    df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)", "headers")
    with_headers = df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)", "headers")

    # Subscribe to multiple topics
    df = spark \
      .readStream \
      .format("kstream") \
      .option("cluster", cluster) \
      .option("subscribe", "topic1,topic2") \
      .load()
    df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")
    several = df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")

    # Subscribe to a pattern
    df = spark \
      .readStream \
      .format("kstream") \
      .option("cluster", cluster) \
      .option("subscribePattern", "topic.*") \
      .load()
    df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")
    pattern = df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")

    # All four in one query (one start and stop instead of four), each tagged.
    union = one.selectExpr("'one' AS q", "key", "value").unionByName(
        several.selectExpr("'several' AS q", "key", "value")).unionByName(
        pattern.selectExpr("'pattern' AS q", "key", "value")).unionByName(
        with_headers.selectExpr("'headers' AS q", "key", "concat(value, '|', headers[0].key, '=', "
                                "CAST(headers[0].value AS STRING)) AS value"))

    def add_records():
        produce(cluster, "topic1", 2, partitions=2, prefix="new")
        produce(cluster, "topic2", 1, partitions=1, prefix="new")

    got = new_rows_of_stream(spark, cluster, union, add_records)
    by_query = {q: sorted((r.key, r.value) for r in got if r.q == q) for q in ("one", "several", "pattern", "headers")}
    topic1 = [(f"k{i}", f"new{p}-{i}") for p in range(2) for i in range(2)]
    topic2 = [("k0", "new0-0")]
    assert by_query["one"] == sorted(topic1)  # the default startingOffsets is latest: only the new records
    assert by_query["several"] == by_query["pattern"] == sorted(topic1 + topic2)
    assert by_query["headers"] == sorted((k, f"{v}|source=topic1") for k, v in topic1)


def test_batch_reads_with_default_explicit_and_pattern_offsets(spark, cluster):
    # Subscribe to 1 topic defaults to the earliest and latest offsets
    df = spark \
      .read \
      .format("kstream") \
      .option("cluster", cluster) \
      .option("subscribe", "topic1") \
      .load()
    df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")
    assert df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)").count() == 120

    # Subscribe to multiple topics, specifying explicit Kafka offsets
    df = spark \
      .read \
      .format("kstream") \
      .option("cluster", cluster) \
      .option("subscribe", "topic1,topic2") \
      .option("startingOffsets", """{"topic1":{"0":23,"1":-2},"topic2":{"0":-2}}""") \
      .option("endingOffsets", """{"topic1":{"0":50,"1":-1},"topic2":{"0":-1}}""") \
      .load()
    df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")
    got = df.groupBy("topic", "partition").agg({"offset": "min", "*": "count"}).collect()
    assert sorted((r.topic, r.partition, r["min(offset)"], r["count(1)"]) for r in got) == [
        ("topic1", 0, 23, 27), ("topic1", 1, 0, 60), ("topic2", 0, 0, 10)]

    # Subscribe to a pattern, at the earliest and latest offsets
    df = spark \
      .read \
      .format("kstream") \
      .option("cluster", cluster) \
      .option("subscribePattern", "topic.*") \
      .option("startingOffsets", "earliest") \
      .option("endingOffsets", "latest") \
      .load()
    df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")
    assert df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)").count() == 130

    # The guide's option table: assign, a JSON map of topic to partitions
    df = spark \
      .read \
      .format("kstream") \
      .option("cluster", cluster) \
      .option("assign", """{"topic1":[1],"topic2":[0]}""") \
      .load()
    assert rows_of(df.groupBy("topic", "partition").count()) == [("topic1", 1, 60), ("topic2", 0, 10)]


def test_streaming_writes_with_the_topic_option_and_with_a_topic_column(spark, cluster, make_topic,
                                                                        session_checkpoint):
    make_topic("events", 1)
    produce(cluster, "events", 3, partitions=1, prefix="e")
    df = spark.readStream.format("kstream").option("cluster", cluster).option("subscribe", "events") \
        .option("startingOffsets", "earliest").load()
    before = {t: sorted(consume_values(cluster, t, n)) for t, n in (("topic1", 2), ("topic2", 1))}

    # Write key-value data from a DataFrame to a specific Kafka topic specified in an option
    ds = df \
      .selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)") \
      .writeStream \
      .format("kstream") \
      .option("cluster", cluster) \
      .option("topic", "topic1") \
      .start()
    ds.processAllAvailable()
    ds.stop()
    added = sorted(consume_values(cluster, "topic1", 2))
    for value in before["topic1"]:
        added.remove(value)
    assert added == [b"e0-0", b"e0-1", b"e0-2"]

    df = df.selectExpr("CASE WHEN key = 'k0' THEN 'topic1' ELSE 'topic2' END AS topic", "key", "value")
    # Write key-value data from a DataFrame to Kafka using a topic specified in the data
    ds = df \
      .selectExpr("topic", "CAST(key AS STRING)", "CAST(value AS STRING)") \
      .writeStream \
      .format("kstream") \
      .option("cluster", cluster) \
      .start()
    ds.processAllAvailable()
    ds.stop()
    assert len(consume_values(cluster, "topic1", 2)) == len(before["topic1"]) + 3 + 1  # e0-0 (key k0) again
    added = sorted(consume_values(cluster, "topic2", 1))
    for value in before["topic2"]:
        added.remove(value)
    assert added == [b"e0-1", b"e0-2"]


def test_batch_writes_with_the_topic_option_and_with_a_topic_column(spark, cluster_path, make_topic):
    make_topic("topic1", 1)
    make_topic("topic2", 1)
    cluster = cluster_path
    df = spark.createDataFrame([("topic1", b"k1", b"one"), ("topic2", b"k2", b"two")],
                               "topic string, key binary, value binary")

    # Write key-value data from a DataFrame to a specific Kafka topic specified in an option
    df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)") \
      .write \
      .format("kstream") \
      .option("cluster", cluster) \
      .option("topic", "topic1") \
      .mode("append") \
      .save()
    assert sorted(consume_values(cluster, "topic1", 1)) == [b"one", b"two"]

    # Write key-value data from a DataFrame to Kafka using a topic specified in the data
    df.selectExpr("topic", "CAST(key AS STRING)", "CAST(value AS STRING)") \
      .write \
      .format("kstream") \
      .option("cluster", cluster) \
      .mode("append") \
      .save()
    assert sorted(consume_values(cluster, "topic1", 1)) == [b"one", b"one", b"two"]
    assert consume_values(cluster, "topic2", 1) == [b"two"]

    # Headers go with the rows (the sink's optional 'headers' column) and read back.
    read = spark.read.format("kstream").option("cluster", cluster).option("subscribe", "topic2") \
        .option("includeHeaders", "true").load()
    read.selectExpr("key", "value", "array(struct('trace' AS key, CAST('t1' AS BINARY) AS value)) AS headers") \
        .write.format("kstream").option("cluster", cluster).option("topic", "topic2").mode("append").save()
    read = spark.read.format("kstream").option("cluster", cluster).option("subscribe", "topic2") \
        .option("includeHeaders", "true").load()  # a new DataFrame: a batch read's range is planned once
    again = read.where("offset >= 1").selectExpr("CAST(value AS STRING)", "headers[0].key",
                                                 "CAST(headers[0].value AS STRING)")
    assert [tuple(r) for r in again.collect()] == [("two", "trace", "t1")]


def test_a_ported_connector_job_routes_each_order_once_across_a_restart(spark, cluster_path, make_topic, tmp_path):
    """jobs/kafka_connector_port.py: a connector-style job (kafka.* settings, kafka.group.id, a
    topic column) moved by the two edits; run, more input, run again from its checkpoint."""
    for topic, partitions in (("orders", 2), ("orders-eu", 1), ("orders-us", 1)):
        make_topic(topic, partitions)

    def add_orders(start, count):
        with Producer({"cluster": cluster_path}) as producer:
            for i in range(start, start + count):
                order = {"id": f"o{i}", "region": "eu" if i % 2 else "us", "amount": float(i),
                         "status": "cancelled" if i % 5 == 0 else "open"}
                producer.produce("orders", json.dumps(order).encode(), key=f"o{i}".encode())

    def routed(region):
        return sorted(json.loads(v)["id"] for v in consume_values(cluster_path, f"orders-{region}", 1))

    checkpoint = str(tmp_path / "cp")
    add_orders(0, 20)
    port_job.run(spark, cluster_path, "orders", checkpoint).awaitTermination()
    add_orders(20, 10)
    port_job.run(spark, cluster_path, "orders", checkpoint).awaitTermination()
    kept = [i for i in range(30) if i % 5]
    assert routed("eu") == sorted(f"o{i}" for i in kept if i % 2)
    assert routed("us") == sorted(f"o{i}" for i in kept if not i % 2)

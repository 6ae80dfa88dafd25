"""Spark's Kafka connector (spark-sql-kafka-0-10, the version `make kafka` resolves: 4.2.0, since
Maven Central serves no 4.3.0) on pyspark 4.3 against the session's Apache Kafka broker: the smoke
test docs/KAFKA_PEER.md names. Batch write, batch read, streaming read (Trigger.AvailableNow) and
streaming write, each checked through confluent-kafka on the other side, so a connector that
silently wrote or read nothing fails here.

The connector's jars are on the shared test session (tests/spark/conftest.py) beside kstream's
own, so one session serves both: the last tests move records between format("kstream") and
format("kafka") in one job and check each name still reaches its own provider.
"""

from __future__ import annotations

import json
import uuid

import pytest
from click.testing import CliRunner

from helpers import consume_values
from kstream import Producer
from kstream.jars import JARS_CONF, jar_path
from kstream.tools.cli.main import cli
from kstream.tools.perf.kafka_peer import CONNECTOR_JAR_GLOB, connector_version, create_topic

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

TIMEOUT_S = 120


@pytest.fixture
def kafka(spark, kafka_broker):
    """The broker's bootstrap address, once the session is known to carry the connector."""
    jars = spark.sparkContext.getConf().get(JARS_CONF, "")
    if "spark-sql-kafka-0-10_2.13-" not in jars:
        pytest.skip(f"Spark's Kafka connector is not on the session: no {CONNECTOR_JAR_GLOB} resolved (make kafka)")
    return kafka_broker


@pytest.fixture
def topic(kafka):
    """A new topic name on the shared broker."""
    return f"spark-{uuid.uuid4().hex[:12]}"


def produce(bootstrap: str, topic: str, count: int, partitions: int, prefix: str = "v") -> dict:
    """``count`` records (key k<i>, value <prefix><i>, a header) to partition i % partitions through
    confluent-kafka; returns {(partition, offset): (key, value)} from the delivery reports."""
    from confluent_kafka import Producer as KafkaProducer

    delivered: dict = {}

    def report(error, message):  # type: ignore[no-untyped-def]
        assert error is None, error
        delivered[(message.partition(), message.offset())] = (message.key(), message.value())

    producer = KafkaProducer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, f"{prefix}{i}".encode(), f"k{i}".encode(), partition=i % partitions,
                         headers=[("n", str(i).encode())], on_delivery=report)
    assert producer.flush(30) == 0
    assert len(delivered) == count
    return delivered


def consume(bootstrap: str, topic: str, partitions: int, count: int) -> list[tuple]:
    """(partition, offset, key, value) of the first ``count`` records of every partition, through
    confluent-kafka (no group), sorted; fails after TIMEOUT_S with what arrived."""
    import time

    from confluent_kafka import Consumer as KafkaConsumer
    from confluent_kafka import TopicPartition

    consumer = KafkaConsumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list[tuple] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            got.append((message.partition(), message.offset(), message.key(), message.value()))
    finally:
        consumer.close()
    assert len(got) == count, f"read {len(got)} of {count} records from {topic}"
    return sorted(got)


def kafka_read(spark, bootstrap: str, **options):  # type: ignore[no-untyped-def]
    frame = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        frame = frame.option(key, value)
    return frame.load()


def run_available_now(writer, tmp_path) -> object:  # type: ignore[no-untyped-def]
    query = (writer.option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(TIMEOUT_S), "the availableNow query did not finish"
    assert query.exception() is None
    return query


def test_batch_write(spark, kafka, topic):
    create_topic(kafka, topic, partitions=2)
    rows = [(f"k{i}", f"v{i}", i % 2) for i in range(40)]
    (spark.createDataFrame(rows, "key string, value string, partition int").repartition(1)
     .write.format("kafka").option("kafka.bootstrap.servers", kafka).option("topic", topic).save())

    got = consume(kafka, topic, 2, 40)
    assert sorted((p, k, v) for p, _, k, v in got) == sorted((p, k.encode(), v.encode()) for k, v, p in rows)
    # one writer task, in order: each partition's offsets 0..19 carry its rows in the DataFrame's order
    assert [v for p, _, _, v in got if p == 0] == [f"v{i}".encode() for i in range(0, 40, 2)]


def test_batch_read(spark, kafka, topic):
    create_topic(kafka, topic, partitions=3)
    delivered = produce(kafka, topic, 60, partitions=3)

    frame = kafka_read(spark, kafka, subscribe=topic, includeHeaders="true")
    assert frame.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
                             "headers"]
    rows = frame.collect()
    assert {(r.partition, r.offset): (bytes(r.key), bytes(r.value)) for r in rows} == delivered
    assert {r.topic for r in rows} == {topic}
    assert all([(h.key, bytes(h.value)) for h in r.headers] == [("n", bytes(r.value)[1:])] for r in rows)


@pytest.mark.slow
def test_batch_read_range(spark, kafka, topic):
    create_topic(kafka, topic, partitions=3)
    produce(kafka, topic, 60, partitions=3)
    # partition 1, offsets 5 to 9 (endingOffsets exclusive)
    ranged = kafka_read(spark, kafka, assign=f'{{"{topic}":[1]}}',
                        startingOffsets=f'{{"{topic}":{{"1":5}}}}', endingOffsets=f'{{"{topic}":{{"1":10}}}}')
    assert sorted((r.partition, r.offset) for r in ranged.collect()) == [(1, o) for o in range(5, 10)]


def drain_kafka(spark, bootstrap: str, topic: str, tmp_path):  # type: ignore[no-untyped-def]
    """The topic's values through a Kafka stream (availableNow, 20 records a micro-batch) into a Parquet
    file sink (which restarts from its checkpoint, as the memory sink cannot); returns every value
    the sink holds and the micro-batches' sizes of this run."""
    stream = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", 20).load())
    query = (stream.selectExpr("CAST(value AS STRING) AS v").writeStream.format("parquet")
             .option("path", str(tmp_path / "out")).option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(TIMEOUT_S), "the availableNow query did not finish"
    assert query.exception() is None
    batches = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    return sorted(r.v for r in spark.read.parquet(str(tmp_path / "out")).collect()), batches


def test_streaming_read_available_now(spark, kafka, topic, tmp_path):
    create_topic(kafka, topic, partitions=2)
    produce(kafka, topic, 50, partitions=2)
    values, batches = drain_kafka(spark, kafka, topic, tmp_path)
    assert values == sorted(f"v{i}" for i in range(50))
    assert sum(batches) == 50 and max(batches) <= 20  # maxOffsetsPerTrigger split it into micro-batches


@pytest.mark.slow
def test_streaming_read_restarts_from_its_checkpoint(spark, kafka, topic, tmp_path):
    create_topic(kafka, topic, partitions=2)
    produce(kafka, topic, 30, partitions=2)
    drain_kafka(spark, kafka, topic, tmp_path)
    produce(kafka, topic, 7, partitions=2, prefix="new")
    values, batches = drain_kafka(spark, kafka, topic, tmp_path)
    assert batches == [7]  # only what arrived since
    assert values == sorted([f"v{i}" for i in range(30)] + [f"new{i}" for i in range(7)])


def test_streaming_write(spark, kafka, topic, tmp_path):
    create_topic(kafka, topic, partitions=2)
    out = f"{topic}-out"
    create_topic(kafka, out, partitions=2)
    produce(kafka, topic, 30, partitions=2)

    stream = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka).option("subscribe", topic)
              .option("startingOffsets", "earliest").load())
    writer = (stream.selectExpr("key", "upper(CAST(value AS STRING)) AS value", "partition")
              .writeStream.format("kafka").option("kafka.bootstrap.servers", kafka).option("topic", out))
    run_available_now(writer, tmp_path)

    got = consume(kafka, out, 2, 30)
    assert sorted((p, k, v) for p, _, k, v in got) == sorted(
        (i % 2, f"k{i}".encode(), f"V{i}".encode()) for i in range(30))


def test_kstream_to_kafka_and_back_in_one_session(spark, kafka, topic, cluster_path, make_topic):
    """format("kstream") and format("kafka") each reach their own provider on the shared session."""
    make_topic("events", 2)
    with Producer({"cluster": cluster_path}) as producer:
        for i in range(20):
            producer.produce("events", f"e{i}".encode(), key=f"k{i}".encode(), partition=i % 2)
    create_topic(kafka, topic, partitions=2)

    from_kstream = spark.read.format("kstream").option("cluster", cluster_path).option("subscribe", "events").load()
    if jar_path() is not None:
        assert "kstream JVM reader" in from_kstream._jdf.queryExecution().executedPlan().toString()
    from_kstream.select("key", "value", "partition").write.format("kafka") \
        .option("kafka.bootstrap.servers", kafka).option("topic", topic).save()
    assert sorted(v for _, _, _, v in consume(kafka, topic, 2, 20)) == sorted(f"e{i}".encode() for i in range(20))

    from_kafka = kafka_read(spark, kafka, subscribe=topic)
    assert "KafkaRelation" in from_kafka._jdf.queryExecution().executedPlan().toString()
    make_topic("back", 1)
    from_kafka.select("key", "value").write.format("kstream").option("cluster", cluster_path) \
        .option("topic", "back").mode("append").save()
    assert sorted(consume_values(cluster_path, "back", 1)) == sorted(f"e{i}".encode() for i in range(20))


def test_connector_version_is_the_resolved_one(spark, kafka):
    """The session runs the connector `make kafka` resolved (its version is what docs/KAFKA_PEER.md names)."""
    jvm = spark.sparkContext._jvm
    source = jvm.java.lang.Class.forName("org.apache.spark.sql.kafka010.KafkaSourceProvider", True,
                                         jvm.java.lang.Thread.currentThread().getContextClassLoader())
    location = source.getProtectionDomain().getCodeSource().getLocation().toString()
    assert location.endswith(f"spark-sql-kafka-0-10_2.13-{connector_version()}.jar"), location


def test_a_kstream_query_leaves_its_group_progress_to_lag_tools_and_the_connectors_leaves_none(
        spark, kafka, topic, cluster_path, make_topic, tmp_path):
    """The documented difference (docs/SPARK.md, section 9): kstream's streaming read with
    group.id commits the group's offsets, so `kstream groups describe` shows its lag like
    kafka-consumer-groups.sh would; the connector's query (kafka.group.id named or not) commits
    nothing, so Kafka's lag tools see no group at all."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    make_topic("lagged", 2)
    with Producer({"cluster": cluster_path}) as producer:
        for i in range(40):
            producer.produce("lagged", f"v{i}".encode(), partition=i % 2)
    query = (spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", "lagged")
             .option("group.id", "spark-lag").option("startingOffsets", "earliest").load()
             .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "ks"))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(TIMEOUT_S)
    with Producer({"cluster": cluster_path}) as producer:  # 3 + 3 more since the query's last batch
        for i in range(6):
            producer.produce("lagged", f"later{i}".encode(), partition=i % 2)
    described = CliRunner().invoke(cli, ["--cluster", cluster_path, "groups", "describe", "spark-lag", "--json"])
    assert described.exit_code == 0, described.output
    partitions = json.loads(described.output)["partitions"]
    rows = {(p["topic"], p["partition"]): (p["committed"], p["lag"]) for p in partitions}
    assert rows == {("lagged", 0): (20, 3), ("lagged", 1): (20, 3)}

    create_topic(kafka, topic, partitions=2)
    produce(kafka, topic, 40, partitions=2)
    for name, options in (("named", {"kafka.group.id": f"{topic}-g"}), ("default", {})):
        stream = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka)
                  .option("subscribe", topic).option("startingOffsets", "earliest"))
        for key, value in options.items():
            stream = stream.option(key, value)
        query = (stream.load().writeStream.format("noop").option("checkpointLocation", str(tmp_path / name))
                 .trigger(availableNow=True).start())
        assert query.awaitTermination(TIMEOUT_S)
        assert sum(p["numInputRows"] for p in query.recentProgress) == 40
    admin = AdminClient({"bootstrap.servers": kafka})
    groups = [g.group_id for g in admin.list_consumer_groups().result(TIMEOUT_S).valid]
    assert [g for g in groups if g == f"{topic}-g" or g.startswith("spark-kafka-source-")] == []
    offsets = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(f"{topic}-g", [TopicPartition(topic, 0), TopicPartition(topic, 1)])])
    committed = offsets[f"{topic}-g"].result(TIMEOUT_S).topic_partitions
    assert [tp.offset for tp in committed] == [-1001, -1001]  # OFFSET_INVALID: nothing committed

"""format("kstream") readers: batch and streaming, options like the Spark Kafka connector's."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from chispa import assert_df_equality

from kstream import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

pytestmark = pytest.mark.spark


def fill(cluster_path, make_topic, name="t", partitions=3, n=300):
    make_topic(name, partitions)
    with Producer({"cluster": cluster_path}) as producer:
        for i in range(n):
            producer.produce(name, f"v{i}".encode(), key=f"k{i % 11}".encode(), headers=[("h", b"%d" % i)])
    return name


def python_rows(cluster_path, topic, partitions):
    consumer = Consumer({"cluster": cluster_path})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    rows = []
    while (m := consumer.poll(0.3)) is not None:
        rows.append((m.key(), m.value(), m.topic(), m.partition(), m.offset()))
    consumer.close()
    return rows


def test_batch_read_equals_the_python_consumer(spark, cluster_path, make_topic):
    fill(cluster_path, make_topic)
    df = spark.read.format("kstream").option("cluster", cluster_path).option("subscribe", "t").load()
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    expected = spark.createDataFrame(python_rows(cluster_path, "t", 3),
                                     "key binary, value binary, topic string, partition int, offset long")
    assert_df_equality(df.select("key", "value", "topic", "partition", "offset"), expected,
                       ignore_row_order=True, ignore_nullable=True)


def test_offset_ranges_assign_pattern_and_headers(spark, cluster_path, make_topic):
    fill(cluster_path, make_topic)
    fill(cluster_path, make_topic, name="other", partitions=1, n=10)

    def read(**options):
        reader = spark.read.format("kstream").option("cluster", cluster_path)
        for key, value in options.items():
            reader = reader.option(key, value)
        return reader.load()

    ranged = read(subscribe="t", startingOffsets=json.dumps({"t": {"0": 5, "1": -2, "2": 7}}),
                  endingOffsets=json.dumps({"t": {"0": 10, "1": 3, "2": 7}}))
    got = sorted((r.partition, r.offset) for r in ranged.select("partition", "offset").collect())
    assert got == [(0, o) for o in range(5, 10)] + [(1, o) for o in range(3)]
    assigned = read(assign=json.dumps({"t": [1]}))
    assert {r.partition for r in assigned.select("partition").collect()} == {1}
    pattern = read(subscribePattern="o.*")
    assert pattern.count() == 10 and {r.topic for r in pattern.select("topic").collect()} == {"other"}
    with_headers = read(subscribe="other", includeHeaders="true")
    first = with_headers.orderBy("offset").first()
    assert first.headers[0].key == "h" and first.headers[0].value == b"0"


def test_typed_values_survive_the_trip(spark, cluster_path, make_topic):
    make_topic("e", 2)
    with Producer({"cluster": cluster_path}) as producer:
        producer.produce_batch("e", pa.table({"value": [b"a", b"b"], "key": [b"x", b"y"]}))
    df = spark.read.format("kstream").option("cluster", cluster_path).option("subscribe", "e").load()
    assert sorted(r.value for r in df.collect()) == [b"a", b"b"]


@pytest.mark.parametrize(("options", "message"), [
    ({"subscribe": "missing"}, "do not exist; existing topics"),
    ({"subscribe": "t", "assign": '{"t":[0]}'}, "exactly one of subscribe, subscribePattern or assign"),
    ({"subscribe": "t", "startingOffsets": "{not json"}, "is neither 'earliest', 'latest' nor JSON"),
    ({"assign": '{"t":[7]}'}, "has partitions 0..2"),
    ({"subscribe": "t", "startingOffsets": '{"t":{"0":1}}'}, "must name every partition .* missing t-1, t-2"),
    ({"subscribe": "t", "endingOffsets": '{"t":{"0":1,"1":1}}'}, "'endingOffsets' gives specific .* missing t-2"),
    ({"subscribe": "t", "startingOffsets": "latest"}, "starting offset can't be latest for batch queries"),
    ({"subscribe": "t", "startingOfsets": "earliest"}, "did you mean 'startingOffsets'"),
    ({"subscribe": "t", "kafka.auto.offset.reset": "earliest"}, "set the source option 'startingOffsets'"),
])
def test_bad_options_say_what_to_change(spark, cluster_path, make_topic, options, message):
    fill(cluster_path, make_topic, n=3)
    reader = spark.read.format("kstream").option("cluster", cluster_path)
    for key, value in options.items():
        reader = reader.option(key, value)
    with pytest.raises(Exception, match=message):
        reader.load().collect()


def test_stream_available_now_with_max_offsets_per_trigger(spark, cluster_path, make_topic, tmp_path):
    fill(cluster_path, make_topic, n=1000)
    checkpoint, output = str(tmp_path / "checkpoint"), str(tmp_path / "out")

    def run():
        query = (spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", "t")
                 .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", 300).load()
                 .select("value", "partition", "offset")
                 .writeStream.format("parquet").option("path", output).option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]

    sizes = run()
    assert sum(sizes) == 1000 and all(0 < s <= 300 for s in sizes)
    with Producer({"cluster": cluster_path}) as producer:
        for i in range(50):
            producer.produce("t", b"late %d" % i)
    assert sum(run()) == 50  # restarted from its checkpoint: only the new records
    written = spark.read.parquet(output)
    assert written.count() == 1050
    assert written.select("partition", "offset").distinct().count() == 1050  # nothing twice


def test_read_committed_hides_aborted_and_open_transactions(spark, cluster_path, make_topic):
    make_topic("tx", 1)
    producer = Producer({"cluster": cluster_path, "transactional.id": "spark-tx", "linger.ms": 0})
    producer.init_transactions()
    for commit, value in ((True, b"kept"), (False, b"aborted")):
        producer.begin_transaction()
        producer.produce("tx", value, partition=0)
        if commit:
            producer.commit_transaction()
        else:
            producer.flush()
            producer.abort_transaction()
    producer.begin_transaction()
    producer.produce("tx", b"open", partition=0)
    producer.flush()

    def values(level):
        df = (spark.read.format("kstream").option("cluster", cluster_path).option("subscribe", "tx")
              .option("isolation.level", level).load())
        return sorted(r.value for r in df.collect())

    assert values("read_committed") == [b"kept"]
    assert values("read_uncommitted") == [b"aborted", b"kept", b"open"]
    producer.commit_transaction()
    assert values("read_committed") == [b"kept", b"open"]
    producer.close()


def test_typed_topic_reads_its_columns_and_only_the_ones_asked_for(spark, cluster_path, make_topic):
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])
    make_topic("typed", 2, schema=schema)
    with Producer({"cluster": cluster_path, "compression.type": "zstd"}) as producer:
        producer.produce_batch("typed", pa.table({"id": list(range(100)), "name": [f"n{i}" for i in range(100)],
                                                  "score": [i / 2 for i in range(100)]}))
    full = spark.read.format("kstream").option("cluster", cluster_path).option("subscribe", "typed").load()
    assert full.columns == ["key", "id", "name", "score", "topic", "partition", "offset", "timestamp",
                            "timestampType"]
    assert sorted((r.id, r.name, r.score) for r in full.collect()) == [(i, f"n{i}", i / 2) for i in range(100)]
    some = (spark.read.format("kstream").option("cluster", cluster_path).option("subscribe", "typed")
            .option("columns", "id,offset").load())
    assert some.columns == ["id", "offset"]
    assert sorted(r.id for r in some.collect()) == list(range(100))
    with pytest.raises(Exception, match="option 'columns' names \\['nope'\\]"):
        (spark.read.format("kstream").option("cluster", cluster_path).option("subscribe", "typed")
         .option("columns", "id,nope").load())

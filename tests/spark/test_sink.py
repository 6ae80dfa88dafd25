"""format("kstream") sink: batch jobs all-or-nothing, streaming micro-batches exactly once."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pytest

from helpers import consume_values, produce_range, spark_checkpoint
from kstream import Producer
from kstream.log.cluster.cluster import Cluster
from kstream.log.transactions.sink import SinkStore
from kstream.sink.writer import KStreamStreamWriter, SinkOptions, write_task

pytestmark = pytest.mark.spark


def committed_values(cluster_path, topic, partitions):
    return sorted(consume_values(cluster_path, topic, partitions))


def test_batch_write_round_trip_with_keys_and_topic_column(spark, cluster_path, make_topic):
    make_topic("a", 3)
    make_topic("b", 1)
    rows = [(f"k{i}".encode(), f"v{i}".encode(), "a" if i % 2 else "b") for i in range(100)]
    df = spark.createDataFrame(rows, "key binary, value binary, topic string")
    df.write.format("kstream").option("cluster", cluster_path).mode("append").save()
    assert committed_values(cluster_path, "a", 3) == sorted(v for _, v, t in rows if t == "a")
    assert committed_values(cluster_path, "b", 1) == sorted(v for _, v, t in rows if t == "b")
    read = spark.read.format("kstream").option("cluster", cluster_path).option("subscribe", "a").load()
    assert read.count() == 50  # the commit markers are not rows


def test_the_topic_option_overrides_the_topic_column_as_in_the_kafka_connector(spark, cluster_path, make_topic):
    """The connector's rule: .option("topic") wins over a 'topic' column. Columns the sink does
    not use (a DataFrame read from a topic has offset, timestampType, ...) are ignored, and
    the connector's options (kafka.*, includeHeaders) are accepted."""
    make_topic("a", 1)
    make_topic("b", 1)
    df = spark.createDataFrame([(b"v1", "a"), (b"v2", "a")], "value binary, topic string")
    df.write.format("kstream").option("cluster", cluster_path).option("topic", "b").mode("append").save()
    assert committed_values(cluster_path, "b", 1) == [b"v1", b"v2"]
    assert committed_values(cluster_path, "a", 1) == []
    read_back = spark.read.format("kstream").option("cluster", cluster_path).option("subscribe", "b").load()
    (read_back.withColumn("note", read_back["offset"].cast("string"))  # topic 'b', partition, offset, ...
     .write.format("kstream").option("cluster", cluster_path).option("kafka.bootstrap.servers", "host1:9092")
     .option("kafka.acks", "all").option("includeHeaders", "true").option("topic", "a").mode("append").save())
    assert committed_values(cluster_path, "a", 1) == [b"v1", b"v2"]


def test_save_modes_and_unknown_sink_options_say_what_to_write(spark, cluster_path, make_topic):
    make_topic("out", 1)
    df = spark.createDataFrame([(b"v",)], "value binary")

    def writer():
        return df.write.format("kstream").option("cluster", cluster_path).option("topic", "out")

    with pytest.raises(Exception, match=r'Overwrite is not allowed .* use \.mode\("append"\)'):
        writer().mode("overwrite").save()
    with pytest.raises(Exception, match="ErrorIfExists"):  # pyspark refuses it for every Python data source
        writer().save()
    with pytest.raises(Exception, match="unknown option 'topik' .*did you mean 'topic'"):
        df.write.format("kstream").option("cluster", cluster_path).option("topik", "out").option("topic", "out") \
            .mode("append").save()
    assert committed_values(cluster_path, "out", 1) == []


def test_streaming_etl_is_exactly_once_across_restarts(spark, cluster_path, make_topic, tmp_path):
    make_topic("in", 2)
    make_topic("out", 2)
    produce_range(cluster_path, "in", 0, 500, prefix="r", key_mod=13)
    checkpoint = str(tmp_path / "cp")

    def run():
        query = (spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", "in")
                 .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", 120).load()
                 .selectExpr("key", "upper(cast(value as string)) as value")
                 .writeStream.format("kstream").option("cluster", cluster_path).option("topic", "out")
                 .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
        query.awaitTermination()

    run()
    with Producer({"cluster": cluster_path}) as producer:
        for i in range(500, 600):
            producer.produce("in", f"r{i}".encode())
    run()
    assert committed_values(cluster_path, "out", 2) == sorted(f"R{i}".encode() for i in range(600))


def test_a_fresh_checkpoint_at_a_reused_path_writes_the_new_querys_rows(spark, cluster_path, make_topic, tmp_path):
    """The issue's repro: in1 -> out with checkpoint ck, rm -rf ck, in2 -> out with ck again
    (spelled file:// the second time)."""
    for topic in ("in1", "in2", "out"):
        make_topic(topic, 2)
    produce_range(cluster_path, "in1", 0, 200, prefix="a")
    produce_range(cluster_path, "in2", 0, 200, prefix="b")

    def run(source, checkpoint):
        query = (spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", source)
                 .option("startingOffsets", "earliest").load().select("key", "value")
                 .writeStream.format("kstream").option("cluster", cluster_path).option("topic", "out")
                 .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
        query.awaitTermination()
        return query.id

    first = run("in1", str(tmp_path / "ck"))
    shutil.rmtree(tmp_path / "ck")
    second = run("in2", f"file://{tmp_path / 'ck'}")
    assert first != second
    expected = sorted([f"a{i}".encode() for i in range(200)] + [f"b{i}".encode() for i in range(200)])
    assert committed_values(cluster_path, "out", 2) == expected


def test_a_replayed_micro_batch_commits_nothing_twice(spark, cluster_path, make_topic, tmp_path):
    make_topic("out", 1)
    spark_checkpoint(tmp_path / "cp")
    options = {"cluster": cluster_path, "topic": "out", "checkpointLocation": str(tmp_path / "cp")}
    writer = KStreamStreamWriter(options)

    def task():
        return write_task(SinkOptions.from_options(options), writer.sink_id,
                          iter([pa.record_batch({"value": [b"once"]})]))

    writer.commit([task()], 7)
    writer.commit([task()], 7)  # Spark replays batch 7 after a crash: written again, committed never
    failed_attempt = task()  # a task attempt whose output no commit names
    writer.commit([task()], 8)
    assert committed_values(cluster_path, "out", 1) == [b"once", b"once"]
    assert failed_attempt.writes.records == 1
    store = SinkStore(Cluster.open(cluster_path))
    assert store.transactions.first_open_offset("out", 0) is None  # nothing holds the LSO back


def test_without_a_checkpoint_option_each_batch_commits_once_per_run(cluster_path, make_topic):
    """pyspark gives a Python sink no checkpoint set by spark.sql.streaming.checkpointLocation:
    such a sink commits under the id its tasks wrote with (the commit's writer is another
    instance), all-or-nothing per batch; a new run replays a batch again (at least once, as
    the Kafka connector's sink)."""
    make_topic("out", 1)
    options = {"cluster": cluster_path, "topic": "out"}
    tasks_writer, commit_writer = KStreamStreamWriter(options), KStreamStreamWriter(options)
    assert tasks_writer.sink_id != commit_writer.sink_id

    def task(writer):
        return write_task(SinkOptions.from_options(options), writer.sink_id,
                          iter([pa.record_batch({"value": [b"row"]})]))

    commit_writer.commit([task(tasks_writer), None], 0)
    commit_writer.commit([task(tasks_writer)], 0)  # the same run replays batch 0: nothing twice
    assert committed_values(cluster_path, "out", 1) == [b"row"]
    next_run = KStreamStreamWriter(options)
    commit_writer.commit([task(next_run)], 0)  # a restarted query replays batch 0: written again
    assert committed_values(cluster_path, "out", 1) == [b"row", b"row"]
    store = SinkStore(Cluster.open(cluster_path))
    assert store.transactions.first_open_offset("out", 0) is None


def test_bad_sink_input_fails_and_leaves_nothing_visible_or_open(spark, cluster_path, make_topic):
    make_topic("out", 2)
    no_value = spark.createDataFrame([(b"k", b"x")], "key binary, payload binary")
    with pytest.raises(Exception, match="needs a 'value' column"):
        no_value.write.format("kstream").option("cluster", cluster_path).option("topic", "out").mode("append").save()
    wrong_type = spark.createDataFrame([(1,)], "value int")
    with pytest.raises(Exception, match="column 'value' has type int32; expected binary or string"):
        wrong_type.write.format("kstream").option("cluster", cluster_path).option("topic", "out").mode("append").save()
    no_topic = spark.createDataFrame([(b"v",)], "value binary")
    with pytest.raises(Exception, match="need a 'topic' column or"):
        no_topic.write.format("kstream").option("cluster", cluster_path).mode("append").save()
    assert committed_values(cluster_path, "out", 2) == []
    store = SinkStore(Cluster.open(cluster_path))
    assert all(store.transactions.first_open_offset("out", p) is None for p in range(2))


def test_a_batch_jobs_task_attempt_that_starts_after_the_commit_writes_nothing(cluster_path, make_topic):
    """A speculative or retried attempt that Spark started late runs after the job committed:
    it is refused before it writes, so it can neither show nor hold the LSO back."""
    from kstream import FencedError
    from kstream.sink.writer import KStreamBatchWriter

    make_topic("out", 2)
    writer = KStreamBatchWriter({"cluster": cluster_path, "topic": "out"})
    rows = pa.record_batch({"value": [b"once"], "partition": [0]})
    writer.commit([writer.write(iter([rows]))])
    with pytest.raises(FencedError, match="zombie"):
        writer.write(iter([pa.record_batch({"value": [b"late"], "partition": [1]})]))
    assert committed_values(cluster_path, "out", 2) == [b"once"]
    assert consume_values(cluster_path, "out", 2, "read_uncommitted") == [b"once"]
    store = SinkStore(Cluster.open(cluster_path))
    assert all(store.transactions.first_open_offset("out", p) is None for p in range(2))


def test_a_compacted_topic_refuses_a_sink_write_with_a_keyless_row_and_keeps_nothing(
        spark, cluster_path, make_topic):
    make_topic("table", 2, config={"cleanup.policy": "compact"})
    rows = spark.createDataFrame([(b"k1", b"a"), (None, b"b"), (b"k2", b"c")], "key binary, value binary")
    with pytest.raises(Exception, match="Compacted topic cannot accept message without key"):
        rows.write.format("kstream").option("cluster", cluster_path).option("topic", "table").mode("append").save()
    no_key = spark.createDataFrame([(b"v",)], "value binary")
    with pytest.raises(Exception, match="Compacted topic cannot accept message without key"):
        no_key.write.format("kstream").option("cluster", cluster_path).option("topic", "table").mode("append").save()
    assert committed_values(cluster_path, "table", 2) == []
    store = SinkStore(Cluster.open(cluster_path))
    assert all(store.transactions.first_open_offset("table", p) is None for p in range(2))
    keyed = spark.createDataFrame([(b"k1", b"a"), (b"k2", b"c")], "key binary, value binary")
    keyed.write.format("kstream").option("cluster", cluster_path).option("topic", "table").mode("append").save()
    assert committed_values(cluster_path, "table", 2) == [b"a", b"c"]


def test_the_python_sink_refuses_writer_jvm_saying_the_jar_is_not_on_the_session(cluster_path):
    """With the jar on the session the JVM provider chooses the writer and hands Python only its
    own writes; writer=jvm reaching the Python sink means the jar is not loaded."""
    from kstream.errors import ConfigError

    with pytest.raises(ConfigError, match=r"option 'writer' is jvm, but the kstream JVM writer is not on this "
                                          r"SparkSession: add its jar with spark.jars"):
        SinkOptions.from_options({"cluster": cluster_path, "topic": "out", "writer": "jvm"})
    with pytest.raises(ConfigError, match=r"option 'writer': 'fast' is not jvm, python or auto"):
        SinkOptions.from_options({"cluster": cluster_path, "topic": "out", "writer": "fast"})
    assert SinkOptions.from_options({"cluster": cluster_path, "topic": "out", "writer": "Python"}).topic == "out"

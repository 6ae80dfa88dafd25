"""One suite, both writers: a DataFrame written to format("kstream") with writer=python (the
Python data source sink) and with writer=jvm (io.kstream.spark.write.JvmBatchWrite) must give the
same records (keys, values, headers, partitions by Kafka's murmur2 partitioner or the
'partition' column, timestamps), read back the same by both readers (reader=python, reader=jvm)
and by the Python consumer; a failed job must leave nothing visible to read_committed and no
open transaction; bad input must fail with the same error from both; and a Python producer
appending while a JVM-writer job writes the same partition must keep offsets contiguous.

Runs on the shared SparkSession (tests/spark/conftest.py), which has the kstream jar when built;
without it the JVM half is skipped with one line.
"""

from __future__ import annotations

import datetime as dt
import os
import threading

import pytest
from tests.spark.conftest import spark  # noqa: F401  (the shared session, with the jar when built)
from tests.spark.jvm_support import load, rows

from helpers import consume_values, open_partitions
from kstream import Consumer, Producer, TopicPartition
from kstream.jars import jar_path
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import format as fmt
from kstream.log.storage.frames import FrameWalk, pread_from

pytestmark = [pytest.mark.spark, pytest.mark.jvm]

WRITERS = ("python", "jvm")
# Recent (whole ms): retention (log.retention.ms, 7 days) would delete older records as they are written.
BASE = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)).replace(microsecond=0)


@pytest.fixture(autouse=True)
def _jar():
    if jar_path() is None:
        pytest.skip("no kstream JVM jar (jvm/build.sh): the JVM writer is not checked")


def _save(frame, cluster_path, writer, **options):
    out = frame.write.format("kstream").option("cluster", cluster_path).option("writer", writer)
    for key, value in options.items():
        out = out.option(key, value)
    out.mode("append").save()


def _input(spark, n=600):  # noqa: F811
    """Keyed rows (the murmur2 partition), rows with a 'partition' (keyless ones too), headers, timestamps."""
    data = []
    for i in range(n):
        key = None if i % 10 == 0 else f"k{i % 97}".encode()
        partition = i % 3 if i % 10 == 0 else (None if i % 4 else (i // 4) % 3)
        headers = [("h", str(i).encode()), ("empty", None)] if i % 3 == 0 else []
        timestamp = BASE + dt.timedelta(milliseconds=7 * i)
        data.append((key, f"v{i}".encode() if i % 50 else None, headers, partition, timestamp))
    return spark.createDataFrame(
        data, "key binary, value binary, headers array<struct<key: string, value: binary>>, partition int,"
              " timestamp timestamp")


def _records(spark, cluster_path, topic, reader, columns=("partition", "key", "value", "headers", "timestamp")):  # noqa: F811
    frame = load(spark, cluster_path, reader, subscribe=topic, includeHeaders="true")
    return rows(frame.select(*columns))


def _frames(cluster_path, topic, partition):
    """Every frame header of a partition, in log order, checksums checked."""
    cluster = Cluster.open(cluster_path)
    try:
        info = cluster.topic(topic)
        directory = next(iter(cluster.replica_dirs(info, info.partitions[partition]).values()))
    finally:
        cluster.close()
    out = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(fmt.LOG_SUFFIX):
            fd = os.open(os.path.join(directory, name), os.O_RDONLY)
            try:
                walk = FrameWalk(pread_from(fd), os.fstat(fd).st_size, verify_payload=True)
                out.extend(h for _, h in walk)
                assert walk.problem is None, walk.problem
            finally:
                os.close(fd)
    return out


def test_both_writers_write_the_same_records_read_back_the_same_by_both_readers(spark, cluster_path,  # noqa: F811
                                                                                make_topic):
    for writer in WRITERS:
        make_topic(f"by-{writer}", 3)
        _save(_input(spark).repartition(2), cluster_path, writer, topic=f"by-{writer}")
    read = {(writer, reader): _records(spark, cluster_path, f"by-{writer}", reader)
            for writer in WRITERS for reader in ("python", "jvm")}
    expected = read[("python", "python")]
    assert len(expected) == 600
    assert all(r == expected for r in read.values())
    for writer in WRITERS:
        values = consume_values(cluster_path, f"by-{writer}", 3)
        assert sorted(values, key=lambda v: (v is None, v)) == sorted(
            [f"v{i}".encode() if i % 50 else None for i in range(600)], key=lambda v: (v is None, v))
        assert open_partitions(cluster_path, f"by-{writer}", 3) == []
        # transactional frames, each partition ended by COMMIT markers, offsets contiguous
        for partition in range(3):
            headers = _frames(cluster_path, f"by-{writer}", partition)
            assert headers, (writer, partition)
            expect = 0
            for h in headers:
                assert h.base_offset == expect
                expect += h.record_count
                assert h.attributes & fmt.TRANSACTIONAL
            assert headers[-1].attributes & fmt.CONTROL


def test_the_topic_column_and_option_route_rows_the_same_in_both_writers(spark, cluster_path, make_topic):  # noqa: F811
    frame = spark.createDataFrame([(f"k{i}", f"v{i}", "a" if i % 2 else "b") for i in range(40)],
                                  "key string, value string, topic string")
    for writer in WRITERS:
        make_topic(f"a-{writer}", 2)
        make_topic(f"b-{writer}", 2)
        make_topic(f"c-{writer}", 2)
        _save(frame.selectExpr("key", "value", f"concat(topic, '-{writer}') AS topic"), cluster_path, writer)
        _save(frame, cluster_path, writer, topic=f"c-{writer}")  # the option overrides the column
    plain = ("partition", "key", "value", "headers")  # without a timestamp column, records carry the write time
    for topic in ("a", "b", "c"):
        assert (_records(spark, cluster_path, f"{topic}-python", "python", plain)
                == _records(spark, cluster_path, f"{topic}-jvm", "python", plain))
    assert len(_records(spark, cluster_path, "c-jvm", "jvm")) == 40


def test_a_failed_job_leaves_nothing_visible_and_no_open_transaction(spark, cluster_path, make_topic):  # noqa: F811
    from pyspark.sql import functions as sf

    for writer in WRITERS:
        topic = make_topic(f"f-{writer}", 1)
        # the second task writes frames (more rows than one frame holds: the JVM writer's frames
        # hold up to 65,536 rows) before one of its rows raises
        frame = (spark.range(0, 150_000, 1, 2)
                 .select(sf.when(sf.col("id") == 149_000, sf.raise_error(sf.lit("boom in a task")))
                         .otherwise(sf.col("id").cast("string").cast("binary")).alias("value")))
        with pytest.raises(Exception, match="boom in a task"):
            _save(frame, cluster_path, writer, topic=topic)
        assert consume_values(cluster_path, topic, 1) == []
        assert open_partitions(cluster_path, topic, 1) == []
        assert load(spark, cluster_path, "jvm", subscribe=topic).count() == 0
        # and the topic takes the next job's rows
        _save(spark.createDataFrame([(b"after",)], "value binary"), cluster_path, writer, topic=topic)
        assert consume_values(cluster_path, topic, 1) == [b"after"]


@pytest.mark.parametrize("case", ["no value column", "unknown topic", "keyless row on a compacted topic",
                                  "value of a wrong type", "partition out of range", "unknown option"])
def test_bad_input_fails_with_the_same_error_from_both_writers(spark, cluster_path, make_topic, case):  # noqa: F811
    make_topic("t", 2)
    make_topic("table", 2, config={"cleanup.policy": "compact"})
    frame, topic, match = {
        "no value column": (spark.createDataFrame([(b"k", b"x")], "key binary, payload binary"), "t",
                            r"InvalidRecordError.*needs a 'value' column"),
        "unknown topic": (spark.createDataFrame([(b"v",)], "value binary"), "nope",
                          r"TopicNotFoundError.*topic 'nope' does not exist"),
        "keyless row on a compacted topic": (
            spark.createDataFrame([(b"k1", b"a"), (None, b"b")], "key binary, value binary"), "table",
            r"InvalidRecordError.*Compacted topic cannot accept message without key: topic 'table'"),
        "value of a wrong type": (spark.createDataFrame([(1,)], "value int"), "t",
                                  r"InvalidRecordError.*column 'value' has type int32; expected binary or string"),
        "partition out of range": (spark.createDataFrame([(b"v", 5)], "value binary, partition int"), "t",
                                   r"PartitionNotFoundError.*partition 5 \(column 'partition'\) is not a partition "
                                   r"of topic 't', which has partitions 0..1"),
        "unknown option": (spark.createDataFrame([(b"v",)], "value binary"), "t",
                           r"ConfigError.*unknown option 'topik' for the kstream sink; did you mean 'topic'"),
    }[case]
    extra = {"topik": "t"} if case == "unknown option" else {}
    for writer in WRITERS:
        with pytest.raises(Exception, match=match):
            _save(frame, cluster_path, writer, topic=topic, **extra)
    for name in ("t", "table"):
        # (read_uncommitted may see the rows of a task that succeeded before the job failed, aborted)
        assert consume_values(cluster_path, name, 2) == []
        assert open_partitions(cluster_path, name, 2) == []


def test_writer_jvm_refuses_what_only_the_python_sink_writes_and_auto_hands_it_to_python(
        spark, cluster_path, make_topic):  # noqa: F811
    import pyarrow as pa

    make_topic("typed", 1, schema=pa.schema([("id", pa.int64())]))
    frame = spark.createDataFrame([(1,)], "id long").selectExpr("id", "CAST(NULL AS binary) AS value")
    with pytest.raises(Exception, match=r"ConfigError: option 'writer' is jvm, but the JVM writer does not write "
                                        r"typed topic 'typed'"):
        _save(frame, cluster_path, "jvm", topic="typed")
    with pytest.raises(Exception, match=r"option 'writer': 'fast' is not jvm, python or auto"):
        _save(frame, cluster_path, "fast", topic="typed")


def test_auto_leaves_rows_routed_by_column_to_the_python_sink_on_a_cluster_that_creates_topics(
        spark, tmp_path):  # noqa: F811
    from kstream import Admin, NewTopic

    path = str(tmp_path / "auto-create")
    with Admin({"cluster": path, "auto.create.topics.enable": "true"}) as admin:
        admin.create_topics([NewTopic("first", 1)])["first"].result()
    frame = spark.createDataFrame([(b"v", "made-on-write")], "value binary, topic string")
    with pytest.raises(Exception, match=r"TopicNotFoundError: topic 'made-on-write' does not exist"):
        _save(frame, path, "jvm")
    _save(frame, path, "auto")  # the Python sink, which creates the topic
    assert consume_values(path, "made-on-write", 1) == [b"v"]


def test_a_cluster_wide_topic_default_sends_the_write_to_the_python_sink(spark, tmp_path):  # noqa: F811
    from kstream import Admin, NewTopic

    path = str(tmp_path / "defaults")
    with Admin({"cluster": path, "log.message.timestamp.type": "LogAppendTime"}) as admin:
        admin.create_topics([NewTopic("t", 1)])["t"].result()
    frame = spark.createDataFrame([(b"v", BASE)], "value binary, timestamp timestamp")
    with pytest.raises(Exception, match=r"ConfigError: option 'writer' is jvm, but the JVM writer does not write a "
                                        r"cluster whose cluster.properties sets the topic default "
                                        r"log.message.timestamp.type"):
        _save(frame, path, "jvm", topic="t")
    _save(frame, path, "auto", topic="t")  # the Python sink, which applies the cluster's LogAppendTime
    (record,) = load(spark, path, "python", subscribe="t").collect()
    assert record.value == b"v" and record.timestampType == 1


def test_a_python_producer_appending_during_a_jvm_sink_job_keeps_offsets_contiguous(
        spark, cluster_path, make_topic):  # noqa: F811
    topic = make_topic("shared", 1)
    stop = threading.Event()
    produced = []

    def produce():
        with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
            i = 0
            while not stop.is_set():
                value = f"p{i}".encode()
                producer.produce(topic, value, partition=0)
                producer.flush()
                produced.append(value)
                i += 1

    thread = threading.Thread(target=produce)
    thread.start()
    try:
        for _ in range(2):
            frame = spark.range(0, 50_000, 1, 2).selectExpr("CAST(CAST(id AS string) AS binary) AS value")
            _save(frame, cluster_path, "jvm", topic=topic)
    finally:
        stop.set()
        thread.join()
    assert produced, "the producer wrote nothing while the job ran"
    headers = _frames(cluster_path, topic, 0)
    expect = 0
    for h in headers:
        assert h.base_offset == expect
        expect += h.record_count
    consumer = Consumer({"cluster": cluster_path, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen = []
    try:
        while (message := consumer.poll(0.5)) is not None:
            seen.append((message.offset(), message.value()))
    finally:
        consumer.close()
    offsets = [o for o, _ in seen]
    assert offsets == sorted(set(offsets))
    values = [v for _, v in seen]
    assert sorted(v for v in values if v.startswith(b"p")) == sorted(produced)
    assert sorted(int(v) for v in values if not v.startswith(b"p")) == sorted(list(range(50_000)) * 2)
    control = sum(1 for h in headers if h.attributes & fmt.CONTROL)
    assert expect == len(produced) + 100_000 + control

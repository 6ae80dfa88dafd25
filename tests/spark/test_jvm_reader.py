"""The JVM reader (jvm/, docs/JVM_READER.md) against the Python reader on the same data.

Every read here runs through ``format("kstream")`` twice, with ``reader=jvm`` and
``reader=python`` (the ``read_both`` fixture), and asserts the same schema and rows, or the
same error. One shared SparkSession (tests/spark/conftest.py) has the jar on it.
"""

from __future__ import annotations

import json
import os
import re
import time

import pyarrow as pa
import pytest
from tests.spark.jvm_support import (
    BENCH_JAR,
    JAR,
    NO_BENCH_JAR_REASON,
    NO_JAR_REASON,
    ReadBoth,
    load,
    write_txn_indexes,
)

from helpers import wait_until
from kstream import Producer

pytestmark = [pytest.mark.spark, pytest.mark.jvm]
if JAR is None:
    pytest.skip(NO_JAR_REASON, allow_module_level=True)  # one line in the summary, not one per test

@pytest.fixture
def read_both(spark, cluster_path):
    return ReadBoth(spark, cluster_path)


def fill(cluster_path, make_topic, name="t", partitions=3, n=300, codec="none", **producer_config):
    make_topic(name, partitions)
    with Producer({"cluster": cluster_path, "compression.type": codec, **producer_config}) as producer:
        for i in range(n):
            producer.produce(name, f"v{i}".encode(), key=f"k{i % 11}".encode(), headers=[("h", b"%d" % i)])
    return name


def served_by(spark, cluster_path, **options):
    plan = load(spark, cluster_path, options.pop("reader", "auto"), **options)._jdf.queryExecution()
    text = plan.executedPlan().toString()
    return "jvm" if "kstream JVM reader" in text else "python"


@pytest.mark.parametrize("codec", ["none", "lz4", "zstd"])
def test_bytes_topic_rows_equal_across_readers(read_both, cluster_path, make_topic, codec):
    fill(cluster_path, make_topic, codec=codec)
    schema, got = read_both(subscribe="t", includeHeaders="true")
    assert schema.fieldNames() == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
                                   "headers"]
    assert len(got) == 300
    assert load(read_both.spark, cluster_path, "jvm", subscribe="t").count() == 300  # no column at all


def test_typed_topic_with_an_evolved_schema(read_both, admin, cluster_path, make_topic):
    make_topic("typed", 2, schema=pa.schema([("id", pa.int64()), ("name", pa.string())]))
    with Producer({"cluster": cluster_path, "compression.type": "zstd"}) as producer:
        producer.produce_batch("typed", pa.table({"id": list(range(50)), "name": [f"n{i}" for i in range(50)]}))
    admin.evolve_schema("typed", pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())]))
    with Producer({"cluster": cluster_path}) as producer:
        producer.produce_batch("typed", pa.table({"id": [50, 51], "name": ["a", "b"], "score": [1.5, None]}))
    schema, got = read_both(subscribe="typed")
    assert schema.fieldNames()[:4] == ["key", "id", "name", "score"]
    scores = {r[1]: r[3] for r in got}
    assert scores[0] is None and scores[50] == 1.5 and len(got) == 52
    schema, got = read_both(subscribe="typed", columns="score,id,offset")
    assert schema.fieldNames() == ["id", "score", "offset"]


def test_topic_selection_and_offset_ranges(read_both, cluster_path, make_topic):
    fill(cluster_path, make_topic)
    fill(cluster_path, make_topic, name="other", partitions=1, n=10)
    _, got = read_both(subscribe="t", startingOffsets=json.dumps({"t": {"0": 5, "1": -2, "2": 7}}),
                       endingOffsets=json.dumps({"t": {"0": 10, "1": 3, "2": 7}}), columns="partition,offset")
    assert got == [(0, o) for o in range(5, 10)] + [(1, o) for o in range(3)]
    _, got = read_both(assign=json.dumps({"t": [1]}), columns="partition")
    assert {p for (p,) in got} == {1}
    _, got = read_both(subscribePattern="o.*", columns="topic")
    assert got == [("other",)] * 10
    _, got = read_both(subscribe="t,other", columns="topic")
    assert len(got) == 310


def test_timestamps_start_and_end(read_both, cluster_path, make_topic):
    make_topic("ts", 2)
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for i in range(40):
            producer.produce("ts", b"v%d" % i, partition=i % 2, timestamp=1_700_000_000_000 + i * 1000)
            producer.flush()
    _, got = read_both(subscribe="ts", startingTimestamp=str(1_700_000_010_000), columns="value")
    assert len(got) == 30
    _, got = read_both(subscribe="ts", startingOffsetsByTimestamp=json.dumps(
        {"ts": {"0": 1_700_000_020_000, "1": 1_700_000_000_000}}),
        endingTimestamp=str(1_700_000_030_000), columns="value")
    assert len(got) == 5 + 15
    read_both.error("no record at or after timestamp", subscribe="ts", startingTimestamp=str(1_800_000_000_000))
    _, got = read_both(subscribe="ts", startingTimestamp=str(1_800_000_000_000),
                       startingOffsetsByTimestampStrategy="latest", columns="value")
    assert got == []


@pytest.mark.parametrize("name", ["commit-marker", "log-append-time", "kstream-markers", "aborted-interleaved",
                                  "open-transaction"])
def test_starting_offsets_by_timestamp_skip_markers_and_aborted_records(read_both, cluster_path, name):
    """Cases of the offset-for-timestamp table (tests/log/timestamp_cases.py), read through Spark
    by both readers at both isolation levels: each read's first row is the table's offset (a
    marker never starts it; an aborted record does not under read_committed), or no row when no
    record answers below the end. The JVM reader's TimestampLookup and the Python planner's
    kstream.log.offset_for_timestamp must agree with the table and with each other. Before
    they did, both started aborted-interleaved's read_committed read at the aborted record (and
    handed out the plain record stamped before the time), and open-transaction's at an offset
    past the LSO (an error: "does not exist yet")."""
    from tests.log.timestamp_cases import CASES, T0, build, expected

    case = next(c for c in CASES if c.name == name)
    topic = build(cluster_path, case)
    for lookup in case.lookups:
        for isolation in ("read_uncommitted", "read_committed"):
            _, got = read_both(subscribe=topic, startingTimestamp=str(T0 + lookup.target),
                               startingOffsetsByTimestampStrategy="latest", columns="offset",
                               **{"isolation.level": isolation})
            found = expected(case, lookup, isolation)
            assert (got[0][0] if got else None) == (found[0] if found else None), (lookup.why, isolation)


def test_transactions_read_committed_and_uncommitted(read_both, cluster_path, make_topic):
    from tests.helpers import open_transaction

    make_topic("tx", 1)
    with Producer({"cluster": cluster_path, "transactional.id": "a", "linger.ms": 0}) as aborting:
        aborting.init_transactions()
        aborting.begin_transaction()
        aborting.produce("tx", b"aborted", partition=0)
        aborting.abort_transaction()
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as plain:
        plain.produce("tx", b"kept", partition=0)
    holder = open_transaction(cluster_path, "b", "tx", b"open")
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as plain:
        plain.produce("tx", b"after", partition=0)
    _, got = read_both(subscribe="tx", columns="value")
    assert got == [(b"kept",)]  # the open transaction holds the LSO
    _, got = read_both(subscribe="tx", columns="value", isolation__level="read_uncommitted")
    assert got == [(b"aborted",), (b"after",), (b"kept",), (b"open",)]
    holder.commit_transaction()
    holder.close()
    _, got = read_both(subscribe="tx", columns="value", kafka__isolation__level="read_committed")
    assert got == [(b"after",), (b"kept",), (b"open",)]


def test_transactions_from_trusted_txnindex_entries(read_both, spark, cluster_path, make_topic):
    """Below the recovery point the JVM reader takes the .txnindex entries as they are (it does
    not re-read those frames); a torn entry makes it derive that segment from the frames."""
    make_topic("tx", 1)
    with Producer({"cluster": cluster_path, "transactional.id": "a", "linger.ms": 0}) as aborting:
        aborting.init_transactions()
        aborting.begin_transaction()
        aborting.produce("tx", b"aborted", partition=0)
        aborting.abort_transaction()
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as plain:
        plain.produce("tx", b"kept", partition=0)
    replica = os.path.join(cluster_path, "logs", "tx-0")
    assert os.path.exists(os.path.join(replica, "recovery-point"))
    assert write_txn_indexes(replica) == 2  # the aborted data frame and its ABORT marker (as the writer does)
    _, got = read_both(subscribe="tx", columns="value")
    assert got == [(b"kept",)]
    index = os.path.join(replica, "00000000000000000000.txnindex")
    with open(index, "rb") as f:
        entries = f.read()
    with open(index, "wb") as f:
        f.write(entries[:24])  # the ABORT entry is gone: the entries say transaction a is open
    assert [r.value for r in load(spark, cluster_path, "jvm", subscribe="tx").collect()] == []
    with open(index, "wb") as f:
        f.write(entries[:24] + b"\xff" * 24)  # a torn append: this segment is derived from its frames
    _, got = read_both(subscribe="tx", columns="value")
    assert got == [(b"kept",)]
    os.remove(index)  # a lost file trusts nothing of its segment (never "no transactions")
    _, got = read_both(subscribe="tx", columns="value")
    assert got == [(b"kept",)]


def test_retention_gap_and_fail_on_data_loss(read_both, spark, cluster_path, make_topic, admin):
    make_topic("r", 1, config={"segment.bytes": "2048"})
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for _ in range(100):
            producer.produce("r", b"x" * 50, partition=0)
            producer.flush()
    replica = os.path.join(cluster_path, "logs", "r-0")
    segments = sorted(f for f in os.listdir(replica) if f.endswith(".log"))
    assert len(segments) > 2
    first_kept = int(segments[1][:-4])
    start = json.dumps({"r": {"0": 0}})
    for suffix in (".log", ".index", ".timeindex"):  # what retention deletes
        path = os.path.join(replica, segments[0][:-4] + suffix)
        if os.path.exists(path):
            os.remove(path)
    read_both.error("were deleted by retention before they were read", subscribe="r", startingOffsets=start,
                    endingOffsets=json.dumps({"r": {"0": 100}}))
    _, got = read_both(subscribe="r", startingOffsets=start, endingOffsets=json.dumps({"r": {"0": 100}}),
                       failOnDataLoss="false", columns="offset")
    assert got == [(o,) for o in range(first_kept, 100)]


def test_checksums_are_verified_unless_check_crcs_is_false(read_both, spark, cluster_path, make_topic):
    fill(cluster_path, make_topic, partitions=1, n=20)
    segment = os.path.join(cluster_path, "logs", "t-0", "00000000000000000000.log")
    with open(segment, "r+b") as f:
        data = f.read()
        at = data.index(b"v13")
        f.seek(at)
        f.write(b"w")
    read_both.error("payload checksum mismatch: .*00000000000000000000.log at position 0 \\(offset 0\\)",
                    subscribe="t")
    frame = load(spark, cluster_path, "jvm", subscribe="t", check__crcs="false", columns="value")
    assert sorted(r.value for r in frame.collect())[5:7] == [b"v14", b"v15"]
    assert b"w13" in {r.value for r in frame.collect()}


@pytest.mark.parametrize(("options", "message"), [
    ({"subscribe": "missing"}, "do not exist; existing topics"),
    ({"subscribe": "t", "assign": '{"t":[0]}'}, "exactly one of subscribe, subscribePattern or assign"),
    ({"subscribe": "t", "startingOffsets": "{not json"}, "is neither 'earliest', 'latest' nor JSON"),
    ({"assign": '{"t":[7]}'}, "has partitions 0..2"),
    ({"subscribe": "t", "startingOffsets": '{"t":{"0":1}}'}, "must name every partition .* missing t-1, t-2"),
    ({"subscribe": "t", "startingOffsets": "latest"}, "starting offset can't be latest for batch queries"),
    ({"subscribe": "t", "endingOffsets": '{"t":{"0":5000,"1":-1,"2":-1}}'}, "does not exist yet"),
    ({"subscribe": "t", "columns": "value,nope"}, "option 'columns' names \\['nope'\\]"),
    ({"subscribe": "t", "subscrbe": "t"}, "unknown option 'subscrbe'.*did you mean 'subscribe'"),
    ({"subscribe": "t", "isolation.level": "dirty"}, "is not read_committed or read_uncommitted"),
    ({"subscribe": "t", "failOnDataLoss": "maybe"}, "option 'failOnDataLoss': 'maybe' is not true or false"),
])
def test_errors_match_the_python_reader(read_both, cluster_path, make_topic, options, message):
    fill(cluster_path, make_topic, n=30)
    read_both.error(message, **{k.replace(".", "__"): v for k, v in options.items()})


def test_reader_option_chooses_and_refuses(spark, cluster_path, make_topic, tmp_path):
    fill(cluster_path, make_topic, n=30)
    assert served_by(spark, cluster_path, subscribe="t") == "jvm"
    assert served_by(spark, cluster_path, subscribe="t", reader="python") == "python"
    assert served_by(spark, cluster_path, subscribe="t", startingOffsets="group", group__id="g") == "python"
    with pytest.raises(Exception, match="option 'reader' is jvm, but the JVM reader does not do startingoffsets=group"):
        load(spark, cluster_path, "jvm", subscribe="t", group__id="g", startingOffsets="group")
    # group.id alone: a batch read refuses it as the Python reader does (tests/spark/test_groups.py),
    # a stream because only the Python reader commits
    stream = (spark.readStream.format("kstream").option("cluster", cluster_path).option("reader", "jvm")
              .option("subscribe", "t").option("group.id", "g").option("startingOffsets", "earliest").load())
    query = (stream.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    with pytest.raises(Exception, match="the JVM reader does not commit a streaming query's offsets to a consumer "
                                        "group \\(option group.id\\); use reader=python or reader=auto"):
        query.awaitTermination(120)
    with pytest.raises(Exception, match="option 'reader': 'fast' is not jvm, python or auto"):
        load(spark, cluster_path, "fast", subscribe="t")
    snapshot = os.path.join(cluster_path, "metadata-snapshot.json")
    os.remove(snapshot)  # a cluster no new kstream opened yet
    frame = spark.read.format("kstream").option("cluster", cluster_path).option("subscribe", "t").load()
    # The provider is stateless: inferSchema found no snapshot and asked the Python reader, which
    # opened the cluster and so wrote the snapshot; getTable, deciding again, finds it and the
    # JVM reader serves the read with that same schema.
    assert os.path.isfile(snapshot)
    assert "kstream JVM reader" in frame._jdf.queryExecution().executedPlan().toString()
    assert frame.count() == 30


def test_a_column_type_the_jvm_reader_does_not_convert_goes_to_python(spark, cluster_path, make_topic):
    make_topic("ms", 1, schema=pa.schema([("at", pa.timestamp("ms"))]))
    with Producer({"cluster": cluster_path}) as producer:
        producer.produce_batch("ms", pa.table({"at": pa.array([1_700_000_000_000], pa.timestamp("ms"))}))
    assert served_by(spark, cluster_path, subscribe="ms") == "python"
    assert load(spark, cluster_path, "auto", subscribe="ms").count() == 1
    with pytest.raises(Exception, match="column 'at' has Arrow type .* use option reader=python"):
        load(spark, cluster_path, "jvm", subscribe="ms")


def test_writes_by_either_writer_are_read_by_the_jvm_reader(spark, cluster_path, make_topic):
    """A batch write goes to the JVM writer by default with the jar, to the Python sink with
    writer=python (tests/jvm/test_writer_conformance.py compares them)."""
    make_topic("out", 1)
    for writer, value in (("auto", b"v"), ("python", b"w")):
        (spark.createDataFrame([(b"k", value)], "key binary, value binary").write.format("kstream")
         .option("cluster", cluster_path).option("topic", "out").option("writer", writer).mode("append").save())
    assert sorted(r.value for r in load(spark, cluster_path, "jvm", subscribe="out").collect()) == [b"v", b"w"]


def test_micro_batches_with_max_offsets_per_trigger(spark, cluster_path, make_topic, tmp_path):
    fill(cluster_path, make_topic, n=90)
    name = f"jvm_stream_{int(time.time() * 1000)}"
    query = (spark.readStream.format("kstream").option("cluster", cluster_path).option("reader", "jvm")
             .option("subscribe", "t").option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "30")
             .load().writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    assert query.awaitTermination(120)
    got = spark.sql(f"SELECT partition, offset FROM {name}").collect()
    batch = load(spark, cluster_path, "python", subscribe="t").select("partition", "offset").collect()
    assert sorted((r.partition, r.offset) for r in got) == sorted((r.partition, r.offset) for r in batch)
    batches = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"] > 0]
    assert sum(batches) == 90 and len(batches) >= 3 and max(batches) <= 30
    assert "kstream JVM reader" in str(query.lastProgress["sources"][0]["description"])


def test_min_offsets_per_trigger_waits_for_records_or_max_trigger_delay(spark, cluster_path, make_topic, tmp_path):
    fill(cluster_path, make_topic, partitions=1, n=10)
    name = f"jvm_min_{int(time.time() * 1000)}"
    started = time.monotonic()
    query = (spark.readStream.format("kstream").option("cluster", cluster_path).option("reader", "jvm")
             .option("subscribe", "t").option("startingOffsets", "earliest").option("minOffsetsPerTrigger", "100")
             .option("maxTriggerDelay", "3s").load().writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(processingTime="200 milliseconds").start())
    try:
        assert _wait_for(lambda: spark.sql(f"SELECT count(*) FROM {name}").first()[0] == 10)
        waited = time.monotonic() - started
        assert waited >= 3.0  # 10 < minOffsetsPerTrigger records: held until maxTriggerDelay
        assert json.loads(query.lastProgress["sources"][0]["latestOffset"]) == {"t": {"0": 10}}
    finally:
        query.stop()


def _real_time_query(spark, cluster_path, tmp_path, sink_dir, batch="5 seconds", **options):
    """A Real-time Mode query (Update mode) from the kstream topic 't' into the JVM LatencyWriter."""
    if not os.path.isfile(BENCH_JAR):
        pytest.skip(NO_BENCH_JAR_REASON)
    reader = (spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", "t")
              .option("startingOffsets", "earliest"))
    for key, value in options.items():
        reader = reader.option(key, value)
    jvm = spark._jvm
    return (reader.load().select("value")._jdf.writeStream()
            .foreach(jvm.io.kstream.spark.bench.LatencyWriter(str(sink_dir))).outputMode("update")
            .trigger(jvm.org.apache.spark.sql.streaming.Trigger.RealTime(batch))
            .option("checkpointLocation", str(tmp_path / "rtm-checkpoint")).start())


def _sink_values(sink_dir):
    values = []
    for path in sink_dir.glob("*.txt"):
        values += [line.split()[0] for line in path.read_text().splitlines() if line.strip()]
    return values


def _wait_for(condition, seconds=90.0):
    return wait_until(condition, seconds)


def test_real_time_mode_delivers_each_record_once_across_batches(spark, cluster_path, make_topic, tmp_path):
    make_topic("t", 2)
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for i in range(20):
            producer.produce("t", b"%d" % i)
    sink = tmp_path / "sink"
    sink.mkdir()
    query = _real_time_query(spark, cluster_path, tmp_path, sink)
    try:
        assert _wait_for(lambda: len(_sink_values(sink)) >= 20), query.exception()
        batch_before = query.lastProgress().batchId() if query.lastProgress() is not None else -1
        assert _wait_for(lambda: query.lastProgress() is not None and query.lastProgress().batchId() > batch_before)
        with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
            for i in range(20, 40):
                producer.produce("t", b"%d" % i)
        assert _wait_for(lambda: len(_sink_values(sink)) >= 40), query.exception()
    finally:
        query.stop()
    assert sorted(int(v) for v in _sink_values(sink)) == list(range(40))


def test_real_time_mode_refuses_read_limits_and_the_python_reader(spark, cluster_path, make_topic, tmp_path):
    fill(cluster_path, make_topic, partitions=1, n=5)
    sink = tmp_path / "sink"
    sink.mkdir()
    for i, (options, message) in enumerate((
            ({"maxOffsetsPerTrigger": "10"}, "do not apply in Real-time Mode"),
            ({"reader": "python"}, "STREAMING_REAL_TIME_MODE"))):
        try:
            query = _real_time_query(spark, cluster_path, tmp_path / str(i), sink, **options)
        except Exception as err:  # refused when the query starts
            assert re.search(message, str(err)), err
            continue
        try:
            with pytest.raises(Exception, match=message):
                query.awaitTermination(60_000)  # a JVM StreamingQuery: milliseconds
        finally:
            query.stop()

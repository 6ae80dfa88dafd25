"""Spark and consumer groups: a streaming query commits its group's offsets, a new query starts
from them, a second query on the group fences the first, history reads replay exactly what the
group consumed between two positions, and query progress turns into per-partition lag."""

from __future__ import annotations

import datetime as dt
import os
import time

import pytest
from deltalake import DeltaTable
from tests.spark.jvm_support import JAR, NO_JAR_REASON, load

from helpers import committed_offsets, produce_range
from kstream import ConsumerGroups, GroupBusyError, query_lag
from kstream.groups import MemberSpec
from kstream.log.cluster.cluster import Cluster
from stuck_transactions import snapshot

pytestmark = pytest.mark.spark


def produce(cluster_path, topic, start, count, partitions=2):
    produce_range(cluster_path, topic, start, count, partitions=partitions, config={"acks": "1"})



def stream(spark, cluster_path, group, starting="earliest"):
    return (spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", "t")
            .option("group.id", group).option("startingOffsets", starting).load()
            .selectExpr("CAST(value AS STRING) AS v"))


def test_query_commits_and_a_new_query_starts_from_the_group(spark, cluster_path, make_topic, tmp_path):
    make_topic("t", partitions=2)
    produce(cluster_path, "t", 0, 100)

    def run(checkpoint, starting):
        query = (stream(spark, cluster_path, "sg", starting).writeStream.format("memory")
                 .queryName(f"q{abs(hash(checkpoint))}").option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        rows = spark.sql(f"SELECT v FROM q{abs(hash(checkpoint))}").collect()
        return sorted(r.v for r in rows), query

    first, query = run(str(tmp_path / "c1"), "earliest")
    assert len(first) == 100
    assert committed_offsets(cluster_path, "sg") == {("t", 0): 50, ("t", 1): 50}
    lag = query_lag(query.lastProgress)
    assert {(r.topic, r.partition): r.lag for r in lag} == {("t", 0): 0, ("t", 1): 0}

    produce(cluster_path, "t", 100, 20)
    second, _ = run(str(tmp_path / "c2"), "group")  # a fresh checkpoint: resumes from the group
    assert second == sorted(f"v{i}" for i in range(100, 120))
    assert committed_offsets(cluster_path, "sg") == {("t", 0): 60, ("t", 1): 60}


def test_kafka_group_id_commits_nothing_as_in_the_kafka_connector(spark, cluster_path, make_topic, tmp_path):
    """The connector uses kafka.group.id only to name its Kafka consumer and never commits;
    committing to a group is what kstream's own group.id does."""
    make_topic("t", partitions=2)
    produce(cluster_path, "t", 0, 10)
    query = (spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", "t")
             .option("kafka.group.id", "kg").option("startingOffsets", "earliest").load()
             .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "k"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    assert sum(p["numInputRows"] for p in query.recentProgress) == 10
    assert committed_offsets(cluster_path, "kg") == {}


def test_second_query_on_a_group_fences_the_first(spark, cluster_path, make_topic, tmp_path):
    make_topic("t", partitions=2)
    produce(cluster_path, "t", 0, 10)
    first = (stream(spark, cluster_path, "fg").writeStream.format("noop")
             .option("checkpointLocation", str(tmp_path / "a")).trigger(processingTime="200 milliseconds").start())
    deadline = time.monotonic() + 180  # generous: only a failing run waits this long
    while committed_offsets(cluster_path, "fg") != {("t", 0): 5, ("t", 1): 5}:
        assert time.monotonic() < deadline, "the first query never committed"
        time.sleep(0.1)
    second = (stream(spark, cluster_path, "fg", starting="group").writeStream.format("noop")
              .option("checkpointLocation", str(tmp_path / "b")).trigger(processingTime="200 milliseconds").start())
    try:
        while second.lastProgress is None:
            assert time.monotonic() < deadline, "the second query never ran"
            time.sleep(0.1)
        produce(cluster_path, "t", 10, 10)
        with pytest.raises(Exception, match="no longer in group"):
            first.awaitTermination(180)
        assert not first.isActive
        while committed_offsets(cluster_path, "fg") != {("t", 0): 10, ("t", 1): 10}:
            assert time.monotonic() < deadline, "the second query did not take over"
            time.sleep(0.1)
        assert second.isActive
    finally:
        first.stop()
        second.stop()


def test_history_replay_between_two_positions(spark, cluster_path, make_topic):
    make_topic("t", partitions=2)
    produce(cluster_path, "t", 0, 60)
    service = ConsumerGroups(Cluster.open(cluster_path))
    service.commit("hg", {("t", 0): 10})  # partition 1 not committed yet
    time.sleep(0.05)
    at_10 = dt.datetime.now(dt.UTC)
    time.sleep(0.05)
    v2 = service.commit("hg", {("t", 0): 20, ("t", 1): 15})
    time.sleep(0.05)
    at_12 = dt.datetime.now(dt.UTC)
    time.sleep(0.05)
    service.commit("hg", {("t", 0): 30, ("t", 1): 30})
    service.close()

    def read(start, end):
        rows = (spark.read.format("kstream").option("cluster", cluster_path).option("subscribe", "t")
                .option("group.id", "hg").option("startingOffsets", start).option("endingOffsets", end)
                .load().select("partition", "offset").collect())
        return sorted((r.partition, r.offset) for r in rows)

    expected = [(0, o) for o in range(10, 20)] + [(1, o) for o in range(0, 15)]
    iso = "%Y-%m-%dT%H:%M:%S.%fZ"
    assert read(f"group@timestamp={at_10.strftime(iso)}", f"group@timestamp={at_12.strftime(iso)}") == expected
    assert read(f"group@timestamp={at_10.strftime(iso)}", f"group@version={v2}") == expected
    assert read(f"group@version={v2}", "group") == [(0, o) for o in range(20, 30)] + [(1, o) for o in range(15, 30)]


# Both readers: the JVM reader's only when the jar is on the shared session.
READERS = ["python", pytest.param("jvm", marks=pytest.mark.skipif(JAR is None, reason=NO_JAR_REASON))]


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("options", [{}, {"startingOffsets": "earliest", "endingOffsets": "latest"}])
def test_a_batch_read_refuses_a_group_id_it_would_never_commit(spark, cluster_path, make_topic, reader, options):
    """A batch read never commits (nor does the Kafka connector's), so group.id there, except to
    name the group of a group position, is an error saying what does commit (issue 20, item 4)."""
    make_topic("t", partitions=2)
    produce(cluster_path, "t", 0, 10)
    with pytest.raises(Exception, match="option 'group.id' on a batch read would commit nothing") as raised:
        load(spark, cluster_path, reader, subscribe="t", group__id="bg", **options).collect()
    assert "trigger(availableNow=True)" in str(raised.value)
    assert ".option('startingOffsets', 'group')" in str(raised.value)
    assert committed_offsets(cluster_path, "bg") == {}


@pytest.mark.parametrize("reader", ["python", "auto"])
def test_a_batch_read_from_the_group_reads_its_offsets_and_commits_nothing(spark, cluster_path, make_topic, reader):
    make_topic("t", partitions=2)
    produce(cluster_path, "t", 0, 20)
    service = ConsumerGroups(Cluster.open(cluster_path))
    version = service.commit("rg", {("t", 0): 3, ("t", 1): 4})
    service.close()
    rows = load(spark, cluster_path, reader, subscribe="t", group__id="rg", startingOffsets="group").collect()
    assert sorted((r.partition, r.offset) for r in rows) == [(0, o) for o in range(3, 10)] + [(1, o) for o in
                                                                                              range(4, 10)]
    assert committed_offsets(cluster_path, "rg") == {("t", 0): 3, ("t", 1): 4}
    assert DeltaTable(os.path.join(cluster_path, "__consumer_offsets")).version() == version


@pytest.mark.parametrize("options, message", [
    ({"startingOffsets": "group"}, "group.id"),
    ({"startingOffsets": "group@when=3", "group.id": "g"}, "group@version=N"),
    ({"startingOffsets": "group@version=999", "group.id": "g", "endingOffsets": "latest"}, "history"),
])
def test_bad_group_options(spark, cluster_path, make_topic, options, message):
    make_topic("t", partitions=1)
    service = ConsumerGroups(Cluster.open(cluster_path))
    produce(cluster_path, "t", 0, 2, partitions=1)
    service.commit("g", {("t", 0): 1})
    service.close()
    reader = spark.read.format("kstream").option("cluster", cluster_path).option("subscribe", "t")
    for k, v in options.items():
        reader = reader.option(k, v)
    with pytest.raises(Exception, match=message):
        reader.load().collect()


def test_commit_interval_coalesces_group_commits(spark, cluster_path, make_topic, tmp_path):
    make_topic("t", partitions=2)
    produce(cluster_path, "t", 0, 90)
    service = ConsumerGroups(Cluster.open(cluster_path))
    query = (spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", "t")
             .option("group.id", "slow").option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", 30)
             .option("auto.commit.interval.ms", "1h").load()
             .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    assert len([p for p in query.recentProgress if p["numInputRows"]]) == 3
    # One commit (the first batch's start) within the hour, then the AvailableNow run's final offsets.
    assert committed_offsets(cluster_path, "slow") == {("t", 0): 45, ("t", 1): 45}
    commits = [c for c in service.table.history() if c.get("kstream.group") == "slow"]

    assert len(commits) == 2
    # The query has ended and Spark never called stop(): its member goes with its process
    # (the driver-side Python worker, which Spark ends as the query ends, not before
    # awaitTermination returns), so a Python consumer may use the group once it has exited.
    # Readers stop showing it as a member then (issue 20, item 6), and write nothing.
    deadline = time.monotonic() + 60
    while service.describe("slow").members:
        assert time.monotonic() < deadline, "the ended query is still shown as a member"
        time.sleep(0.1)
    files = snapshot(cluster_path)
    assert service.describe("slow").state == "Empty"
    assert snapshot(cluster_path) == files
    while True:
        try:
            member = service.coordinator.join("slow", MemberSpec("after-spark", ("t",)))
            break
        except GroupBusyError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    assert [m.member_id for m in service.coordinator.describe("slow").members] == [member]
    service.close()


def test_a_recreated_topic_starts_from_the_fallback_not_the_old_offsets(spark, cluster_path, make_topic, tmp_path):
    """Issue 26 item 3 through Spark (written, not run in the fix's session: no Spark there;
    tests/groups/test_topic_incarnation.py plans the same read without Spark)."""
    from kstream.admin import Admin, NewTopic

    make_topic("t", partitions=2)
    produce(cluster_path, "t", 0, 200)
    service = ConsumerGroups(Cluster.open(cluster_path))
    service.commit("rg", {("t", 0): 100, ("t", 1): 100})
    service.close()
    with Admin({"cluster": cluster_path}) as admin:
        admin.delete_topics(["t"])["t"].result()
        admin.create_topics([NewTopic("t", 2, 1)])["t"].result()
    produce(cluster_path, "t", 0, 20)
    query = (spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", "t")
             .option("group.id", "rg").option("startingOffsets", "group").option("auto.offset.reset", "earliest")
             .load().selectExpr("CAST(value AS STRING) AS v").writeStream.format("memory")
             .queryName("recreated").option("checkpointLocation", str(tmp_path / "r"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    assert sorted(r.v for r in spark.sql("SELECT v FROM recreated").collect()) == sorted(f"v{i}" for i in range(20))
    assert committed_offsets(cluster_path, "rg") == {("t", 0): 10, ("t", 1): 10}


def test_a_committed_offset_past_the_log_end_takes_auto_offset_reset(spark, cluster_path, make_topic, tmp_path):
    """A group offset past the partition's log end offset (the log was truncated under it) takes
    auto.offset.reset, as the Consumer does; it raised "offset N does not exist yet". The other
    partition starts at its committed offset (tests/groups/test_group_start_out_of_range.py
    plans the other cases without Spark)."""
    from kstream.groups import CommittedOffset

    make_topic("t", partitions=2)
    produce(cluster_path, "t", 0, 20)
    service = ConsumerGroups(Cluster.open(cluster_path))
    service.table.ensure_created()  # rows commit() refuses: it checks the log end
    topic_id = service.cluster.topic("t").topic_id
    service.table.write("pg", [CommittedOffset("t", 0, 10**6, topic_id=topic_id),
                               CommittedOffset("t", 1, 5, topic_id=topic_id)])
    service.close()
    query = (spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", "t")
             .option("group.id", "pg").option("startingOffsets", "group").option("auto.offset.reset", "earliest")
             .load().selectExpr("partition", "offset").writeStream.format("memory")
             .queryName("past_log_end").option("checkpointLocation", str(tmp_path / "p"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    rows = sorted((r.partition, r.offset) for r in spark.sql("SELECT * FROM past_log_end").collect())
    assert rows == [(0, o) for o in range(10)] + [(1, o) for o in range(5, 10)]
    assert committed_offsets(cluster_path, "pg") == {("t", 0): 10, ("t", 1): 10}

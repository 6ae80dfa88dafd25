"""A deleted topic's committed offsets do not outlive it (issue 26, item 3): offsets are tied
to the topic's incarnation (its topic id), so a re-created topic of the same name starts
with no committed offsets; rows of an older incarnation read as absent and go at the next
commit. Rows written before kstream recorded topic ids count for the topic that existed
when they were committed."""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from kstream import Consumer, Producer
from kstream.admin import Admin, NewTopic
from kstream.groups import CommittedOffset, ConsumerGroups
from kstream.groups.offsets_table import SCHEMA, TABLE_DIR
from kstream.log.cluster.cluster import Cluster


def produce(cluster_path, n, topic="t"):
    with Producer({"cluster": cluster_path, "acks": "1"}) as producer:
        for i in range(n):
            producer.produce(topic, str(i).encode())
        producer.flush()


def recreate(cluster_path, topic="t"):
    with Admin({"cluster": cluster_path}) as admin:
        admin.delete_topics([topic])[topic].result()
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()


def member(cluster_path, reset="earliest"):
    return Consumer({"cluster": cluster_path, "group.id": "g", "auto.offset.reset": reset,
                     "enable.auto.commit": False, "heartbeat.interval.ms": 50, "fetch.wait.max.ms": 10})


def poll_values(consumer, n, limit=400):
    values = []
    for _ in range(limit):
        if len(values) == n:
            break
        message = consumer.poll(0.05)
        if message is not None:
            assert message.error() is None, message.error()
            values.append(int(message.value()))
    return values


@pytest.fixture
def recreated(cluster_path, make_topic):
    """g committed 100 on t; t was deleted, re-created, and got 20 new records."""
    make_topic("t", 1)
    produce(cluster_path, 120)
    groups = ConsumerGroups(Cluster.open(cluster_path))
    groups.commit("g", {("t", 0): 100})
    groups.close()
    recreate(cluster_path)
    produce(cluster_path, 20)


def test_a_recreated_topic_has_no_committed_offsets(cluster_path, recreated):
    groups = ConsumerGroups(Cluster.open(cluster_path))
    assert groups.committed("g") == {}
    assert groups.lag("g") == []
    assert groups.describe("g").partitions == ()
    groups.close()
    consumer = member(cluster_path)
    try:
        consumer.subscribe(["t"])
        assert poll_values(consumer, 20) == list(range(20))
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    groups = ConsumerGroups(Cluster.open(cluster_path))
    assert groups.committed("g")[("t", 0)].offset == 20
    rows = groups.table.rows("g").to_pylist()
    assert [(r["topic"], r["offset"]) for r in rows] == [("t", 20)]  # the old row went
    assert rows[0]["topic_id"] == groups.cluster.topic("t").topic_id
    groups.close()


def test_same_offset_in_a_new_incarnation_is_still_written(cluster_path, make_topic):
    make_topic("t", 1)
    produce(cluster_path, 10)
    groups = ConsumerGroups(Cluster.open(cluster_path))
    groups.commit("g", {("t", 0): 5})
    recreate(cluster_path)
    produce(cluster_path, 10)
    assert groups.commit("g", {("t", 0): 5}) is not None  # not "unchanged": another topic
    assert groups.committed("g")[("t", 0)].offset == 5
    groups.close()


def test_rows_without_a_topic_id_count_for_the_topic_they_were_committed_to(cluster_path, make_topic):
    make_topic("t", 1)
    produce(cluster_path, 10)
    groups = ConsumerGroups(Cluster.open(cluster_path))
    now = dt.datetime.now(dt.UTC)
    groups.commit("seed", {("t", 0): 1})  # makes the table
    groups.table.write("old", [CommittedOffset("t", 0, 3, commit_time=now - dt.timedelta(days=1))])
    groups.table.write("new", [CommittedOffset("t", 0, 4, commit_time=now + dt.timedelta(seconds=5))])
    assert groups.committed("old") == {}  # committed before this t was created
    assert groups.committed("new")[("t", 0)].offset == 4
    groups.close()


def test_a_table_of_the_old_schema_keeps_working(cluster_path, make_topic):
    make_topic("t", 1)
    produce(cluster_path, 10)
    old_schema = pa.schema([f for f in SCHEMA if f.name != "topic_id"])
    path = os.path.join(cluster_path, TABLE_DIR)
    DeltaTable.create(path, old_schema, partition_by=["group"])
    write_deltalake(path, pa.Table.from_pylist([{
        "group": "g", "topic": "t", "partition": 0, "offset": 6, "leader_epoch": 0, "metadata": None,
        "generation": -1, "member_id": None, "committer": "old",
        "commit_time": dt.datetime.now(dt.UTC) + dt.timedelta(seconds=5)}], schema=old_schema), mode="append")
    groups = ConsumerGroups(Cluster.open(cluster_path))
    assert groups.committed("g")[("t", 0)].offset == 6
    groups.commit("h", {("t", 0): 7})  # the first commit adds the column
    assert groups.committed("g")[("t", 0)].offset == 6
    assert groups.committed("h")[("t", 0)].offset == 7
    assert "topic_id" in DeltaTable(path).schema().to_arrow().names
    groups.close()


def test_spark_planning_from_the_group_ignores_a_deleted_topics_offsets(cluster_path, recreated):
    """startingOffsets=group (kstream.source.planning, no Spark needed to plan): the old
    incarnation's 100 is not applied to the new topic of 20 records (it raised "offset 100 does
    not exist yet"); the partition takes the group fallback (auto.offset.reset)."""
    from kstream.source.planning import resolve
    from kstream.source.read_options import EARLIEST, LATEST, GroupPosition

    cluster = Cluster.open(cluster_path)
    try:
        offsets = resolve(cluster, GroupPosition(), [("t", 0)], LATEST, group="g", group_fallback=EARLIEST)
    finally:
        cluster.close()
    assert offsets == {"t": {"0": 0}}


def listed(cluster_path):
    """The groups as the service, the AdminClient and `kstream groups list` list them."""
    from click.testing import CliRunner

    from kstream.admin import AdminClient
    from kstream.tools.cli.main import cli

    groups = ConsumerGroups(Cluster.open(cluster_path))
    try:
        names = groups.list_groups()
    finally:
        groups.close()
    client = AdminClient({"cluster": cluster_path})
    try:
        admin_names = sorted(g.group_id for g in client.list_consumer_groups().result().valid)
    finally:
        client.close()
    cli_names = CliRunner().invoke(cli, ["--cluster", cluster_path, "groups", "list"],
                                   catch_exceptions=False).output.split()
    assert names == admin_names == cli_names
    return names


@pytest.mark.parametrize("recreate_it", [True, False])
def test_a_group_whose_only_offsets_are_of_a_deleted_topic_is_not_listed(cluster_path, make_topic, recreate_it):
    """As in Kafka: a group with no members whose offsets went with their topic is gone. It
    was listed while describe called it Dead; list and describe now agree."""
    make_topic("t", 1)
    make_topic("u", 1)
    produce(cluster_path, 10)
    produce(cluster_path, 10, topic="u")
    groups = ConsumerGroups(Cluster.open(cluster_path))
    groups.commit("g", {("t", 0): 5})
    groups.commit("h", {("t", 0): 5, ("u", 0): 5})
    groups.close()
    assert listed(cluster_path) == ["g", "h"]
    if recreate_it:
        recreate(cluster_path)
    else:
        with Admin({"cluster": cluster_path}) as admin:
            admin.delete_topics(["t"])["t"].result()
    assert listed(cluster_path) == ["h"]  # h still has u's offsets
    groups = ConsumerGroups(Cluster.open(cluster_path))
    assert groups.describe("g").state == "Dead"
    assert groups.describe("h").state == "Empty"
    assert not groups.exists("g") and groups.exists("h")  # what single-group commands check
    from click.testing import CliRunner

    from kstream.tools.cli.main import cli
    described = CliRunner().invoke(cli, ["--cluster", cluster_path, "groups", "describe", "g"])
    assert described.exit_code != 0 and "does not exist" in described.output
    if recreate_it:  # committing to the new topic brings g back
        produce(cluster_path, 3)
        groups.commit("g", {("t", 0): 2})
    groups.close()
    assert listed(cluster_path) == (["g", "h"] if recreate_it else ["h"])


def test_the_monitors_commit_history_leaves_out_a_deleted_topics_commits(cluster_path, make_topic):
    """The Burrow window of t-0 (kstream.tools.monitor, read from the Delta history) holds only the
    new topic's commits, not the old incarnation's offsets 100 and 110."""
    from kstream.tools.monitor.lag import group_lag

    make_topic("t", 1)
    produce(cluster_path, 120)
    groups = ConsumerGroups(Cluster.open(cluster_path))
    groups.commit("g", {("t", 0): 100})
    groups.commit("g", {("t", 0): 110})
    groups.close()
    recreate(cluster_path)
    produce(cluster_path, 20)
    groups = ConsumerGroups(Cluster.open(cluster_path))
    groups.commit("g", {("t", 0): 5})
    groups.commit("g", {("t", 0): 15})
    groups.close()
    [partition] = group_lag(cluster_path, "g", min_distance_ms=0).partitions
    assert [c.offset for c in partition.commits] == [5, 15]

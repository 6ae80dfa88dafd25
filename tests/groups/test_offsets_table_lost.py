"""A lost or unreadable group offsets table is a fault, never "no commits" (issue 26, item 4);
a cluster where no group ever committed has no table, and reading it creates nothing."""

from __future__ import annotations

import os
import shutil

import pytest
from click.testing import CliRunner

from kstream import Consumer, Producer
from kstream.groups import ConsumerGroups, OffsetsTableLostError
from kstream.groups.offsets_table import TABLE_DIR
from kstream.log.cluster.cluster import Cluster
from kstream.tools.cli.main import cli


@pytest.fixture
def hundred(cluster_path, make_topic):
    make_topic("t", 1)
    with Producer({"cluster": cluster_path, "acks": "1"}) as producer:
        for i in range(100):
            producer.produce("t", str(i).encode())
        producer.flush()
    return "t"


def service(cluster_path):
    return ConsumerGroups(Cluster.open(cluster_path))


def test_no_commits_ever_reads_as_empty_and_creates_nothing(cluster_path, hundred):
    groups = service(cluster_path)
    assert groups.committed("g") == {}
    assert groups.list_groups() == []
    assert groups.table.version() == -1
    assert groups.describe("g").state == "Dead"
    assert groups.lag("g") == []
    groups.close()
    assert not os.path.exists(os.path.join(cluster_path, TABLE_DIR))


@pytest.mark.parametrize("lost", ["_delta_log", ""])
def test_a_lost_table_is_an_error_naming_it(cluster_path, hundred, lost):
    groups = service(cluster_path)
    groups.commit("g", {("t", 0): 40})
    groups.close()
    shutil.rmtree(os.path.join(cluster_path, TABLE_DIR, lost))

    groups = service(cluster_path)
    table = os.path.join(cluster_path, TABLE_DIR)
    for read in (lambda: groups.committed("g"), groups.list_groups, lambda: groups.lag("g"),
                 lambda: groups.describe("g")):
        with pytest.raises(OffsetsTableLostError, match="Restore it from a backup") as caught:
            read()
        assert table in str(caught.value)
    with pytest.raises(OffsetsTableLostError):  # a commit never makes a fresh empty table
        groups.commit("g", {("t", 0): 50})
    assert not os.path.exists(os.path.join(table, "_delta_log"))
    groups.close()

    consumer = Consumer({"cluster": cluster_path, "group.id": "g", "auto.offset.reset": "latest",
                         "enable.auto.commit": False, "heartbeat.interval.ms": 50})
    try:
        consumer.subscribe(["t"])
        with pytest.raises(OffsetsTableLostError):
            for _ in range(200):  # the assignment arrives within a few polls
                assert consumer.poll(0.05) is None  # never a record from "latest" (100)
        with pytest.raises(OffsetsTableLostError):  # again on the next poll, not a silent stall
            consumer.poll(0.05)
        assert all(tp.offset != 100 for tp in consumer.position(consumer.assignment()))
    finally:
        consumer.close()


def test_an_unreadable_table_is_an_error(cluster_path, hundred):
    groups = service(cluster_path)
    groups.commit("g", {("t", 0): 40})
    groups.close()
    log_dir = os.path.join(cluster_path, TABLE_DIR, "_delta_log")
    for name in os.listdir(log_dir):
        if name.endswith(".json"):
            with open(os.path.join(log_dir, name), "w") as f:
                f.write("not json\n")
    groups = service(cluster_path)
    with pytest.raises(OffsetsTableLostError, match="unreadable"):
        groups.committed("g")
    groups.close()


def test_recreate_offsets_table_is_the_operators_way_out(cluster_path, hundred):
    groups = service(cluster_path)
    groups.commit("g", {("t", 0): 40})
    groups.close()
    shutil.rmtree(os.path.join(cluster_path, TABLE_DIR, "_delta_log"))
    runner = CliRunner()
    refused = runner.invoke(cli, ["--cluster", cluster_path, "groups", "recreate-offsets-table"])
    assert refused.exit_code != 0 and "--yes" in refused.output
    done = runner.invoke(cli, ["--cluster", cluster_path, "groups", "recreate-offsets-table", "--yes"])
    assert done.exit_code == 0, done.output
    kept = [n for n in os.listdir(cluster_path) if n.startswith(TABLE_DIR + ".lost-")]
    assert len(kept) == 1  # the damaged table is moved aside, never deleted
    groups = service(cluster_path)
    assert groups.committed("g") == {}  # every group starts over from auto.offset.reset
    groups.commit("g", {("t", 0): 7})
    assert groups.committed("g")[("t", 0)].offset == 7
    groups.close()
    again = runner.invoke(cli, ["--cluster", cluster_path, "groups", "recreate-offsets-table", "--yes"])
    assert again.exit_code != 0 and "is readable" in str(again.exception)  # a good one stays


def test_a_process_that_had_the_table_open_does_not_write_over_its_loss(cluster_path, hundred):
    groups = service(cluster_path)
    groups.commit("g", {("t", 0): 40})
    groups.commit("h", {("t", 0): 30})  # the table is cached in this process now
    shutil.rmtree(os.path.join(cluster_path, TABLE_DIR, "_delta_log"))
    with pytest.raises(OffsetsTableLostError):
        groups.commit("g", {("t", 0): 50})  # would write a log of one version: h's offsets gone
    with pytest.raises(OffsetsTableLostError):
        groups.committed("h")
    assert not os.path.exists(os.path.join(cluster_path, TABLE_DIR, "_delta_log"))
    groups.close()

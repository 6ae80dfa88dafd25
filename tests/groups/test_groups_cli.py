"""`kstream groups` end to end (click's runner): list, describe with lag, reset-offsets dry run and
--execute for every method, refusal with active members, delete."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kstream import Producer
from kstream.groups import ConsumerGroups, MemberSpec
from kstream.log.cluster.cluster import Cluster
from kstream.tools.cli.main import cli


def run(cluster, *args):
    return CliRunner().invoke(cli, ["--cluster", cluster, *args], catch_exceptions=False)


@pytest.fixture
def setup(cluster_path, make_topic):
    make_topic("t", partitions=2)
    with Producer({"cluster": cluster_path, "acks": "1"}) as producer:
        for i in range(10):
            producer.produce("t", f"v{i}".encode(), partition=i % 2, timestamp=1_000_000 + i * 1000)
    service = ConsumerGroups(Cluster.open(cluster_path))
    service.commit("g", {("t", 0): 2, ("t", 1): 5})
    yield service
    service.close()


def described(cluster_path):
    result = run(cluster_path, "groups", "describe", "g", "--json")
    assert result.exit_code == 0, result.output
    return {p["partition"]: p for p in json.loads(result.output)["partitions"]}


def test_list_and_describe_with_lag(cluster_path, setup):
    assert run(cluster_path, "groups", "list").output.split() == ["g"]
    parts = described(cluster_path)
    assert {p: (v["committed"], v["log_end_offset"], v["lag"]) for p, v in parts.items()} == {
        0: (2, 5, 3), 1: (5, 5, 0)}
    table = run(cluster_path, "groups", "describe", "g").output
    assert "LOG-END-OFFSET" in table and "TotalLag: 3" in table


@pytest.mark.parametrize("args, expected", [
    (["--to-earliest"], {0: 0, 1: 0}),
    (["--to-latest"], {0: 5, 1: 5}),
    (["--shift-by", "-1"], {0: 1, 1: 4}),
    (["--shift-by", "100"], {0: 5, 1: 5}),  # clamped to the log
    (["--to-offset", "3"], {0: 3, 1: 3}),
    # timestamps: partition 0 holds i = 0,2,4,6,8 at 1_000_000 + i*1000 ms
    (["--to-datetime", "1970-01-01T00:16:45Z"], {0: 3, 1: 2}),
])
def test_reset_offsets(cluster_path, setup, args, expected):
    dry = run(cluster_path, "groups", "reset-offsets", "g", "--topic", "t", *args)
    assert dry.exit_code == 0 and "Dry run" in dry.output
    assert {p: v["committed"] for p, v in described(cluster_path).items()} == {0: 2, 1: 5}
    done = run(cluster_path, "groups", "reset-offsets", "g", "--topic", "t", *args, "--execute")
    assert done.exit_code == 0, done.output
    assert {p: v["committed"] for p, v in described(cluster_path).items()} == expected


def test_reset_from_file_and_one_partition(cluster_path, setup, tmp_path):
    plan = tmp_path / "plan.csv"
    plan.write_text("# topic,partition,offset\nt,1,1\n")
    assert run(cluster_path, "groups", "reset-offsets", "g", "--from-file", str(plan), "--execute").exit_code == 0
    assert run(cluster_path, "groups", "reset-offsets", "g", "--topic", "t:0", "--to-offset", "4",
               "--execute").exit_code == 0
    assert {p: v["committed"] for p, v in described(cluster_path).items()} == {0: 4, 1: 1}


def test_reset_and_delete_refused_with_active_members(cluster_path, setup):
    member = setup.coordinator.join("g", MemberSpec("live", ("t",)))
    result = CliRunner().invoke(cli, ["--cluster", cluster_path, "groups", "reset-offsets", "g", "--topic", "t",
                                      "--to-earliest", "--execute"])
    assert result.exit_code != 0 and "active member" in str(result.exception)
    assert {p: v["committed"] for p, v in described(cluster_path).items()} == {0: 2, 1: 5}
    members = json.loads(run(cluster_path, "groups", "describe", "g", "--json").output)["members"]
    assert [m["member_id"] for m in members] == [member]
    assert run(cluster_path, "groups", "delete", "g", "--force").exit_code == 0
    assert run(cluster_path, "groups", "list").output.split() == []


def test_reset_needs_one_method(cluster_path, setup):
    result = CliRunner().invoke(cli, ["--cluster", cluster_path, "groups", "reset-offsets", "g", "--topic", "t"])
    assert result.exit_code != 0 and "exactly one" in result.output


def test_console_consume_as_a_group_member(cluster_path, make_topic):
    make_topic("c", partitions=2)
    with Producer({"cluster": cluster_path}) as producer:
        for i in range(4):
            producer.produce("c", f"a{i}".encode(), partition=i % 2)
    first = run(cluster_path, "consume", "c", "--group", "cg", "--from-beginning", "--timeout-ms", "1000")
    printed = lambda result: sorted(line for line in result.output.splitlines() if not line.startswith("Processed"))  # noqa: E731
    assert printed(first) == ["a0", "a1", "a2", "a3"]
    with Producer({"cluster": cluster_path}) as producer:
        producer.produce("c", b"b0", partition=0)
    again = run(cluster_path, "consume", "c", "--group", "cg", "--from-beginning", "--timeout-ms", "1000")
    assert printed(again) == ["b0"]  # resumed from the group's committed offsets
    parts = json.loads(run(cluster_path, "groups", "describe", "cg", "--json").output)["partitions"]
    assert {p["partition"]: p["lag"] for p in parts} == {0: 0, 1: 0}

"""`kstream groups` with kafka-consumer-groups' options: --all-groups, --members, --state,
--to-current, --by-duration, --export/--from-file CSV, delete-offsets; a missing group is an error."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from kstream import Producer
from kstream.groups import ConsumerGroups, MemberSpec
from kstream.log.cluster.cluster import Cluster
from kstream.tools.cli.main import cli


def run(cluster, *args):
    return CliRunner().invoke(cli, ["--cluster", cluster, *args])


@pytest.fixture
def setup(cluster_path, make_topic):
    """t (2 partitions): partition 0 holds records 2 h old then new ones; g and h committed."""
    make_topic("t", partitions=2)
    now = int(time.time() * 1000)
    with Producer({"cluster": cluster_path, "acks": "1"}) as producer:
        for i in range(10):
            producer.produce("t", f"v{i}".encode(), partition=i % 2,
                             timestamp=now - 2 * 3600_000 if i < 6 else now)
    service = ConsumerGroups(Cluster.open(cluster_path))
    service.commit("g", {("t", 0): 2, ("t", 1): 5})
    service.commit("h", {("t", 1): 1})
    yield service
    service.close()


def table_cells(line):
    """The cells of one row of a rich table ([] for a border line)."""
    if not line.startswith(("│", "┃")) and "  " not in line.strip():
        return []
    return [c.strip() for c in line.strip().strip("│┃").replace("┃", "│").split("│")] \
        if line.startswith(("│", "┃")) else line.split()


def committed(path, group):
    result = run(path, "groups", "describe", group, "--json")
    assert result.exit_code == 0, result.output
    return {p["partition"]: p["committed"] for p in json.loads(result.output)["partitions"]}


def test_describe_a_missing_group_is_an_error(cluster_path, setup):
    result = run(cluster_path, "groups", "describe", "nosuchgroup")
    assert result.exit_code == 1
    assert "'nosuchgroup' does not exist" in result.output and "kstream groups list" in result.output
    process = subprocess.run([sys.executable, "-c", "from kstream.tools.cli import main; main()", "--cluster",
                              cluster_path, "groups", "describe", "--group", "nosuchgroup"],
                             capture_output=True, text=True)
    assert process.returncode != 0 and "does not exist" in process.stderr
    assert run(cluster_path, "groups", "delete", "nosuchgroup").exit_code == 1
    assert run(cluster_path, "groups", "list").output.split() == ["g", "h"]  # nothing created


def test_all_groups_state_and_members(cluster_path, setup):
    documents = json.loads(run(cluster_path, "groups", "describe", "--all-groups", "--json").output)
    assert [d["group"] for d in documents] == ["g", "h"]
    member = setup.coordinator.join("g", MemberSpec("live", ("t",)))
    state = run(cluster_path, "groups", "describe", "--group", "g", "--group", "h", "--state").output
    assert "STATE" in state and "#MEMBERS" in state
    rows = {cells[0]: cells for cells in map(table_cells, state.splitlines()) if cells}
    assert rows["g"][1:4] == ["range", "Stable", "1"] and rows["h"][2:4] == ["Empty", "0"]
    members = run(cluster_path, "groups", "describe", "g", "--members", "--verbose").output
    assert "CONSUMER-ID" in members and member in members and "t(0,1)" in members
    assert "no active members" in run(cluster_path, "groups", "describe", "h", "--members").output
    listed = run(cluster_path, "groups", "list", "--state").output
    assert "STATE" in listed and "Empty" in listed
    only_empty = [table_cells(line) for line in run(cluster_path, "groups", "list", "--state", "empty")
                  .output.splitlines()]
    assert [cells for cells in only_empty if cells] == [["GROUP", "STATE"], ["h", "Empty"]]


def test_to_current_and_by_duration(cluster_path, setup):
    done = run(cluster_path, "groups", "reset-offsets", "g", "--topic", "t", "--to-current", "--execute")
    assert done.exit_code == 0, done.output
    assert committed(cluster_path, "g") == {0: 2, 1: 5}
    # partition 0: offsets 0-2 are 2 h old, 3-4 new; partition 1: 0-2 old, 3-4 new
    done = run(cluster_path, "groups", "reset-offsets", "g", "--topic", "t", "--by-duration", "PT1H", "--execute")
    assert done.exit_code == 0, done.output
    assert committed(cluster_path, "g") == {0: 3, 1: 3}
    done = run(cluster_path, "groups", "reset-offsets", "g", "--topic", "t", "--by-duration", "P1DT1H", "--execute")
    assert committed(cluster_path, "g") == {0: 0, 1: 0}
    bad = run(cluster_path, "groups", "reset-offsets", "g", "--topic", "t", "--by-duration", "1 hour")
    assert bad.exit_code == 2 and "PnDTnHnMnS" in bad.output


def test_export_and_from_file_round_trip(cluster_path, setup, tmp_path):
    exported = run(cluster_path, "groups", "reset-offsets", "g", "--topic", "t", "--to-earliest", "--export")
    assert exported.exit_code == 0, exported.output
    assert exported.output == "t,0,0\nt,1,0\n"
    assert committed(cluster_path, "g") == {0: 2, 1: 5}  # --export alone is a dry run
    both = run(cluster_path, "groups", "reset-offsets", "--all-groups", "--all-topics", "--shift-by", "-1",
               "--export", "--dry-run")
    assert both.output == "g,t,0,1\ng,t,1,4\nh,t,1,0\n"
    plan = tmp_path / "plan.csv"
    plan.write_text(both.output)
    done = run(cluster_path, "groups", "reset-offsets", "h", "--from-file", str(plan), "--execute")
    assert done.exit_code == 0, done.output
    assert committed(cluster_path, "h") == {1: 0} and committed(cluster_path, "g") == {0: 2, 1: 5}
    plan.write_text("t,0,4\n")
    run(cluster_path, "groups", "reset-offsets", "--group", "g", "--from-file", str(plan), "--execute")
    assert committed(cluster_path, "g") == {0: 4, 1: 5}


def test_delete_offsets(cluster_path, setup):
    result = run(cluster_path, "groups", "delete-offsets", "g", "--topic", "t:0")
    assert result.exit_code == 0, result.output
    assert "Successful" in result.output
    assert committed(cluster_path, "g") == {1: 5}
    assert committed(cluster_path, "h") == {1: 1}
    setup.coordinator.join("h", MemberSpec("live", ("t",)))
    refused = run(cluster_path, "groups", "delete-offsets", "--group", "h", "--topic", "t")
    assert refused.exit_code != 0 and "active members" in str(refused.exception)
    assert committed(cluster_path, "h") == {0: None, 1: 1}  # (a member's partitions show uncommitted)
    assert run(cluster_path, "groups", "delete-offsets", "nosuch", "--topic", "t").exit_code == 1


def test_list_prints_kafka_consumer_groups_lines(cluster_path, make_topic, setup):
    """As kafka-consumer-groups --list: bare names (nothing when there are none); with --state,
    its printf table (a GROUP STATE header even when no group matches, no box, no padding
    before the first column) that awk and cut read as they read Kafka's."""
    assert run(cluster_path, "groups", "list").output == "g\nh\n"
    assert run(cluster_path, "groups", "list", "--state").output.splitlines() == [
        "GROUP".ljust(25) + " " + "STATE".ljust(20), "g".ljust(25) + " " + "Empty".ljust(20),
        "h".ljust(25) + " " + "Empty".ljust(20)]
    header_only = run(cluster_path, "groups", "list", "--state", "stable").output
    assert header_only.splitlines() == ["GROUP".ljust(25) + " " + "STATE".ljust(20)]


def test_list_on_a_cluster_without_groups_prints_nothing(cluster_path, make_topic):
    make_topic("t")
    result = run(cluster_path, "groups", "list")
    assert result.exit_code == 0 and result.output == ""
    header = "GROUP".ljust(25) + " " + "STATE".ljust(20)
    assert run(cluster_path, "groups", "list", "--state").output.splitlines() == [header]

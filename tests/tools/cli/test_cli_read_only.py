"""Read-only commands change no file of a cluster, and create none on a mistyped path."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from helpers import file_tree
from kstream import Producer
from kstream.groups import ConsumerGroups
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import format as fmt
from kstream.tools.cli.main import cli

READ_ONLY = [
    ("get-offsets",),
    ("get-offsets", "--time", "-2"),
    ("get-offsets", "--time", "-3"),
    ("get-offsets", "--time", "0"),
    ("groups", "list", "--state"),
    ("groups", "describe", "--all-groups", "--state"),
    ("groups", "describe", "g", "--members", "--verbose"),
    ("groups", "describe", "g", "--json"),
    ("groups", "reset-offsets", "g", "--all-topics", "--by-duration", "PT1H", "--export"),
    ("reassign", "--verify", "--reassignment-json-file", "{plan}"),
    ("reassign", "--generate", "--topics-to-move-json-file", "{topics}", "--broker-list", "1"),
    ("dump-log", "{index}", "{time_index}", "{segment}"),
    ("topics", "describe"),
]


def tree(path):
    """Every file and dir under ``path`` but SQLite's journal files and the partition lock files
    (tests/helpers.py's file_tree)."""
    return file_tree(path)


@pytest.fixture
def cluster(cluster_path, make_topic, tmp_path):
    make_topic("t", partitions=2, config={"index.interval.bytes": "1", "segment.ms": str(1 << 60)})
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for i in range(6):
            producer.produce("t", b"v", partition=0, timestamp=1000 + i)
            producer.flush()
    service = ConsumerGroups(Cluster.open(cluster_path))
    service.commit("g", {("t", 0): 2})
    service.close()
    (tmp_path / "plan.json").write_text(json.dumps(
        {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1]}]}))
    (tmp_path / "topics.json").write_text(json.dumps({"version": 1, "topics": [{"topic": "t"}]}))
    directory = os.path.join(cluster_path, "logs", "t-0")
    return {"plan": str(tmp_path / "plan.json"), "topics": str(tmp_path / "topics.json"),
            "index": os.path.join(directory, fmt.segment_file_name(0, fmt.OFFSET_INDEX_SUFFIX)),
            "time_index": os.path.join(directory, fmt.segment_file_name(0, fmt.TIME_INDEX_SUFFIX)),
            "segment": os.path.join(directory, fmt.segment_file_name(0))}


@pytest.mark.parametrize("command", READ_ONLY, ids=" ".join)
def test_read_only_commands_change_nothing(cluster_path, cluster, command):
    args = [part.format(**cluster) for part in command]
    before = tree(cluster_path)
    result = CliRunner().invoke(cli, ["--cluster", cluster_path, *args])
    assert result.exit_code == 0, result.output
    assert tree(cluster_path) == before


@pytest.mark.parametrize("command", [("get-offsets",), ("groups", "list", "--state"),
                                     ("groups", "describe", "--all-groups"), ("delete-records",
                                     "--offset-json-file", "{plan}"), ("reassign", "--verify",
                                     "--reassignment-json-file", "{plan}")], ids=" ".join)
def test_on_a_mistyped_path_nothing_is_created(tmp_path, command):
    plan = tmp_path / "plan.json"
    plan.write_text('{"version": 1, "partitions": [{"topic": "t", "partition": 0, "offset": 1}]}')
    missing = tmp_path / "typo"
    args = [part.format(plan=plan) for part in command]
    result = subprocess.run([sys.executable, "-c", "from kstream.tools.cli.main import main; main()",
                             "--cluster", str(missing), *args], capture_output=True, text=True)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"no kstream cluster at {missing}" in result.stderr
    assert not missing.exists()

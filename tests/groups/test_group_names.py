"""Group names are checked before anything is written (issue 10, defect 9).

An empty group name used to be written to the offsets Delta table as a null
partition value; from then on every commit and listing of every group, in
every process, failed ("unmasked nulls for non-nullable field group").
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from kstream import ConfigError, Consumer, Producer
from kstream.groups import ConsumerGroups
from kstream.log.cluster.cluster import Cluster


@pytest.fixture
def groups(cluster_path, make_topic):
    make_topic("t", 2)
    with Producer({"cluster": cluster_path, "acks": "1"}) as producer:
        for i in range(4):
            producer.produce("t", b"v", partition=i % 2)
    service = ConsumerGroups(Cluster.open(cluster_path))
    service.commit("g", {("t", 0): 1})
    yield service
    service.close()


def kstream_cli(cluster_path, *args):
    return subprocess.run([sys.executable, "-c", "from kstream.tools.cli.main import main; main()",
                           "--cluster", cluster_path, *args], capture_output=True, text=True)


def test_empty_group_name_on_the_command_line_writes_nothing(cluster_path, groups):
    version = groups.table.version()
    result = kstream_cli(cluster_path, "groups", "reset-offsets", "", "--topic", "t",
                         "--to-earliest", "--execute")
    assert result.returncode == 1
    assert "group name is empty" in result.stderr, result.stderr
    assert groups.table.version() == version
    # The table still works for every group, in this process and in a new one.
    groups.commit("g", {("t", 1): 2})
    groups.commit("other", {("t", 0): 2})
    assert groups.list_groups() == ["g", "other"]
    listed = kstream_cli(cluster_path, "groups", "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["g", "other"]


@pytest.mark.parametrize("name", [
    "",
    "x" * 250,  # `group=` + 250 bytes is past a 255-byte file name
    "é" * 42,  # 42 characters, but 252 bytes URL-escaped
    "bad\nname",
    "tab\tname",
    "__HIVE_DEFAULT_PARTITION__",
])
def test_illegal_group_names_are_refused_by_every_write(groups, name):
    version = groups.table.version()
    with pytest.raises(ConfigError, match="group"):
        groups.commit(name, {("t", 0): 1})
    with pytest.raises(ConfigError, match="group"):
        groups.reset_offsets(name, {("t", 0): 0})
    with pytest.raises(ConfigError, match="group"):
        groups.delete(name)
    assert groups.table.version() == version
    assert groups.list_groups() == ["g"]


def test_longest_legal_group_names_work(groups):
    longest = "x" * 249
    escaped = "é" * 41  # 246 bytes escaped
    spaced = "my group: a/b"
    for name in (longest, escaped, spaced):
        groups.commit(name, {("t", 0): 2})
        assert groups.committed(name)[("t", 0)].offset == 2
    assert groups.list_groups() == sorted(["g", longest, escaped, spaced])


def test_consumer_group_id_is_checked_before_the_cluster_is_touched(cluster_path, groups):
    with pytest.raises(ConfigError, match="group.id.*empty"):
        Consumer({"cluster": cluster_path, "group.id": ""})
    with pytest.raises(ConfigError, match="group.id.*too long"):
        Consumer({"cluster": cluster_path, "group.id": "x" * 250})
    assert groups.list_groups() == ["g"]


def test_spark_reader_group_id_is_checked():
    from kstream.source.read_options import ReaderOptions

    with pytest.raises(ConfigError, match="group.id.*empty"):
        ReaderOptions.from_options({"subscribe": "t", "group.id": ""}, streaming=True)
    with pytest.raises(ConfigError, match="group.id.*unprintable"):
        ReaderOptions.from_options({"subscribe": "t", "group.id": "a\x00b"}, streaming=True)
    assert ReaderOptions.from_options({"subscribe": "t", "group.id": "etl"}, streaming=True).group_id == "etl"

"""Lost or wrong cluster state is reported, never replaced by a fresh empty cluster (issue 10,
defect 15).

Only creating a topic may create a cluster. Every other command and client on a
path that holds no cluster says so (naming the path) and leaves the path alone;
a cluster whose metadata.db is deleted, emptied or garbled is a ClusterError,
with nothing re-created over it. Relative log dirs are relative to the cluster
dir, whatever the working directory.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kstream import (
    Admin,
    ClusterError,
    Consumer,
    NewTopic,
    Producer,
    TopicPartition,
)
from kstream.log.cluster.cluster import Cluster


def kstream_cli(cwd, cluster, *args, input=None):
    return subprocess.run([sys.executable, "-c", "from kstream.tools.cli.main import main; main()",
                           "--cluster", cluster, *args], capture_output=True, text=True, input=input,
                          cwd=cwd)


READ_COMMANDS = [
    ("topics", "list"),
    ("topics", "describe"),
    ("topics", "delete", "t"),
    ("groups", "list"),
    ("groups", "describe", "g"),
    ("consume", "t", "--timeout-ms", "100"),
    ("produce", "t"),
    ("log-dirs", "describe"),
    ("verify-replicas",),
]


@pytest.mark.parametrize("command", READ_COMMANDS, ids=" ".join)
def test_commands_on_a_mistyped_path_create_nothing(tmp_path, command):
    missing = tmp_path / "typo"
    result = kstream_cli(tmp_path, str(missing), *command, input="x\n")
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.startswith(f"error: no kstream cluster at {missing}"), result.stderr
    assert "topics create" in result.stderr  # says what to do
    assert not missing.exists()


def test_clients_on_a_mistyped_path_create_nothing(tmp_path):
    missing = str(tmp_path / "typo")
    for open_client in (
        lambda: Producer({"cluster": missing}),
        lambda: Consumer({"cluster": missing}),
        lambda: Consumer({"cluster": missing, "group.id": "g"}),
        lambda: Admin({"cluster": missing}).list_topics(),
        lambda: Admin({"cluster": missing}).describe_log_dirs(),
        lambda: Admin({"cluster": missing}).delete_topics(["t"])["t"].result(),
        lambda: Cluster.open(missing),
    ):
        with pytest.raises(ClusterError, match=f"no kstream cluster at {missing}") as raised:
            open_client()
        assert raised.type.__name__ == "ClusterNotFoundError"
        assert not os.path.exists(missing)


def test_the_spark_reader_opens_without_creating(tmp_path):
    from kstream.source.partition_reader import read_range
    from kstream.source.planning import PartitionRange

    missing = str(tmp_path / "typo")
    with pytest.raises(ClusterError, match=f"no kstream cluster at {missing}"):
        next(read_range(PartitionRange(missing, "t", 0, 0, 1, True), None))
    assert not os.path.exists(missing)


def test_creating_a_topic_creates_the_cluster(tmp_path):
    path = tmp_path / "new"
    result = kstream_cli(tmp_path, str(path), "topics", "create", "t")
    assert result.returncode == 0, result.stderr
    assert (path / "cluster.properties").exists()
    with Admin({"cluster": str(path)}) as admin:
        admin.create_topics([NewTopic("u", 1)])["u"].result()
        assert admin.cluster.list_topics() == ["t", "u"]
    again = kstream_cli(tmp_path, str(path), "topics", "create", "t", "--if-not-exists")
    assert again.returncode == 0 and "already exists" in again.stdout


def test_a_bad_topic_does_not_create_the_cluster(tmp_path):
    path = str(tmp_path / "new")
    with Admin({"cluster": path}) as admin:
        with pytest.raises(Exception, match="illegal topic name"):
            admin.create_topics([NewTopic("bad/name", 1)])["bad/name"].result()
    assert not os.path.exists(path)


@pytest.fixture
def cluster_with_data(cluster_path, make_topic):
    make_topic("t")
    with Producer({"cluster": cluster_path}) as producer:
        producer.produce("t", b"precious")
    return cluster_path


def _lose(path, how):
    db = os.path.join(path, "metadata.db")
    for suffix in ("-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    if how == "deleted":
        os.remove(db)
    elif how == "zero-length":
        open(db, "wb").close()
    else:
        with open(db, "wb") as f:
            f.write(b"this is not a database, it is a shopping list\n" * 100)
    return db


@pytest.mark.parametrize(("how", "says"), [("deleted", "is missing"), ("zero-length", "is empty"),
                                           ("garbage", "is corrupt")])
def test_lost_metadata_is_an_error_and_nothing_is_recreated(cluster_with_data, how, says):
    path = cluster_with_data
    db = _lose(path, how)
    before = open(db, "rb").read() if os.path.exists(db) else None
    for open_client in (
        lambda: Cluster.open(path),
        lambda: Cluster.open(path, create=True),
        lambda: Producer({"cluster": path}),
        lambda: Consumer({"cluster": path}),
        lambda: Admin({"cluster": path}),
    ):
        with pytest.raises(ClusterError, match=f"metadata.db {says}.*restore metadata.db from a backup"):
            open_client()
    result = kstream_cli(path, path, "topics", "create", "t2")
    assert result.returncode == 1 and f"metadata.db {says}" in result.stderr, result.stderr
    after = open(db, "rb").read() if os.path.exists(db) else None
    assert after == before  # not re-created, not "repaired" into an empty cluster
    assert not os.path.exists(db + "-wal")


def test_lost_cluster_properties_is_an_error(cluster_with_data):
    os.remove(os.path.join(cluster_with_data, "cluster.properties"))
    with pytest.raises(ClusterError, match="lost its cluster.properties"):
        Admin({"cluster": cluster_with_data}).create_topics([NewTopic("t2", 1)])["t2"].result()
    assert not os.path.exists(os.path.join(cluster_with_data, "cluster.properties"))


def _files(path):
    return {os.path.join(d, f): os.stat(os.path.join(d, f)).st_mtime_ns
            for d, _, names in os.walk(path) for f in names}


@pytest.mark.parametrize(("version", "says"), [
    ("2", "has on-disk format version 2, newer than this kstream's \\(1\\).*Use that kstream"),
    ("one", "has on-disk format version 'one' in cluster.properties.*restore it from a backup"),
])
def test_another_format_version_is_refused_and_left_untouched(cluster_with_data, version, says):
    """docs/FORMAT.md, Versions and upgrades: an older kstream never reads, recovers or
    rewrites a cluster a newer one wrote (it could take new frames for torn ones)."""
    properties = os.path.join(cluster_with_data, "cluster.properties")
    text = open(properties).read()
    assert "kstream.format.version=1\n" in text
    with open(properties, "w") as f:
        f.write(text.replace("kstream.format.version=1\n", f"kstream.format.version={version}\n"))
    before = _files(cluster_with_data)
    for open_client in (lambda: Cluster.open(cluster_with_data), lambda: Producer({"cluster": cluster_with_data}),
                        lambda: Consumer({"cluster": cluster_with_data})):
        with pytest.raises(ClusterError, match=says):
            open_client()
    result = kstream_cli(cluster_with_data, cluster_with_data, "topics", "list")
    assert result.returncode == 1 and "format version" in result.stderr, result.stderr
    assert _files(cluster_with_data) == before


def test_relative_log_dirs_are_inside_the_cluster_dir(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    path = str(tmp_path / "cluster")
    with Admin({"cluster": path, "log.dirs": "disk1,disk2"}) as admin:
        admin.create_topics([NewTopic("t", 2, 2)])["t"].result()
        assert sorted(admin.cluster.log_dir_paths().values()) == [
            os.path.join(path, "disk1"), os.path.join(path, "disk2")]
    assert os.listdir(elsewhere) == []
    with Producer({"cluster": path, "log.dirs": "disk1,disk2"}) as producer:  # the same settings
        producer.produce("t", b"x", partition=1)
    monkeypatch.chdir(tmp_path)  # another working directory: the same cluster, the same dirs
    consumer = Consumer({"cluster": path, "log.dirs": "disk1/,disk2"})
    consumer.assign([TopicPartition("t", 1, 0)])
    try:
        assert [m.value() for m in consumer.consume(10, timeout=1)] == [b"x"]
    finally:
        consumer.close()

"""metadata.db's disk failing: clear errors naming the file, and no write a client does not need
(issue 26 item 10).

A full disk gave producers SQLite's raw "database or disk is full", and creating a
Producer wrote to metadata.db at all (its idempotence producer id, now taken at the
first send, as Kafka's client does). A removed metadata.db-wal read as "disk I/O
error". Each is now a MetadataStorageError (a ClusterError) saying what happened and
what to do; nothing is re-created.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess

import pytest

from kstream import Admin, NewTopic, Producer
from kstream.errors import ClusterError, MetadataStorageError
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.metadata import Metadata


def counters(path):
    connection = sqlite3.connect(f"file:{path}/metadata.db?mode=ro", uri=True)
    try:
        return dict(connection.execute("SELECT name, value FROM counters").fetchall())
    finally:
        connection.close()


def test_creating_a_producer_writes_nothing_to_metadata(cluster_path, make_topic):
    make_topic("t")
    before = counters(cluster_path)
    files = [os.path.join(cluster_path, name) for name in ("metadata.db", "metadata.db-wal")]

    def contents():
        return [open(f, "rb").read() if os.path.exists(f) else None for f in files]

    stored = contents()
    Producer({"cluster": cluster_path}).close()  # idempotent by default
    assert counters(cluster_path) == before
    assert contents() == stored  # not one page written
    with Producer({"cluster": cluster_path}) as producer:  # the first send takes the producer id
        producer.produce("t", b"x")
        producer.flush()
    assert counters(cluster_path).get("producer_id", 0) == before.get("producer_id", 0) + 1


def test_a_full_metadata_database_is_a_clear_error(cluster_path, make_topic, monkeypatch):
    make_topic("t")
    connect = Metadata._connect

    def capped(self):  # SQLite's own SQLITE_FULL: the database may not grow past its size now
        connection = connect(self)
        connection.execute("PRAGMA max_page_count = 1")
        return connection

    monkeypatch.setattr(Metadata, "_connect", capped)
    with Admin({"cluster": cluster_path}) as admin:
        with pytest.raises(MetadataStorageError) as refused:
            admin.create_topics([NewTopic("big", 300, 1)])["big"].result()
    message = str(refused.value)
    assert os.path.join(cluster_path, "metadata.db") in message
    assert "full" in message and "free space" in message.lower()
    assert isinstance(refused.value, ClusterError) and isinstance(refused.value.__cause__, sqlite3.Error)


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs (root only; skipped where mounting is not allowed)."""
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root and mount (a small tmpfs for a full disk)")
    try:
        yield str(mount)
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def fill(directory):
    """Write a file until the file system is full."""
    with open(os.path.join(directory, "filler"), "wb") as f:
        try:
            for _ in range(1024):  # at most 64 MiB, far more than the disk
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            return
    raise AssertionError("the disk never filled")


def first_error(producer):
    """The error of producing one record: raised, or given to the delivery callback."""
    errors = []
    try:
        producer.produce("t", b"x", on_delivery=lambda err, msg: errors.append(err))
        producer.flush()
    except MetadataStorageError as err:
        errors.append(err)
    assert errors and errors[0] is not None
    return str(errors[0])


def test_producers_on_a_full_cluster_disk(small_disk):
    path = os.path.join(small_disk, "cluster")
    with Admin({"cluster": path}) as admin:
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result()
    before = Producer({"cluster": path, "linger.ms": 0})  # open before the disk fills
    try:
        fill(small_disk)
        message = first_error(before)
    finally:
        before.close()
    assert not message.startswith("database or disk is full")
    assert "metadata.db" in message and "full" in message and "free space" in message.lower(), message
    try:
        Producer({"cluster": path}).close()  # writes nothing; but with no -shm file left, a new
    except MetadataStorageError as err:    # connection cannot even size one
        assert "metadata.db cannot be used: its file system is full" in str(err)


def test_a_removed_wal_is_named_and_nothing_is_recreated(cluster_path, make_topic):
    make_topic("t")
    holder = Cluster.open(cluster_path)  # a process still using the cluster keeps the WAL
    try:
        holder.metadata.topic_names()
        with Admin({"cluster": cluster_path}) as admin:
            admin.create_topics([NewTopic("u", 1, 1)])["u"].result()
        db = os.path.join(cluster_path, "metadata.db")
        assert os.path.getsize(db + "-wal") > 0  # "u" is committed in the WAL only
        os.remove(db + "-wal")
        with open(db, "rb") as f:
            before = f.read()
        with pytest.raises(MetadataStorageError, match=r"WAL file .*metadata\.db-wal, was removed") as refused:
            Cluster.open(cluster_path).metadata.topic_names()
        assert "may be lost" in str(refused.value) and "backup" in str(refused.value)
        with open(db, "rb") as f:
            assert f.read() == before
    finally:
        holder.close()


def test_a_process_whose_wal_was_removed_commits_nothing_more(cluster_path, make_topic):
    """Its connection still writes to the unlinked WAL: every such commit would be lost."""
    make_topic("t")
    holder = Cluster.open(cluster_path)
    try:
        first = holder.metadata.next_counter("c")
        os.remove(os.path.join(cluster_path, "metadata.db-wal"))
        with pytest.raises(MetadataStorageError, match=r"metadata\.db-wal, was removed"):
            holder.metadata.next_counter("c")
        assert holder.metadata.topic_names() == ["t"]  # reads of what it has still answer
    finally:
        holder.close()
    assert first == 1

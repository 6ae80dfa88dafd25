"""metadata-snapshot.json: what a reader without SQLite (the JVM reader) plans from.

Invariant: after any metadata change, the snapshot file says exactly what SQLite says
(checked through Metadata's own accessors, not through the snapshot builder), and it is
never behind SQLite, whoever changed it.
"""

from __future__ import annotations

import base64
import multiprocessing
import os

import pyarrow as pa
import pytest

from kstream.log.cluster import metadata_snapshot
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import format as fmt


def _expected(cluster: Cluster) -> dict:
    metadata = cluster.metadata
    topics = {}
    for name in metadata.topic_names():
        info = metadata.topic(name)
        topics[name] = {
            "topic_id": info.topic_id, "replication_factor": info.replication_factor,
            "config": dict(info.config), "schemas": [base64.b64encode(s).decode() for s in info.schemas],
            "partitions": [{"replicas": list(p.replicas), "leader": p.leader, "leader_epoch": p.leader_epoch,
                            "isr": list(p.isr)} for p in info.partitions]}
    return {"log_dirs": [{"id": i, "path": p, "online": o} for i, p, o in metadata.log_dirs()],
            "topics": topics, "cluster_id": cluster.cluster_id,
            "metadata_version": metadata_snapshot.stored_version(metadata.connection), "format_version": 1}


def _check(cluster: Cluster) -> None:
    assert metadata_snapshot.read(cluster.path) == _expected(cluster)


@pytest.fixture
def cluster(tmp_path):
    c = Cluster.open(str(tmp_path / "c"), {"log.dirs": "a,b,c"}, create=True)
    yield c
    c.close()


def test_every_metadata_change_rewrites_the_snapshot(cluster):
    _check(cluster)
    cluster.create_topic("bytes", 3, 2)
    _check(cluster)
    cluster.create_topic("typed", 2, 1, schema=pa.schema([("id", pa.int64())]))
    _check(cluster)
    cluster.evolve_schema("typed", pa.schema([("id", pa.int64()), ("name", pa.string())]))
    _check(cluster)
    cluster.create_partitions("bytes", 5)
    _check(cluster)
    cluster.alter_topic_config("bytes", {"retention.ms": "1000"})
    _check(cluster)
    cluster.metadata.remove_from_isr("bytes", 0, {cluster.topic("bytes").partitions[0].leader})
    _check(cluster)
    cluster.take_log_dir_offline(2)
    _check(cluster)
    cluster.metadata.elect_preferred_leaders()
    _check(cluster)
    cluster.delete_topic("typed")
    _check(cluster)
    snapshot = metadata_snapshot.read(cluster.path)
    assert next(iter(snapshot)) == "metadata_version"  # first key: a staleness check reads a few bytes
    assert metadata_snapshot.snapshot_version(cluster.path) == snapshot["metadata_version"]


def test_typed_topic_schemas_are_the_ipc_bytes_in_version_order(cluster):
    first = pa.schema([("id", pa.int64())])
    second = pa.schema([("id", pa.int64()), ("note", pa.string())])
    cluster.create_topic("typed", 1, 1, schema=first)
    cluster.evolve_schema("typed", second)
    stored = metadata_snapshot.read(cluster.path)["topics"]["typed"]["schemas"]
    assert [pa.ipc.read_schema(pa.py_buffer(base64.b64decode(s))) for s in stored] == [first, second]


def test_open_writes_a_missing_snapshot(cluster):
    cluster.create_topic("t", 2, 1)
    os.remove(metadata_snapshot.snapshot_path(cluster.path))  # a cluster made before the file existed
    reopened = Cluster.open(cluster.path)
    try:
        _check(reopened)
    finally:
        reopened.close()


@pytest.mark.parametrize("content", [b'{"metadata_version": 999, "topics": {}}', b"", b"\x00" * 40])
def test_open_rewrites_a_snapshot_that_does_not_match_sqlite(cluster, content):
    cluster.create_topic("t", 2, 1)
    with open(metadata_snapshot.snapshot_path(cluster.path), "wb") as f:
        f.write(content)  # ahead of SQLite (a crash before COMMIT), or unreadable
    reopened = Cluster.open(cluster.path)
    try:
        _check(reopened)
    finally:
        reopened.close()


def test_a_failed_change_leaves_sqlite_and_the_snapshot_as_they_were(cluster):
    cluster.create_topic("t", 1, 1)
    before = metadata_snapshot.read(cluster.path)
    with pytest.raises(Exception, match="already exists"):
        cluster.create_topic("t", 1, 1)
    assert metadata_snapshot.read(cluster.path) == before
    _check(cluster)


def _shrink_and_grow(path: str, partition: int, rounds: int) -> None:
    cluster = Cluster.open(path)
    try:
        for _ in range(rounds):
            info = cluster.topic("t").partitions[partition]
            follower = next(r for r in info.replicas if r != info.leader)
            cluster.metadata.remove_from_isr("t", partition, {follower})
            cluster.metadata.add_to_isr("t", partition, follower)
    finally:
        cluster.close()


def test_concurrent_writers_never_leave_a_stale_snapshot(cluster):
    """Two processes changing placement at once: the last snapshot is SQLite's last state
    (each is written under SQLite's write lock, so an older one never lands last)."""
    cluster.create_topic("t", 2, 2)
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_shrink_and_grow, args=(cluster.path, p, 15)) for p in (0, 1)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    _check(cluster)
    assert not os.path.exists(metadata_snapshot.snapshot_path(cluster.path) + fmt.TMP_SUFFIX)

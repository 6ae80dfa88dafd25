"""A log dir whose file system turns read-only (EROFS) under the only replica (RF=1):
writes fail with an error naming EROFS and what to do, acknowledged data stays
readable, and the partition takes writes again once the disk is read-write and
back online (found by the chaos class ``read_only_rf1``)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from helpers import consume_values
from kstream import Admin, NewTopic, Producer
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import faults


@pytest.fixture(autouse=True)
def fault_injection(monkeypatch):
    monkeypatch.setattr(faults, "ENABLED", True)


def _cluster(tmp_path) -> tuple[str, str, int]:
    path, disk = str(tmp_path / "cluster"), str(tmp_path / "disk0")
    cluster = Cluster.open(path, {"log.dirs": disk}, create=True)
    try:
        log_dir = next(iter(cluster.log_dir_paths()))
    finally:
        cluster.close()
    with Admin({"cluster": path}) as admin:
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result()
    return path, disk, log_dir


def _produce(path: str, value: bytes) -> str | None:
    """Produce one acks=all record; the delivery error's text, or None when acknowledged."""
    errors: list[str | None] = []
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        producer.produce("t", value, partition=0, on_delivery=lambda err, msg: errors.append(
            None if err is None else str(err)))
        producer.flush()
    return errors[0]


def test_read_only_disk_under_the_only_replica(tmp_path):
    path, disk, log_dir = _cluster(tmp_path)
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        for i in range(5):
            producer.produce_batch("t", pa.table({"value": [f"ok-{i}".encode()]}), partition=0)
    # Remounted read-only after the write reached the page cache: the fsync fails.
    faults.inject(disk, "EROFS", only_fsync=True)
    first = _produce(path, b"refused-1")
    assert first is not None and "EROFS" in first and f"log-dirs online {log_dir}" in first, first
    faults.inject(disk, "EROFS")  # now every write fails
    second = _produce(path, b"refused-2")
    assert second is not None and "EROFS" in second and "remount it read-write" in second, second
    assert f"log-dirs online {log_dir}" in second
    # Reads still work on a read-only file system: every acknowledged record is there.
    assert consume_values(path, "t", 1)[:5] == [f"ok-{i}".encode() for i in range(5)]
    faults.clear(disk)
    with Admin({"cluster": path}) as admin:
        admin.set_log_dir_online(log_dir)
    assert _produce(path, b"after") is None
    values = consume_values(path, "t", 1)
    assert values[:5] == [f"ok-{i}".encode() for i in range(5)] and values[-1] == b"after"
    assert b"refused-2" not in values

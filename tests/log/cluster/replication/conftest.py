"""Replicated clusters: three log dirs under tmp_path; fault injection on."""

from __future__ import annotations

import pytest

from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import faults


@pytest.fixture(autouse=True)
def fault_injection(monkeypatch):
    monkeypatch.setattr(faults, "ENABLED", True)
    monkeypatch.setenv("KSTREAM_FAULT_INJECTION", "1")  # for child processes


@pytest.fixture
def replicated(tmp_path):
    """(cluster path, {log dir id: path}) with three log dirs and min.insync.replicas=2."""
    path = str(tmp_path / "cluster")
    dirs = [str(tmp_path / f"disk{i}") for i in range(3)]
    cluster = Cluster.open(path, {"log.dirs": ",".join(dirs), "min.insync.replicas": 2,
                                  "default.replication.factor": 3}, create=True)
    try:
        log_dirs = cluster.log_dir_paths()
    finally:
        cluster.close()
    return path, log_dirs



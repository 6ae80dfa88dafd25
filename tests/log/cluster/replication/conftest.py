"""Replicated clusters: three log dirs under tmp_path; fault injection on."""

from __future__ import annotations

import os

import pytest

from helpers import consume_values
from kstream import Admin, NewTopic
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


def make_topic(cluster_path, name="t", partitions=1, replication_factor=3, config=None):
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic(name, partitions, replication_factor, config=config or {})])[name].result()
        return admin.cluster.topic(name)


def replica_frames(directory):
    """(base offset, header bytes, payload bytes) of every frame of a replica, in order."""
    from kstream.log.storage import format as fmt
    from kstream.log.storage.retention import list_segment_bases

    frames = []
    for base in list_segment_bases(directory):
        with open(os.path.join(directory, fmt.segment_file_name(base)), "rb") as f:
            data = f.read()
        position = 0
        while position + fmt.HEADER_SIZE <= len(data):
            header = fmt.unpack_header(data[position:position + fmt.HEADER_SIZE])
            end = position + header.frame_size
            frames.append((header.base_offset, data[position:position + fmt.HEADER_SIZE], data[position + 68:end]))
            position = end
    return frames


def consume_all(cluster_path, topic="t", partition=0):
    """Every value of one partition, read from offset 0 by a fresh consumer."""
    return consume_values(cluster_path, topic, [partition], "read_uncommitted")

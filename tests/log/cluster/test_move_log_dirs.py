"""Metadata.move_log_dirs: new paths for log dirs in one transaction, the snapshot following."""

from __future__ import annotations

import json
import os

import pytest

from kstream import Admin, NewTopic
from kstream.errors import ClusterError
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import format as fmt


def test_log_dirs_can_swap_paths_and_the_snapshot_follows(tmp_path):
    path = str(tmp_path / "c")
    with Admin({"cluster": path, "log.dirs": "a,b"}) as admin:
        admin.create_topics([NewTopic("t", 1, 2)])["t"].result()
    cluster = Cluster.open(path)
    try:
        cluster.metadata.move_log_dirs({1: "b", 2: "a"})
        assert cluster.metadata.log_dirs() == [(1, "b", True), (2, "a", True)]
        with open(os.path.join(path, fmt.METADATA_SNAPSHOT)) as snapshot:
            assert [d["path"] for d in json.load(snapshot)["log_dirs"]] == ["b", "a"]
        with pytest.raises(ClusterError, match="no log dir 7"):
            cluster.metadata.move_log_dirs({1: "x", 7: "y"})
        assert cluster.metadata.log_dirs() == [(1, "b", True), (2, "a", True)]  # nothing of it applied
    finally:
        cluster.close()

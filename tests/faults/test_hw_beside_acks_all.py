"""An acks=1 append (a producer's, or a Spark sink task's) never publishes a high watermark over
another writer's acks=all frame whose fsync is still running: what a reader saw survives a
power cut (issue 26, item 6)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from chaos.power_cut import power_cut, sync_all
from helpers import consume_values, encoded
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import faults

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child_beside_acks_all.py")


@pytest.mark.parametrize("writer", ["sink", "acks1"])
@pytest.mark.parametrize("seed", range(6))
def test_what_readers_saw_beside_an_unfsynced_acks_all_frame_survives_a_power_cut(
        cluster_path, make_topic, journal, writer, seed):
    make_topic("t", 1)
    sync_all([cluster_path], journal)
    # An acks=all writer has written its frame; its fsync has not run (deferred, HW not
    # published). Its handle stays open until after the cut: a close would fsync.
    pending = Cluster.open(cluster_path)
    pending.partition("t", 0).append(encoded([b"acks-all"]), acks="all", defer_fsync=True)
    child = subprocess.Popen([sys.executable, CHILD, writer, cluster_path, "t"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env={**os.environ, faults.JOURNAL_ENV: journal})
    try:
        assert child.stdout is not None and child.stdout.readline() == b"W\n"
        seen = consume_values(cluster_path, "t", 1, "read_uncommitted", timeout=0.1)
    finally:
        child.kill()  # SIGKILL keeps the page cache; the power cut below does not
        child.wait()
    log_dirs = list(pending.log_dir_paths().values())
    power_cut(cluster_path, log_dirs, journal, seed)
    pending.close()
    after = consume_values(cluster_path, "t", 1, "read_uncommitted", timeout=0.1)
    assert b"acks-all" in seen
    assert after[:len(seen)] == seen, f"readers saw {seen}, a power cut left {after}"

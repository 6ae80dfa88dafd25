"""A tierer SIGKILLed at seeded random moments, again and again, then run to the end: the lake
never holds a duplicate or a row the oracle lacks, the metadata is never ahead of Delta, and
the finished lake equals the read_committed oracle."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

from deltalake import DeltaTable
from tier_helpers import SEGMENT_BYTES, fill, lake_rows, oracle, recorded_ends, sealed_ends

from kstream.log.cluster.cluster import Cluster
from kstream.tiering import Tierer
from kstream.tiering.lake_table import app_id

KILLS = 4


def test_killed_at_random_moments(cluster_path, make_topic, tmp_path):
    lake = str(tmp_path / "lake")
    make_topic("t", 2, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": lake})
    fill(cluster_path, "t", 2, rounds=10)
    ends = sealed_ends(cluster_path, "t")
    want = [row for row in oracle(cluster_path, "t", 2) if row[1] < ends[row[0]]]
    topic_id = Cluster.open(cluster_path).topic("t").topic_id
    rng = random.Random(24)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    code = ("import sys; from kstream.log.cluster.cluster import Cluster; from kstream.tiering import tierer; "
            "tierer.COMMIT_MAX_BYTES = 1; print('up', flush=True); "
            "tierer.Tierer(Cluster.open(sys.argv[1])).run(force=True)")
    cut_short = 0
    for _ in range(KILLS):
        child = subprocess.Popen([sys.executable, "-c", code, cluster_path], env=env, stdout=subprocess.PIPE,
                                 text=True)
        assert child.stdout.readline() == "up\n"  # imports done: the kill lands inside the pass
        time.sleep(rng.uniform(0.0, 1.5))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
        if DeltaTable.is_deltatable(lake):
            table = DeltaTable(lake)
            lake_ends = {p: table.transaction_version(app_id(topic_id, p)) or 0 for p in ends}
            got = lake_rows(lake)
            assert got == [row for row in want if row[1] < lake_ends[row[0]]]  # no duplicate, no torn commit
        else:
            lake_ends = dict.fromkeys(ends, 0)
        assert all(end <= lake_ends[p] for p, end in recorded_ends(cluster_path, "t").items())
        cut_short += lake_ends != ends
    assert cut_short >= 1  # a kill landed inside a pass (a pass of ~100 commits takes seconds)
    cluster = Cluster.open(cluster_path)
    try:
        Tierer(cluster).run(force=True)
    finally:
        cluster.close()
    assert lake_rows(lake) == want
    assert recorded_ends(cluster_path, "t") == ends

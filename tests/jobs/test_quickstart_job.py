"""`make run` twice (issue 20, item 8): jobs/quickstart.py under spark-submit, as the Makefile
runs it, against one cluster. The second run streams only its own 10,000 events (its query
restarts from the checkpoint in the cluster dir), its counts add up both runs' events once, and
no run leaves anything in the temp dir."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
JAR = os.path.join(REPO, "src", "kstream", "jars", "kstream-spark.jar")


def _make_run(cluster: str, tmpdir: str) -> str:
    env = dict(os.environ, KSTREAM_CLUSTER=cluster, TMPDIR=tmpdir,
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    jars = ["--jars", JAR] if os.path.isfile(JAR) else []
    done = subprocess.run([os.path.join(BIN, "spark-submit"), "--properties-file", "conf/spark-defaults.conf",
                           *jars, "jobs/quickstart.py"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _counts(output: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^ +(user-\d /page/\d): (\d+)$", output, re.M)}


@pytest.mark.slow  # two spark-submit runs: ~40 s each on a loaded 2-core machine
def test_make_run_twice_streams_each_runs_own_events_and_keeps_its_data_in_the_cluster(tmp_path):
    cluster = str(tmp_path / "data")
    tmpdir = tmp_path / "tmp"  # Python's tempfile (mkdtemp) writes here during the runs
    tmpdir.mkdir()
    before = set(os.listdir("/tmp"))
    started = time.monotonic()
    first = _make_run(cluster, str(tmpdir))
    second = _make_run(cluster, str(tmpdir))
    print(f"two quick-start runs: {time.monotonic() - started:.1f} s")

    streamed = [int(re.search(r"Streamed (\d+) click events", out).group(1)) for out in (first, second)]
    assert streamed == [10_000, 10_000], second  # not the whole topic again with a new checkpoint
    assert "this run (the topic from its start" in first, first
    assert "this run (the events produced since the last run" in second, second
    first_counts, second_counts = _counts(first), _counts(second)
    assert sum(first_counts.values()) == 10_000 and len(first_counts) == 15, first
    assert sum(second_counts.values()) == 20_000 and set(second_counts) == set(first_counts), second
    assert all(second_counts[k] > first_counts[k] for k in first_counts)  # accumulated, not restarted
    assert "(20000 events, each counted once)" in second
    checkpoint = os.path.join(cluster, "checkpoints", "quickstart")
    assert f"Cluster: {cluster}; checkpoint: {checkpoint}." in second
    assert os.path.isdir(os.path.join(checkpoint, "offsets"))
    assert list(tmpdir.iterdir()) == []
    assert not [n for n in set(os.listdir("/tmp")) - before if n.startswith("kstream-quickstart")]

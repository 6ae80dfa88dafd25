"""A spark-submit ETL job SIGKILLed at random moments and restarted: output exactly once."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from helpers import consume_values, produce_range

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SPARK_SUBMIT = os.path.join(os.path.dirname(sys.executable), "spark-submit")

def etl(cluster, checkpoint, *extra):
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    return subprocess.Popen(
        [SPARK_SUBMIT, "--properties-file", os.path.join(ROOT, "conf", "spark-defaults.conf"),
         os.path.join(ROOT, "jobs", "etl.py"), "--cluster", cluster, "--source", "in", "--sink", "out",
         "--checkpoint", checkpoint, "--sql", "SELECT key, upper(CAST(value AS STRING)) AS value FROM input",
         "--max-offsets-per-trigger", "400", *extra],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

@pytest.mark.slow
def test_etl_killed_and_restarted_writes_each_record_exactly_once(cluster_path, make_topic, tmp_path):
    make_topic("in", 3)
    make_topic("out", 2)
    produce_range(cluster_path, "in", 0, 6000, prefix="r", key_mod=17)
    checkpoint = str(tmp_path / "checkpoint")
    rng = random.Random(11)
    for _ in range(3):
        job = etl(cluster_path, checkpoint, "--trigger-ms", "200")
        time.sleep(rng.uniform(12, 20))
        os.killpg(job.pid, signal.SIGKILL)  # the driver and its Python workers
        job.wait()
    final = etl(cluster_path, checkpoint, "--available-now")
    assert final.wait(timeout=600) == 0
    seen = Counter(consume_values(cluster_path, "out", 2, timeout=1.0))
    assert seen == Counter({f"R{i}".encode(): 1 for i in range(6000)})

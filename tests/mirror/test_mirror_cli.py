"""`kstream mirror` as a process: SIGKILL at a random moment and a rerun, SIGTERM, bad input."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time

import pytest
from tests.mirror.mirror_support import by_partition, create_kafka_topic, produce_kafka, read_kstream, sample

pytestmark = pytest.mark.kafka

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "src")


def mirror_process(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.path.abspath(SRC)}
    return subprocess.Popen([sys.executable, "-c", "from kstream.tools.cli import main; main()", "mirror", *args],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


# one seed in make test, the others in make test-slow (about 20 s each)
@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)])
def test_a_mirror_into_kstream_killed_at_a_random_moment_and_rerun_copies_each_record_exactly_once(
        kafka_broker, tmp_path, topic_name, mirror_name, seed):
    rng = random.Random(seed)
    create_kafka_topic(kafka_broker, topic_name, 2)
    records = sample(2, 4000)
    produce_kafka(kafka_broker, topic_name, records[:2000], transactional_id=f"{topic_name}-tx")
    produce_kafka(kafka_broker, topic_name, sample(2, 100, salt="-aborted"), transactional_id=f"{topic_name}-tx",
                  commit=False)
    produce_kafka(kafka_broker, topic_name, records[2000:])
    cluster = str(tmp_path / "c")
    args = ("--from", f"kafka:{kafka_broker}", "--to", f"cluster:{cluster}", "--topics", topic_name,
            "--name", mirror_name, "--until-end", "--chunk-records", "25", "--progress-interval", "0.1")

    killed = mirror_process(*args)
    for line in killed.stderr:  # the first progress line with records copied: the copy is under way
        if re.search(r": [1-9]\d* records", line):
            break
    time.sleep(rng.uniform(0, 0.3))  # then a random moment of it
    killed.send_signal(signal.SIGKILL)
    killed.wait(30)
    copied_before = len(read_kstream(cluster, topic_name, 2))
    assert 0 < copied_before, "the kill should land after the first transaction"
    rerun = mirror_process(*args)
    _, err = rerun.communicate(timeout=120)

    assert rerun.returncode == 0, err
    print(f"seed {seed}: {copied_before} of {len(records)} records copied when killed")
    assert by_partition(read_kstream(cluster, topic_name, 2)) == by_partition(records)


def test_sigterm_stops_a_continuous_mirror_cleanly_with_what_it_copied_committed(
        kafka_broker, tmp_path, topic_name, mirror_name):
    create_kafka_topic(kafka_broker, topic_name, 1)
    records = sample(1, 500)
    produce_kafka(kafka_broker, topic_name, records)
    cluster = str(tmp_path / "c")
    args = ("--from", f"kafka:{kafka_broker}", "--to", f"cluster:{cluster}", "--topics", topic_name,
            "--name", mirror_name, "--progress-interval", "0.1")
    process = mirror_process(*args)
    for line in process.stderr:  # progress lines: wait until the copy caught up
        if "records" in line and "lag " in line and f"{topic_name}[0]=0" in line:
            break
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)

    assert process.returncode == 0, err
    assert "mirrored 500 records" in out
    assert by_partition(read_kstream(cluster, topic_name, 1)) == by_partition(records)
    again = mirror_process(*args[:-2], "--until-end")
    out, _ = again.communicate(timeout=60)
    assert "mirrored 0 records" in out


def test_bad_input_exits_1_with_the_reason(tmp_path):
    process = mirror_process("--from", "cluster:a", "--to", "cluster:b", "--topics", "t")
    _, err = process.communicate(timeout=60)
    assert process.returncode == 1
    assert "one side is kafka:HOST:PORT and the other cluster:PATH" in err

"""examples/confluent/*: kstream's versions of confluent-kafka's examples, run as a user runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from base64 import b64encode

from kstream import OFFSET_BEGINNING, Admin, Consumer, NewTopic, Producer, TopicPartition

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(ROOT, "examples", "confluent")


def test_eos_transactions_writes_each_input_once_across_runs_and_a_crash(tmp_path):
    """eos_transactions.py -b CLUSTER -t in -o out -g G: each input record's transformed copy
    lands in "out" exactly once, over a first run, a run on new input, and a run killed
    between a commit's markers and its offsets (KSTREAM_CRASH_AT) followed by a rerun."""
    cluster = str(tmp_path / "c")
    with Admin({"cluster": cluster}) as admin:
        for topic in ("in", "out"):
            admin.create_topics([NewTopic(topic, 1)])[topic].result()
    produced = 0

    def add_input(count: int) -> None:
        nonlocal produced
        with Producer({"cluster": cluster}) as producer:
            for i in range(produced, produced + count):
                producer.produce("in", f"v{i}".encode(), f"k{i}".encode(), partition=0)
        produced += count

    def run(crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.path.join(ROOT, "src"),
                                                                          os.environ.get("PYTHONPATH")]))}
        env.pop("KSTREAM_CRASH_AT", None)
        if crash_at:
            env["KSTREAM_CRASH_AT"] = crash_at
        return subprocess.run([sys.executable, os.path.join(EXAMPLES, "eos_transactions.py"), "-b", cluster,
                               "-t", "in", "-o", "out", "-g", "eos-group"], env=env, capture_output=True,
                              text=True, timeout=120)

    def check_output() -> None:
        consumer = Consumer({"cluster": cluster})  # read_committed
        consumer.assign([TopicPartition("out", 0, OFFSET_BEGINNING)])
        out = []
        while (message := consumer.poll(0.3)) is not None:
            out.append((message.key(), message.value()))
        consumer.close()
        assert out == [(b64encode(f"k{i}".encode()), b64encode(f"v{i}".encode())) for i in range(produced)]

    add_input(250)
    done = run()
    assert done.returncode == 0, done.stderr
    assert "=== Committing transaction with 100 messages" in done.stdout
    assert "=== Committing final transaction with 50 messages ===" in done.stdout
    check_output()

    add_input(30)
    done = run()
    assert done.returncode == 0, done.stderr
    assert "=== Committing final transaction with 30 messages ===" in done.stdout
    check_output()

    add_input(250)
    killed = run("txn.markers-written:2")  # the 2nd commit's output is on disk, its offsets not yet
    assert killed.returncode == -9, killed.stderr
    done = run()
    assert done.returncode == 0, done.stderr
    assert "=== Committing final transaction with 50 messages ===" in done.stdout  # 200 were committed
    check_output()

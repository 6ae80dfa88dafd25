"""A clean SIGKILLed at each step of the segment swap (KSTREAM_CRASH_AT): readers before any
recovery, and the log after a writer reopened it, show exactly the latest record of every key,
offsets contiguous, and the next clean leaves all replicas agreeing frame by frame."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from cleaner_helpers import frames, make_compacted, polled, produce, replica_dirs

from kstream import Producer
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import format as fmt
from kstream.log.storage.segment_swap import SWAP_DIR

STEPS = ["clean.staged", "clean.swap-decided", "clean.log-replaced", "clean.indexes-replaced"]
SRC = os.path.join(os.path.dirname(__file__), "..", "..", "..", "src")


def latest_view(cluster_path):
    seen = {}
    for _, key, value in polled(cluster_path):
        seen[key] = value
    return seen


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("passes", [1, 2], ids=["first replica", "second replica"])
def test_a_clean_killed_at_each_step_of_the_swap_loses_and_resurrects_nothing(cluster_path, step, passes):
    make_compacted(cluster_path, replicas=2)
    records = [(f"k{i % 4}".encode(), f"v{i}".encode()) for i in range(24)] + [(b"k1", None)]
    produce(cluster_path, records)
    produce(cluster_path, [(b"z", b"end")])
    expected = latest_view(cluster_path)
    env = {**os.environ, "KSTREAM_CRASH_AT": f"{step}:{passes}", "PYTHONPATH": os.path.abspath(SRC)}
    child = subprocess.run(
        [sys.executable, "-c", "import sys; from kstream.log.cluster.cluster import Cluster; "
         "Cluster.open(sys.argv[1]).clean_topic('t', force=True)", cluster_path],
        env=env, capture_output=True, text=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert latest_view(cluster_path) == expected  # readers, before anyone recovers
    for directory in replica_dirs(cluster_path):
        frames(directory)  # whole frames, offsets contiguous, checksums right
    with Producer({"cluster": cluster_path}) as producer:  # a writer opens: recovery finishes or drops
        producer.produce("t", b"after", key=b"y")
    for directory in replica_dirs(cluster_path):
        assert not os.path.exists(os.path.join(directory, SWAP_DIR))
        assert not os.path.exists(os.path.join(directory, fmt.CLEANER_STAGING_DIR))
    assert latest_view(cluster_path) == {**expected, b"y": b"after"}
    Cluster.open(cluster_path).clean_topic("t", force=True)
    assert latest_view(cluster_path) == {**expected, b"y": b"after"}
    first, second = (frames(d) for d in replica_dirs(cluster_path))
    assert [raw for _, raw in first] == [raw for _, raw in second]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("step", [*STEPS, None], ids=[*STEPS, "finished"])
def test_a_power_cut_during_or_after_a_clean_loses_and_resurrects_nothing(journal, cluster_path, step, seed):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "chaos"))
    from power_cut import power_cut, sync_all

    make_compacted(cluster_path, replicas=2)
    produce(cluster_path, [(f"k{i % 4}".encode(), f"v{i}".encode()) for i in range(24)] + [(b"k1", None)])
    produce(cluster_path, [(b"z", b"end")])
    expected = latest_view(cluster_path)
    sync_all([cluster_path], journal)  # everything before the clean is durable
    env = {**os.environ, "PYTHONPATH": os.path.abspath(SRC), "KSTREAM_POWER_JOURNAL": journal}
    if step is not None:
        env["KSTREAM_CRASH_AT"] = step
    child = subprocess.run(
        [sys.executable, "-c", "import sys; from kstream.log.cluster.cluster import Cluster; "
         "Cluster.open(sys.argv[1]).clean_topic('t', force=True)", cluster_path],
        env=env, capture_output=True, text=True, timeout=120)
    assert child.returncode == (0 if step is None else -signal.SIGKILL), child.stderr
    power_cut(cluster_path, [], journal, seed)
    assert latest_view(cluster_path) == expected  # readers, before anyone recovers
    with Producer({"cluster": cluster_path}) as producer:  # a writer opens: recovery
        producer.produce("t", b"after", key=b"y")
    assert latest_view(cluster_path) == {**expected, b"y": b"after"}
    for directory in replica_dirs(cluster_path):
        frames(directory)
    Cluster.open(cluster_path).clean_topic("t", force=True)
    assert latest_view(cluster_path) == {**expected, b"y": b"after"}

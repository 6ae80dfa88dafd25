"""Several processes append to the same partitions at once."""

from __future__ import annotations

import os
import subprocess
import sys

from helpers import read_all
from kstream import Admin

CHILD = os.path.join(os.path.dirname(__file__), "child_writer.py")


def test_concurrent_writers_keep_offsets_contiguous_and_batches_whole(cluster_path, make_topic):
    make_topic("t", 2, config={"segment.bytes": "65536", "index.interval.bytes": "512"})
    writers, per_writer = 4, 60
    children = [subprocess.Popen([sys.executable, CHILD, "batches", cluster_path, "t", f"w{w}",
                                  str(per_writer)]) for w in range(writers)]
    assert [child.wait(timeout=120) for child in children] == [0] * writers
    with Admin({"cluster": cluster_path}) as admin:
        info = admin.cluster.topic("t")
        seen_batches = set()
        for p in range(2):
            directory = admin.cluster.partition(info, p).leader_dir
            records = read_all(directory)
            assert [o for o, _ in records] == list(range(len(records)))  # contiguous
            i = 0
            while i < len(records):  # every batch is one unbroken run
                writer, batch, first, size = records[i][1].decode().split(":")
                assert first == "0"
                run = [v.decode() for _, v in records[i:i + int(size)]]
                assert run == [f"{writer}:{batch}:{k}:{size}" for k in range(int(size))]
                assert int(batch) % 2 == p
                seen_batches.add((writer, int(batch)))
                i += int(size)
    assert seen_batches == {(f"w{w}", b) for w in range(writers) for b in range(per_writer)}

"""``Table.get`` latency on a compacted topic of N keys, and the key index's build time.

For each ``--keys`` count: a compacted topic of that many distinct keys (``--partitions``
partitions, ``--frame-records`` records a frame, ``--value-bytes`` values, written with
produce_batch, plus ``--updates`` of them written again and ``--deletes`` deleted, and the
topic cleaned once), then, in this process:

* **build**: ``Table.refresh()`` (every partition's key index from the log), seconds, and the
  resident memory it added (MB, and bytes a key);
* **get**: ``--lookups`` ``Table.get`` calls on random keys that exist, each timed alone
  (ns), in ``--repeats`` rounds: p50, p99 and max of each round, and the median over rounds;
  the same for keys that are absent, and ``get_many`` of 1,000 keys (per key). Each get's
  CPU time too (``time.thread_time_ns``: without the time the process was preempted), and
  how often it was preempted: on a loaded machine the wall-time tail is the scheduler's.

Goal (issue 25): p99 <= 1 ms on 10M keys.

    PYTHONPATH=src .venv/bin/python -m bench.table_lookup --keys 1000000 10000000

``--dir D`` keeps each topic's cluster under D (D/keys-N) and reuses it on the next run, so
a second run measures without writing again. Run under ``flock /tmp/kstream-bench.lock``.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import tempfile
import time

import pyarrow as pa

from kstream import Admin, NewTopic, Producer, Table
from kstream.log.cluster.cluster import Cluster

TOPIC = "table"


def key_of(i: int) -> bytes:
    return b"user-%010d" % i


def write_topic(cluster: str, keys: int, partitions: int, frame_records: int, value_bytes: int,
                updates: int, deletes: int) -> float:
    """The topic of ``keys`` keys; returns the seconds it took to write and clean it."""
    start = time.perf_counter()
    config = {"cleanup.policy": "compact", "segment.bytes": str(256 << 20), "min.cleanable.dirty.ratio": "0.5"}
    with Admin({"cluster": cluster}) as admin:
        admin.create_topics([NewTopic(TOPIC, partitions, 1, config=config)])[TOPIC].result()
    value = os.urandom(value_bytes)
    with Producer({"cluster": cluster, "acks": "1"}) as producer:
        for first in range(0, keys, frame_records):
            n = min(frame_records, keys - first)
            table = pa.table({"key": pa.array([key_of(i) for i in range(first, first + n)], pa.binary()),
                              "value": pa.array([value] * n, pa.binary())})
            producer.produce_batch(TOPIC, table)
        rng = random.Random(1)
        again = [key_of(i) for i in rng.sample(range(keys), updates + deletes)]
        for first in range(0, len(again), frame_records):
            chunk = again[first:first + frame_records]
            values = [None if first + j >= updates else b"updated" for j in range(len(chunk))]
            producer.produce_batch(TOPIC, pa.table({"key": pa.array(chunk, pa.binary()),
                                                    "value": pa.array(values, pa.binary())}))
        producer.flush()
    opened = Cluster.open(cluster)
    try:
        opened.clean_topic(TOPIC, force=True)
    finally:
        opened.close()
    return time.perf_counter() - start


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def percentiles(samples: list[int]) -> tuple[float, float, float]:
    """(p50, p99, max) in microseconds."""
    ordered = sorted(samples)
    return (ordered[len(ordered) // 2] / 1e3, ordered[int(len(ordered) * 0.99)] / 1e3, ordered[-1] / 1e3)


def time_gets(table: Table, keys: list[bytes]) -> tuple[list[int], list[int], int]:
    """Each get's wall time and CPU time (ns; CPU time leaves out the time this process was
    preempted), and how many times it was preempted (involuntary context switches) meanwhile."""
    get = table.get
    clock, cpu = time.perf_counter_ns, time.thread_time_ns
    walls, cpus = [], []
    switches = resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw
    for key in keys:
        start, start_cpu = clock(), cpu()
        get(key)
        cpus.append(cpu() - start_cpu)
        walls.append(clock() - start)
    return walls, cpus, resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw - switches


def measure(cluster: str, keys: int, lookups: int, repeats: int) -> None:
    rss = rss_bytes()
    start = time.perf_counter()
    table = Table(cluster, TOPIC)
    table.refresh()
    build_s = time.perf_counter() - start
    added = rss_bytes() - rss
    print(f"{keys:>11,} keys: index build {build_s:6.1f} s, +{added / 1e6:,.0f} MB resident "
          f"({added / keys:.0f} B a key)")
    rng = random.Random(2)
    rounds: dict[str, list[tuple[float, float, float]]] = {
        "get (present)": [], "get (present, CPU)": [], "get (absent)": [], "get (absent, CPU)": [],
        "get_many 1000 (per key)": []}
    preempted = []
    try:
        for _ in range(repeats):
            for name, wanted in (("present", [key_of(rng.randrange(keys)) for _ in range(lookups)]),
                                 ("absent", [b"absent-%d" % rng.randrange(1 << 40) for _ in range(lookups)])):
                walls, cpus, switches = time_gets(table, wanted)
                rounds[f"get ({name})"].append(percentiles(walls))
                rounds[f"get ({name}, CPU)"].append(percentiles(cpus))
                preempted.append(switches)
            many = []
            for _ in range(max(1, lookups // 1000)):
                wanted = [key_of(rng.randrange(keys)) for _ in range(1000)]
                begin = time.perf_counter_ns()
                table.get_many(wanted)
                many.append((time.perf_counter_ns() - begin) // 1000)
            rounds["get_many 1000 (per key)"].append(percentiles(many))
    finally:
        table.close()
    print(f"    preempted (involuntary context switches) during the get rounds: {preempted}")
    for name, figures in rounds.items():
        p50 = statistics.median(f[0] for f in figures)
        p99 = statistics.median(f[1] for f in figures)
        top = max(f[2] for f in figures)
        each = " | ".join(f"{a:.0f}/{b:.0f}" for a, b, _ in figures)
        print(f"    {name:<24} p50 {p50:7.1f} us  p99 {p99:7.1f} us  max {top:8.1f} us   "
              f"(rounds p50/p99: {each})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--frame-records", type=int, default=1000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--updates", type=int, default=10_000)
    parser.add_argument("--deletes", type=int, default=1_000)
    parser.add_argument("--lookups", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", help="keep the clusters here (D/keys-N) and reuse them")
    args = parser.parse_args()
    root = args.dir or tempfile.mkdtemp(prefix="kstream-bench-table-")
    try:
        for keys in args.keys:
            cluster = os.path.join(root, f"keys-{keys}")
            if not os.path.exists(cluster):
                seconds = write_topic(cluster, keys, args.partitions, args.frame_records, args.value_bytes,
                                      args.updates, args.deletes)
                print(f"{keys:>11,} keys: written and cleaned in {seconds:.0f} s")
            measure(cluster, keys, args.lookups, args.repeats)
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

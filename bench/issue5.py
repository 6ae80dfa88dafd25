"""Consumer-group benchmarks (issue 5), side by side in one run.

    python -m bench.issue5 [--commits 10000] [--repeats 5] [--only commit,read,rebalance]

1. Offset commit latency (p50/p99) for 6 and 600 partitions: ConsumerGroups.commit
   (validation + fencing under the group lock + one Delta commit), which is what a
   Spark query with group.id runs per micro-batch, vs the floor it is built on: a
   bare deltalake overwrite of the same rows.
2. Reading a group's latest offsets after N commits (default 10,000, spread over
   10 groups of 6 partitions): cold (a new reader: load the Delta log from its last
   checkpoint, open the group's one file) and warm (incremental update).
3. Rebalance time, 4 members and 64 partitions: a 4th member joins three stable
   ones (until all four hold their new assignment), a member leaves, and a member
   is SIGKILL-like silent (heartbeats stop; session.timeout.ms=1000).

Prints a Markdown table and writes OUT/issue5.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import time

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from bench.harness import Row, new_cluster, run_sections
from kstream import Consumer, Producer
from kstream.groups import ConsumerGroups, OffsetsTable
from kstream.groups.offsets_table import SCHEMA
from kstream.log.cluster.cluster import Cluster


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def latency_row(name: str, seconds: list[float], **extra: object) -> Row:
    ms = [s * 1000 for s in seconds]
    return {"name": name, "count": len(ms), "p50_ms": round(percentile(ms, 0.5), 2),
            "p99_ms": round(percentile(ms, 0.99), 2), "max_ms": round(max(ms), 2), **extra}


def make_cluster(root: str, name: str, topics: dict[str, int], records_per_partition: int = 10) -> str:
    path = new_cluster(root, name, topics)
    with Producer({"cluster": path, "acks": "1"}) as producer:
        for topic, partitions in topics.items():
            for p in range(partitions):
                producer.produce_batch(topic, pa.table({"value": [b"x"] * records_per_partition}), partition=p)
    return path


def commit_latency(root: str, commits: int) -> list[Row]:
    rows = []
    for partitions in (6, 600):
        path = make_cluster(root, f"commit-{partitions}", {"t": partitions}, records_per_partition=max(commits, 50) + 1)
        service = ConsumerGroups(Cluster.open(path))
        service.commit("warm", {("t", p): 0 for p in range(partitions)})
        n = commits if partitions == 6 else max(50, commits // 4)
        kstream_s, raw_s = [], []
        raw_path = os.path.join(root, f"raw-{partitions}")
        now = dt.datetime.now(dt.UTC)
        write_deltalake(raw_path, pa.Table.from_pylist([], schema=SCHEMA), partition_by=["group"])
        raw_table = DeltaTable(raw_path)  # kept open, as kstream keeps its table
        for i in range(1, n + 1):
            offsets = {("t", p): i for p in range(partitions)}
            start = time.perf_counter()
            service.commit("g", offsets)
            kstream_s.append(time.perf_counter() - start)
            table = pa.Table.from_pylist(
                [{"group": "g", "topic": "t", "partition": p, "offset": i, "leader_epoch": 0, "metadata": None,
                  "generation": -1, "member_id": None, "committer": "bench", "commit_time": now}
                 for p in range(partitions)], schema=SCHEMA)
            start = time.perf_counter()
            write_deltalake(raw_table, table, mode="overwrite", predicate="\"group\" = 'g'")
            raw_s.append(time.perf_counter() - start)
        kstream_row = latency_row(f"commit, {partitions} partitions: ConsumerGroups.commit", kstream_s)
        raw_row = latency_row(f"commit, {partitions} partitions: bare deltalake overwrite", raw_s)
        kstream_row["p50_vs_raw"] = round(kstream_row["p50_ms"] / raw_row["p50_ms"], 2)
        rows += [kstream_row, raw_row]
        service.close()
    return rows


def read_after_commits(root: str, commits: int) -> list[Row]:
    path = make_cluster(root, "read", {"t": 6}, records_per_partition=commits + 1)
    service = ConsumerGroups(Cluster.open(path))
    groups = [f"group-{g}" for g in range(10)]
    started = time.perf_counter()
    for i in range(commits):
        group = groups[i % len(groups)]
        service.commit(group, {("t", p): i // len(groups) + 1 for p in range(6)})
    write_s = time.perf_counter() - started
    table_dir = service.table.path
    log_files = len(os.listdir(os.path.join(table_dir, "_delta_log")))
    data_files = sum(len(files) for _, _, files in os.walk(table_dir)) - log_files
    cold, warm = [], []
    for _ in range(20):
        start = time.perf_counter()
        fresh = OffsetsTable(os.path.dirname(table_dir), 7 * 24 * 3600 * 1000)
        got = fresh.read("group-3")
        cold.append(time.perf_counter() - start)
        assert len(got) == 6 and got[("t", 0)].offset == commits // len(groups)
    for _ in range(20):
        start = time.perf_counter()
        service.table.read("group-3")
        warm.append(time.perf_counter() - start)
    service.close()
    info = {"table_version": commits, "delta_log_files": log_files, "data_files": data_files,
            "commits_per_s": round(commits / write_s, 1)}
    return [latency_row(f"read a group's offsets after {commits:,} commits (cold)", cold, **info),
            latency_row(f"read a group's offsets after {commits:,} commits (warm)", warm)]


def _consumer(path: str, name: str) -> Consumer:
    return Consumer({"cluster": path, "group.id": "rb", "client.id": name, "enable.auto.commit": False,
                     "heartbeat.interval.ms": 100, "session.timeout.ms": 1000, "fetch.wait.max.ms": 5,
                     "auto.offset.reset": "earliest"})


def _settle(consumers: list[Consumer], partitions: int, deadline_s: float = 60) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < deadline_s:
        for c in consumers:
            c.poll(0)
        owned = [{(tp.topic, tp.partition) for tp in c.assignment()} for c in consumers]
        group = consumers[0]._group
        stable = all(not c._group._membership.changed for c in consumers) if group else False
        if stable and all(owned) and sum(map(len, owned)) == partitions and len(set().union(*owned)) == partitions:
            return time.perf_counter() - start
    raise RuntimeError("group did not settle")


def rebalance(root: str, repeats: int) -> list[Row]:
    path = make_cluster(root, "rebalance", {"t": 64}, records_per_partition=1)
    joins, leaves, kills = [], [], []
    for _ in range(repeats):
        members = [_consumer(path, f"m{i}") for i in range(3)]
        for c in members:
            c.subscribe(["t"])
        _settle(members, 64)
        fourth = _consumer(path, "m3")
        start = time.perf_counter()
        fourth.subscribe(["t"])
        members.append(fourth)
        _settle(members, 64)
        joins.append(time.perf_counter() - start)
        start = time.perf_counter()
        members.pop().close()
        _settle(members, 64)
        leaves.append(time.perf_counter() - start)
        silent = members.pop()
        start = time.perf_counter()
        silent._group._membership._stop.set()  # heartbeats stop, as after SIGKILL
        _settle(members, 64)
        kills.append(time.perf_counter() - start)
        silent._group._membership = None
        silent.close()
        for c in members:
            c.close()
    return [latency_row("rebalance: 4th member joins (64 partitions)", joins),
            latency_row("rebalance: a member leaves (close)", leaves),
            latency_row("rebalance: a member goes silent (session.timeout.ms=1000, heartbeat 100 ms)", kills)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--latency-commits", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", default="commit,read,rebalance")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    run_sections("issue5", args.out, args.only.split(","), {
        "commit": lambda root: commit_latency(root, args.latency_commits),
        "read": lambda root: read_after_commits(root, args.commits),
        "rebalance": lambda root: rebalance(root, args.repeats),
    })


if __name__ == "__main__":
    main()

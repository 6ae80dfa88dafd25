"""Benchmarks of replication across log dirs (issue 3), side by side in one run.

    python -m bench.issue3 [--records 2000000] [--repeats 3] [--partitions 10000]

1. Throughput: RF=3 acks=all (fsync on every ISR replica) vs RF=1 acks=1, with
   produce_batch() and with produce(); 100-byte values, 6 partitions. The three
   log dirs are directories on the same disk here (no JBOD on this machine), so
   the same run also writes the same batches as raw Arrow IPC files, one copy
   and three (fsync per batch on all three, or on two): the floor under kstream.
2. Scale: a topic of --partitions partitions on 4 log dirs with R=2: time to
   create; the first record to every partition (files created lazily) and the
   open files and memory of that producer; produce and consume still working;
   then a controlled shutdown of one log dir moving about half the leaders.

Results: OUT/issue3.json and a Markdown summary on stdout.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import time

from bench import peers
from bench.harness import Row, medians, produce_batches, run_sections, timed_seconds
from kstream import Admin, Consumer, NewTopic, Producer, TopicPartition
from kstream.tools import perf


def cluster_with(root: str, name: str, dirs: int, topics: dict[str, tuple[int, int]]) -> str:
    path = os.path.join(root, name)
    shutil.rmtree(path, ignore_errors=True)
    log_dirs = [os.path.join(root, f"{name}-disk{i}") for i in range(dirs)]
    for d in log_dirs:
        shutil.rmtree(d, ignore_errors=True)
    with Admin({"cluster": path, "log.dirs": ",".join(log_dirs), "min.insync.replicas": 2}) as admin:
        for topic, (partitions, replicas) in topics.items():
            config = {"min.insync.replicas": "2" if replicas > 1 else "1"}
            admin.create_topics([NewTopic(topic, partitions, replicas, config=config)])[topic].result()
    return path


def drop(root: str, name: str) -> None:
    for entry in os.listdir(root):
        if entry == name or entry.startswith(f"{name}-disk"):
            shutil.rmtree(os.path.join(root, entry), ignore_errors=True)


def raw_copies(root: str, batches: list, copies: int, fsync_copies: int) -> Row:
    """The same bytes as raw Arrow IPC files, one per log dir: the floor under kstream."""
    dirs = [os.path.join(root, f"raw-disk{i}") for i in range(copies)]
    for d in dirs:
        os.makedirs(d, exist_ok=True)
    paths = [os.path.join(d, "raw.arrow") for d in dirs]
    row = peers.raw_ipc_write_copies(paths, batches, fsync_copies)
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
    return row


def throughput(root: str, records: int, value_size: int, repeats: int) -> list[Row]:
    batches = peers.make_batches(records, value_size)
    rows: dict[str, list[Row]] = {}
    for _ in range(repeats):
        rows.setdefault("raw IPC, 1 file, no fsync", []).append(raw_copies(root, batches, 1, 0))
        rows.setdefault("raw IPC, 3 files, fsync all 3 per batch", []).append(raw_copies(root, batches, 3, 3))
        rows.setdefault("raw IPC, 3 files, fsync 2 per batch", []).append(raw_copies(root, batches, 3, 2))
        for rf, acks in ((1, "1"), (3, "all")):
            path = cluster_with(root, "tp", 3, {"t": (6, rf)})
            rows.setdefault(f"produce_batch() RF={rf} acks={acks}", []).append(
                timed_seconds("batch", records, value_size, produce_batches(path, "t", batches, acks)))
            drop(root, "tp")
            path = cluster_with(root, "tp", 3, {"t": (6, rf)})
            result = perf.produce("t", records, value_size, {"cluster": path, "acks": acks})
            rows.setdefault(f"produce() RF={rf} acks={acks}", []).append(
                timed_seconds("record", records, value_size, result.seconds))
            drop(root, "tp")
    return medians(rows)


def scale(root: str, partitions: int) -> list[Row]:
    started = time.perf_counter()
    path = cluster_with(root, "scale", 4, {"big": (partitions, 2)})
    create_s = time.perf_counter() - started
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    fds_before = len(os.listdir("/proc/self/fd"))
    started = time.perf_counter()
    producer = Producer({"cluster": path, "acks": "1", "linger.ms": 0})  # keeps 1,000 handles open
    for p in range(partitions):
        producer.produce("big", b"x" * 100, partition=p)
    producer.flush()
    first_write_s = time.perf_counter() - started
    fds = len(os.listdir("/proc/self/fd")) - fds_before
    rss_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    producer.close()
    started = time.perf_counter()
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as again:
        for p in range(0, partitions, max(1, partitions // 100)):
            again.produce("big", b"y" * 100, partition=p)
    produce_again_s = time.perf_counter() - started
    consumer = Consumer({"cluster": path})
    sample = list(range(0, partitions, max(1, partitions // 100)))
    consumer.assign([TopicPartition("big", p, 0) for p in sample])
    consumed = 0
    while consumer.poll(0.5) is not None:
        consumed += 1
    consumer.close()
    with Admin({"cluster": path}) as admin:
        leaders_on_1 = sum(1 for p in admin.cluster.topic("big").partitions if p.leader == 1)
        started = time.perf_counter()
        moved = admin.take_log_dir_offline(1)
        shutdown_s = time.perf_counter() - started
        led_after = sum(1 for p in admin.cluster.topic("big").partitions if p.leader == 1)
    file_count = sum(len(files) for _, _, files in os.walk(root))
    drop(root, "scale")
    return [{
        "name": f"scale: {partitions} partitions, 4 log dirs, R=2",
        "create_topic_s": create_s,
        "first_record_to_every_partition_s": first_write_s,
        "open_fds_per_open_partition_handle": fds / min(partitions, 1000),
        "producer_rss_mb_per_1000_partitions": rss_mb * 1000 / partitions,
        "files_on_disk_per_partition": file_count / partitions,
        "acks_all_to_1pct_of_partitions_s": produce_again_s,
        "consumed_from_1pct_of_partitions": consumed,
        "controlled_shutdown_partitions_moved": moved,
        "controlled_shutdown_leaders_moved": leaders_on_1,
        "leaders_left_on_dir_after": led_after,
        "controlled_shutdown_s": shutdown_s,
    }]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--only", nargs="*", default=["throughput", "scale"])
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    results = run_sections("issue3", args.out, args.only, {
        "throughput": lambda root: throughput(root, args.records, args.value_size, args.repeats),
        "scale": lambda root: scale(root, args.partitions),
    })
    by_name = {r["name"]: r for r in results if "records_per_s" in r}
    for api in ("produce_batch()", "produce()"):
        rf3, rf1 = by_name.get(f"{api} RF=3 acks=all"), by_name.get(f"{api} RF=1 acks=1")
        if rf3 and rf1:
            print(f"{api}: RF=3 acks=all / RF=1 acks=1 = {rf3['records_per_s'] / rf1['records_per_s']:.2f}")
    raw1 = by_name.get("raw IPC, 1 file, no fsync")
    for name in ("raw IPC, 3 files, fsync all 3 per batch", "raw IPC, 3 files, fsync 2 per batch"):
        if raw1 and name in by_name:
            print(f"{name} / 1 file no fsync = {by_name[name]['records_per_s'] / raw1['records_per_s']:.2f}")


if __name__ == "__main__":
    main()

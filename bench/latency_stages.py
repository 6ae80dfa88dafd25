"""Where the end-to-end latency of acks=all goes, stage by stage (issue 21).

    PYTHONPATH=src python bench/latency_stages.py [--records 5000] [--rate 1000] [--repeats 3]

The same loop as ``bench.issue2 --only latency`` (``produce(); poll(0)`` at
``--rate`` records/s, linger.ms=0, acks=all, one partition; a read_committed
consumer in another process), with the producer's log calls timed in place
(wrapped, not sampled). Per record, in ms:

- produce -> append: from produce() until its batch's append starts (linger,
  held while the partition's previous batch is fsynced, the wait for a call);
- append: the write of the frame (leader copy, indexes);
- append -> HW published: the fsyncs acks=all needs (segment, then the recovery
  point) and the thread hand-offs around them;
- HW -> consumer: the reader's wake-up (inotify on the lock file) and its fetch.

Also each fdatasync's duration, by file. Prints a Markdown table: median, p90
and p99 of each stage, median over the repeats. Only kstream (whichever
``src/`` is on PYTHONPATH) is imported, so another checkout's kstream can be
run with the same script for a side-by-side.
"""

from __future__ import annotations

import argparse
import bisect
import multiprocessing
import os
import shutil
import statistics
import struct
import tempfile
import threading
import time
from typing import Any

import numpy as np

import kstream
from kstream import OFFSET_END, Consumer, Producer, TopicPartition
from kstream.admin import Admin, NewTopic
from kstream.log.cluster.partition import Partition
from kstream.log.storage import disk

STAMP = struct.Struct("<q")


def _consumer(cluster: str, records: int, ready: Any, out: Any) -> None:
    consumer = Consumer({"cluster": cluster, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition("lat", 0, OFFSET_END)])
    consumer.poll(0.05)
    ready.set()
    seen: list[tuple[int, int]] = []
    while len(seen) < records:
        message = consumer.poll(10.0)
        if message is None:
            break
        seen.append((message.offset(), time.time_ns()))
    consumer.close()
    out.put(seen)


class Timings:
    """The producer process's log calls, timed in place (thread-safe appends to lists)."""

    def __init__(self) -> None:
        self.appends: list[tuple[int, int, int, int]] = []  # (start ns, end ns, base offset, records)
        self.publishes: list[tuple[int, int]] = []  # (ns, end offset)
        self.syncs: list[tuple[str, float]] = []  # (file kind, ms)
        self.replica_syncs: list[tuple[int, int]] = []  # Partition.sync_replica: (start ns, end ns)
        self._lock = threading.Lock()

    def install(self) -> None:
        real_append, real_publish, real_sync = Partition.append, Partition.publish_high_watermark, disk.fdatasync
        real_sync_replica = Partition.sync_replica
        timings = self

        def append(self: Partition, batch: Any, *args: Any, **kwargs: Any) -> Any:
            start = time.time_ns()
            result = real_append(self, batch, *args, **kwargs)
            timings.appends.append((start, time.time_ns(), result.base_offset, batch.record_count))
            return result

        def publish(self: Partition, end: int) -> None:
            real_publish(self, end)
            timings.publishes.append((time.time_ns(), end))

        def fdatasync(fd: int) -> None:
            try:
                name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                name = "?"
            kind = "recovery point" if "recovery" in name else ("segment" if name.endswith(".log") else name)
            start = time.perf_counter()
            real_sync(fd)
            timings.syncs.append((kind, (time.perf_counter() - start) * 1000))

        def sync_replica(self: Partition, replica: int) -> bool:
            start = time.time_ns()
            try:
                return real_sync_replica(self, replica)
            finally:
                timings.replica_syncs.append((start, time.time_ns()))

        Partition.append = append  # type: ignore[method-assign]
        Partition.sync_replica = sync_replica  # type: ignore[method-assign]
        Partition.publish_high_watermark = publish  # type: ignore[method-assign]
        disk.fdatasync = fdatasync


def one_run(records: int, rate: float) -> dict[str, np.ndarray]:
    root = tempfile.mkdtemp(prefix="kstream-stages-", dir=os.environ.get("KSTREAM_BENCH_DIR", "/tmp"))
    cluster = os.path.join(root, "c")
    try:
        with Admin({"cluster": cluster}) as admin:
            admin.create_topics([NewTopic("lat", 1)])["lat"].result()
        context = multiprocessing.get_context("spawn")
        ready, out = context.Event(), context.Queue()
        child = context.Process(target=_consumer, args=(cluster, records, ready, out))
        child.start()
        ready.wait(60)
        timings = Timings()
        timings.install()
        produced: list[int] = []
        with Producer({"cluster": cluster, "acks": "all", "linger.ms": 0}) as producer:
            start = time.monotonic()
            for i in range(records):
                now = time.time_ns()
                produced.append(now)
                producer.produce("lat", STAMP.pack(now) + b"x" * 92)
                producer.poll(0)
                ahead = (i + 1) / rate - (time.monotonic() - start)
                if ahead > 0:
                    time.sleep(ahead)
            producer.flush()
        seen = out.get(timeout=120)
        child.join(30)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    appends = sorted(timings.appends, key=lambda a: a[2])
    bases = [a[2] for a in appends]
    publishes = sorted(timings.publishes)
    # The first publication at or past each end offset (publications only move forward).
    publish_ns = [p[0] for p in publishes]
    publish_end = np.maximum.accumulate([p[1] for p in publishes])
    stages: dict[str, list[float]] = {k: [] for k in (
        "produce -> append", "append", "append -> HW published", "  append -> fsync thread starts",
        "  fsync thread (sync_replica)", "  fsync thread ends -> HW published", "HW -> consumer", "end to end")}
    replica_syncs = sorted(timings.replica_syncs)
    sync_starts = [r[0] for r in replica_syncs]
    for offset, seen_ns in seen:
        a = appends[bisect.bisect_right(bases, offset) - 1]
        assert a[2] <= offset < a[2] + a[3]
        i = int(np.searchsorted(publish_end, offset + 1))
        j = bisect.bisect_left(publish_ns, a[1], lo=i)  # (a publication after this append)
        hw_ns = publish_ns[min(j, len(publish_ns) - 1)]
        stages["produce -> append"].append((a[0] - produced[offset]) / 1e6)
        stages["append"].append((a[1] - a[0]) / 1e6)
        stages["append -> HW published"].append((hw_ns - a[1]) / 1e6)
        stages["HW -> consumer"].append((seen_ns - hw_ns) / 1e6)
        k = bisect.bisect_left(sync_starts, a[1])  # the first fsync that started after this append
        if k < len(replica_syncs) and replica_syncs[k][1] <= hw_ns:
            stages["  append -> fsync thread starts"].append((replica_syncs[k][0] - a[1]) / 1e6)
            stages["  fsync thread (sync_replica)"].append((replica_syncs[k][1] - replica_syncs[k][0]) / 1e6)
            stages["  fsync thread ends -> HW published"].append((hw_ns - replica_syncs[k][1]) / 1e6)
        stages["end to end"].append((seen_ns - produced[offset]) / 1e6)
    for kind in sorted({k for k, _ in timings.syncs}):
        stages[f"fdatasync: {kind}"] = [ms for k, ms in timings.syncs if k == kind]
    stages["records per batch"] = [float(a[3]) for a in appends]
    return {k: np.asarray(v) for k, v in stages.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--rate", type=float, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    runs = [one_run(args.records, args.rate) for _ in range(args.repeats)]
    print(f"kstream from {os.path.dirname(kstream.__file__)}; {args.records:,} records at {args.rate:,.0f}/s, "
          f"median of {args.repeats} runs\n\n| stage | p50 ms | p90 ms | p99 ms |\n|---|---|---|---|")
    for stage in runs[0]:
        cells = [statistics.median(float(np.percentile(run[stage], q)) for run in runs if len(run[stage]))
                 for q in (50, 90, 99)]
        print(f"| {stage} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")


if __name__ == "__main__":
    main()

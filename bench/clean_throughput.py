"""The log cleaner's cost (issue 25, goals "cleaning throughput >= 0.5 of a raw Arrow IPC rewrite of
the same bytes" and "a producer's throughput on the same partition drops by <= 20% while the
cleaner runs"). One run, the two sides alternating inside every repeat, medians.

    python -m bench.clean_throughput [--mb 32] [--keys 100000] [--value-size 100] [--segment-mb 8] [--repeats 5]
        [--produce-seconds 4] [--throttle-mb 16 4] [--out bench/results]

(a) Cleaning throughput. Each repeat writes ``--mb`` MB of keyed records (``--keys`` keys drawn
    at random, ``--value-size``-byte values, 10% tombstones) to a fresh compacted partition
    (segment.bytes ``--segment-mb``, 8 MB), copies its replica dir, then, in alternating order: the cleaner
    (``Cluster.clean_topic(force=True)``, what ``kstream topics clean`` runs, all sealed
    segments) over the partition, and a raw Arrow IPC rewrite over the copy: read every sealed
    segment's frames (checksums checked, as the cleaner does), decode their Arrow batches, build
    the latest-offset-per-key map with pyarrow (group_by max), filter each batch with it, write
    one IPC file per segment, fsync each file and the directory. MB/s of the sealed segments'
    bytes; the ratio is cleaner / raw.
(b) Producer beside the cleaner. A producer process writes batches of 500 records (acks=1) to
    the partition for ``--produce-seconds``, alone, and while another process, started first,
    cleans the same partition again and again (forced, each clean over the whole log); records/s,
    alternating; the drop is 1 - with / alone. On 2 cores the two processes also share the CPU.
    The cleaner runs unthrottled, and at each ``--throttle-mb`` MB/s of
    ``log.cleaner.io.max.bytes.per.second`` (bytes read + written; set in the cluster's
    properties file before the cleaner process opens it), all in the same repeat, in rotating
    order.

Prints markdown tables and writes OUT/clean_throughput.json. A timed measurement: run under
``flock /tmp/kstream-bench.lock``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from kstream import Admin, NewTopic, Producer
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import format as fmt
from kstream.log.storage.durable_file import read_properties, write_properties_atomically
from kstream.log.storage.frames import FrameWalk, pread_from
from kstream.log.storage.records import PayloadCodec

TOPIC = "c"


def make_partition(root: str, mb: int, keys: int, value_size: int, seed: int, segment_mb: int) -> str:
    """A cluster with one compacted partition holding about ``mb`` MB; returns the cluster path."""
    cluster = os.path.join(root, "cluster")
    with Admin({"cluster": cluster}) as admin:
        admin.create_topics([NewTopic(TOPIC, 1, 1, config={
            "cleanup.policy": "compact", "segment.bytes": str(segment_mb << 20),
            "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "86400000"})])[TOPIC].result()
    rng = np.random.default_rng(seed)
    per_batch = 2000
    batches = max(1, (mb << 20) // (per_batch * (value_size + 12)))
    value = b"x" * value_size
    with Producer({"cluster": cluster, "acks": "1", "linger.ms": 0}) as producer:
        for _ in range(batches):
            drawn = rng.integers(0, keys, per_batch)
            dead = rng.random(per_batch) < 0.1
            producer.produce_batch(TOPIC, pa.table({
                "key": pa.array([b"k%d" % k for k in drawn], pa.binary()),
                "value": pa.array([None if d else value for d in dead], pa.binary())}), partition=0)
        producer.produce_batch(TOPIC, pa.table({"key": [b"end"], "value": [b"end"]}), partition=0)
    return cluster


def replica_dir(cluster: str) -> str:
    opened = Cluster.open(cluster)
    handle = opened.partition(TOPIC, 0)
    try:
        return handle.leader_dir
    finally:
        handle.close()
        opened.close()


def sealed_bytes(directory: str) -> int:
    bases = fmt.list_segment_bases(directory)[:-1]
    return sum(os.path.getsize(os.path.join(directory, fmt.segment_file_name(b))) for b in bases)


def run_cleaner(cluster: str) -> float:
    opened = Cluster.open(cluster)
    try:
        started = time.perf_counter()
        done = opened.clean_topic(TOPIC, force=True)
        seconds = time.perf_counter() - started
    finally:
        opened.close()
    assert done and done[0].cleaned, done
    return seconds


def _segment_batches(directory: str, base: int, codec: PayloadCodec) -> list[tuple[pa.RecordBatch, np.ndarray]]:
    fd = os.open(os.path.join(directory, fmt.segment_file_name(base)), os.O_RDONLY)
    try:
        read = pread_from(fd)
        out = []
        for position, header in FrameWalk(read, os.fstat(fd).st_size, 0, next_offset=base, verify_payload=True):
            if header.attributes & fmt.CONTROL:
                continue
            payload = pa.py_buffer(bytes(read(position + fmt.HEADER_SIZE, header.frame_size - fmt.HEADER_SIZE)))
            out.append((codec.decode(payload, header.schema_length),
                        np.arange(header.base_offset, header.next_offset, dtype=np.int64)))
        return out
    finally:
        os.close(fd)


def run_raw(directory: str, out_dir: str) -> float:
    """The raw rewrite (see the module): read, decode, latest-per-key map, filter, write, fsync."""
    os.makedirs(out_dir, exist_ok=True)
    codec = PayloadCodec()
    started = time.perf_counter()
    bases = fmt.list_segment_bases(directory)[:-1]
    segments = [_segment_batches(directory, base, codec) for base in bases]
    keys = pa.chunked_array([b.column("key") for seg in segments for b, _ in seg])
    offsets = pa.chunked_array([pa.array(o) for seg in segments for _, o in seg])
    latest = pa.table({"key": keys, "offset": offsets}).group_by("key").aggregate([("offset", "max")])
    kept = latest.column("offset_max").combine_chunks()
    for base, seg in zip(bases, segments, strict=True):
        path = os.path.join(out_dir, f"{base}.arrow")
        with open(path, "wb") as f:
            writer = None
            for batch, offsets_np in seg:
                mask = pc.is_in(pa.array(offsets_np), value_set=kept)
                filtered = batch.filter(mask)
                if writer is None:
                    writer = ipc.new_file(f, filtered.schema)
                writer.write_batch(filtered)
            if writer is not None:
                writer.close()
            f.flush()
            os.fsync(f.fileno())
    fd = os.open(out_dir, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return time.perf_counter() - started


_PRODUCER = """
import sys, time, pyarrow as pa
from kstream import Producer
cluster, seconds = sys.argv[1], float(sys.argv[2])
table = pa.table({"key": pa.array([b"p%d" % i for i in range(500)], pa.binary()),
                  "value": pa.array([b"y" * 100] * 500, pa.binary())})
with Producer({"cluster": cluster, "acks": "1", "linger.ms": 0}) as producer:
    producer.produce_batch("c", table, partition=0)  # warm
    print("ready", flush=True)
    sys.stdin.readline()
    n, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        producer.produce_batch("c", table, partition=0)
        n += 500
    print(n / (time.perf_counter() - started), flush=True)
"""

_CLEANER = """
import signal, sys
from kstream.log.cluster.cluster import Cluster
cleans = 0
def stop(*_):
    print(cleans, flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
print("ready", flush=True)
sys.stdin.readline()
while True:
    opened = Cluster.open(sys.argv[1])
    try:
        cleans += sum(d.cleaned for d in opened.clean_topic("c", force=True))
    finally:
        opened.close()
"""


def _child(code: str, *args: str) -> subprocess.Popen:
    child = subprocess.Popen([sys.executable, "-c", code, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    return child


THROTTLE = "log.cleaner.io.max.bytes.per.second"


def set_throttle(cluster: str, limit: float | None) -> None:
    """Set (None: remove, i.e. unlimited) the cluster's cleaner throttle in its properties file,
    which every process reads when it opens the cluster."""
    path = os.path.join(cluster, fmt.CLUSTER_PROPERTIES)
    values = read_properties(path)
    values.pop(THROTTLE, None)
    if limit is not None:
        values[THROTTLE] = repr(float(limit))
    write_properties_atomically(path, values, "kstream cluster: broker-side settings, fixed at creation")


def produce_rate(cluster: str, seconds: float, with_cleaner: bool, limit: float | None = None
                 ) -> tuple[float, int]:
    """The producer's records/s over ``seconds``, alone or while a cleaner process cleans the
    partition again and again (started first: it is cleaning when the producer starts), with
    the cleaner's I/O throttled to ``limit`` bytes/s (None: unlimited)."""
    set_throttle(cluster, limit)
    producer = _child(_PRODUCER, cluster, str(seconds))
    cleaner = _child(_CLEANER, cluster) if with_cleaner else None
    if cleaner is not None:
        assert cleaner.stdin is not None
        cleaner.stdin.write("go\n")
        cleaner.stdin.flush()
        time.sleep(0.2)
    assert producer.stdin is not None
    producer.stdin.write("go\n")
    producer.stdin.flush()
    rate = float(producer.communicate(timeout=600)[0].strip())
    cleans = 0
    if cleaner is not None:
        cleaner.terminate()  # (a clean under way is not counted; its build is dropped by the next)
        cleans = int(cleaner.communicate(timeout=600)[0].strip() or 0)
    return rate, cleans


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=32)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--segment-mb", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--produce-seconds", type=float, default=4.0)
    parser.add_argument("--throttle-mb", type=float, nargs="*", default=[16.0, 4.0],
                        help="log.cleaner.io.max.bytes.per.second limits (MB/s) to run the cleaner at too")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    clean_rates, raw_rates, alone, beside, cleans = [], [], [], [], []
    throttled: dict[float, list[float]] = {mb: [] for mb in args.throttle_mb}
    throttled_cleans: dict[float, list[int]] = {mb: [] for mb in args.throttle_mb}
    for repeat in range(args.repeats):
        root = tempfile.mkdtemp(prefix="clean-bench-")
        try:
            cluster = make_partition(root, args.mb, args.keys, args.value_size, seed=repeat,
                                     segment_mb=args.segment_mb)
            directory = replica_dir(cluster)
            copy = os.path.join(root, "copy")
            shutil.copytree(directory, copy)
            size_mb = sealed_bytes(directory) / (1 << 20)
            order = ("clean", "raw") if repeat % 2 == 0 else ("raw", "clean")
            for side in order:
                if side == "clean":
                    clean_rates.append(size_mb / run_cleaner(cluster))
                else:
                    raw_rates.append(size_mb / run_raw(copy, os.path.join(root, "raw-out")))
            # (b) on the cleaned partition, refilled with dirty records so every clean has work
            sides: list[str | float] = ["alone", "cleaner", *args.throttle_mb]
            shift = repeat % len(sides)
            for side in sides[shift:] + sides[:shift]:  # rotating order
                if side == "alone":
                    alone.append(produce_rate(cluster, args.produce_seconds, False)[0])
                elif side == "cleaner":
                    rate, n = produce_rate(cluster, args.produce_seconds, True)
                    beside.append(rate)
                    cleans.append(n)
                else:
                    rate, n = produce_rate(cluster, args.produce_seconds, True, float(side) * (1 << 20))
                    throttled[side].append(rate)
                    throttled_cleans[side].append(n)
            extra = "".join(f"; at {mb:g} MB/s {throttled[mb][-1]:.0f}/s ({throttled_cleans[mb][-1]} cleans)"
                            for mb in args.throttle_mb)
            print(f"repeat {repeat}: {size_mb:.1f} MB sealed; clean {clean_rates[-1]:.1f} MB/s, raw "
                  f"{raw_rates[-1]:.1f} MB/s; producer alone {alone[-1]:.0f}/s, beside the cleaner "
                  f"{beside[-1]:.0f}/s ({cleans[-1]} cleans){extra}", flush=True)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    med = statistics.median
    result = {"mb": args.mb, "keys": args.keys, "value_size": args.value_size, "repeats": args.repeats,
              "clean_mb_s": clean_rates, "raw_mb_s": raw_rates, "producer_alone": alone,
              "producer_beside_cleaner": beside, "cleans_during_produce": cleans,
              "ratio": med(clean_rates) / med(raw_rates), "drop": 1 - med(beside) / med(alone),
              "throttle_mb_s": {str(mb): {"producer_beside_cleaner": throttled[mb], "cleans": throttled_cleans[mb],
                                          "drop": 1 - med(throttled[mb]) / med(alone)} for mb in args.throttle_mb}}
    print()
    print("| measure | kstream cleaner | raw Arrow IPC rewrite | ratio (goal >= 0.5) |")
    print("|---|---|---|---|")
    print(f"| MB/s of sealed segments, median of {args.repeats} | {med(clean_rates):.1f} | {med(raw_rates):.1f} | "
          f"{result['ratio']:.2f} |")
    print()
    print("| measure | producer alone | producer beside the cleaner | drop (goal <= 20%) |")
    print("|---|---|---|---|")
    print(f"| records/s, median of {args.repeats} | {med(alone):.0f} | {med(beside):.0f} | "
          f"{100 * result['drop']:.0f}% |")
    if args.throttle_mb:
        print()
        print(f"| cleaner ({THROTTLE}) | producer records/s beside it, median of {args.repeats} | "
              "drop vs alone | cleans finished (per repeat) |")
        print("|---|---|---|---|")
        print(f"| none (producer alone) | {med(alone):.0f} | - | - |")
        print(f"| unlimited | {med(beside):.0f} | {100 * result['drop']:.0f}% | {cleans} |")
        for mb in args.throttle_mb:
            print(f"| {mb:g} MB/s | {med(throttled[mb]):.0f} | "
                  f"{100 * result['throttle_mb_s'][str(mb)]['drop']:.0f}% | {throttled_cleans[mb]} |")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    Path(args.out, "clean_throughput.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

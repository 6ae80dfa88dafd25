"""Tiering beside a plain deltalake append of the same rows (issue 24, goal >= 0.8).

    python -m bench.tier_vs_delta [--records 1000000] [--record-size 100] [--partitions 2]
        [--segment-mb 8] [--repeats 5] [--out bench/results]

One kstream topic gets ``--records`` values of ``--record-size`` random bytes (no key), in
batches of ~1 MB spread over ``--partitions``, with ``segment.bytes`` = ``--segment-mb`` so that
all but each partition's last segment are sealed. Then, alternating inside every repeat:

(a) **tier**: :class:`kstream.tiering.Tierer` copies the sealed segments into a new Delta table
    (read_committed read of the log, output columns, the Parquet files written and fsynced by the
    tierer, then one Delta commit with every partition's app transaction, fsync of the commit);
(b) **plain append**: ``write_deltalake`` of the same rows, already in memory as one Arrow table
    (the rows (a) wrote, read back once before the repeats), into a new table partitioned by
    ``partition`` the same way, with the same fsyncs added (the files of the commit and the log).

Each side's figure is rows/s over its whole call; the ratio (a)/(b) is taken per repeat, and
the table gives medians. Writes OUT/tier_vs_delta.json. Run under ``flock /tmp/kstream-bench.lock``
on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from kstream import Admin, NewTopic, Producer
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.lake_offsets import LakeOffsets
from kstream.tiering import Tierer
from kstream.tiering.lake_table import LakeTable

TOPIC = "t"


def fill(cluster_path: str, records: int, record_size: int, partitions: int, segment_mb: int) -> None:
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic(TOPIC, partitions, 1, config={
            "segment.bytes": str(segment_mb << 20), "tier.delta.path": "/nonexistent/set-per-repeat"})])[TOPIC].result()
    produce_random(cluster_path, records, record_size, partitions)


def produce_random(cluster_path: str, records: int, record_size: int, partitions: int, seed: int = 24) -> None:
    """``records`` random values of ``record_size`` bytes into TOPIC, 1 MiB batches round robin."""
    per_batch = max(1, (1 << 20) // record_size)
    rng = np.random.default_rng(seed)
    with Producer({"cluster": cluster_path, "acks": "1"}) as producer:
        for j, start in enumerate(range(0, records, per_batch)):
            n = min(per_batch, records - start)
            data = rng.integers(0, 256, n * record_size, dtype=np.uint8).tobytes()
            offsets = pa.py_buffer(np.arange(n + 1, dtype=np.int32) * record_size)
            values = pa.BinaryArray.from_buffers(pa.binary(), n, [None, offsets, pa.py_buffer(data)])
            producer.produce_batch(TOPIC, pa.table({"value": values}), partition=j % partitions)
        producer.flush()


def tier_once(cluster_path: str, lake: str) -> tuple[float, int]:
    """Point the topic at a new table, forget the old lake ends, tier; (seconds, rows)."""
    cluster = Cluster.open(cluster_path)
    try:
        cluster.alter_topic_config(TOPIC, {"tier.delta.path": lake})
        LakeOffsets(cluster.metadata).forget(TOPIC)
        started = time.perf_counter()
        done = Tierer(cluster).run([TOPIC], force=True)
        seconds = time.perf_counter() - started
        return seconds, sum(d.records for d in done)
    finally:
        cluster.close()


def append_once(rows: pa.Table, lake: str, topic_id: str) -> float:
    """write_deltalake of the same rows, plus the same fsyncs as the tierer's commit."""
    started = time.perf_counter()
    write_deltalake(lake, rows, mode="append", partition_by=["partition"])
    LakeTable(lake, TOPIC, topic_id)._sync_commit(DeltaTable(lake).version())
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--segment-mb", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="tier-bench-")
    try:
        cluster_path = os.path.join(work, "cluster")
        fill(cluster_path, args.records, args.record_size, args.partitions, args.segment_mb)
        cluster = Cluster.open(cluster_path)
        topic_id = cluster.topic(TOPIC).topic_id
        cluster.close()
        # Warm-up, and the rows the plain append writes: what the tierer wrote.
        warm = os.path.join(work, "warm")
        _, tiered_rows = tier_once(cluster_path, warm)
        rows = DeltaTable(warm).to_pyarrow_table()
        assert rows.num_rows == tiered_rows, (rows.num_rows, tiered_rows)
        append_once(rows, os.path.join(work, "warm-plain"), topic_id)
        tier_rates, plain_rates, ratios = [], [], []
        for repeat in range(args.repeats):
            lake, plain = os.path.join(work, f"lake-{repeat}"), os.path.join(work, f"plain-{repeat}")
            if repeat % 2:
                plain_seconds = append_once(rows, plain, topic_id)
                tier_seconds, count = tier_once(cluster_path, lake)
            else:
                tier_seconds, count = tier_once(cluster_path, lake)
                plain_seconds = append_once(rows, plain, topic_id)
            assert count == rows.num_rows
            tier_rates.append(count / tier_seconds)
            plain_rates.append(rows.num_rows / plain_seconds)
            ratios.append(tier_rates[-1] / plain_rates[-1])
            print(f"repeat {repeat}: tier {tier_rates[-1]:,.0f} rows/s, plain append {plain_rates[-1]:,.0f} rows/s, "
                  f"ratio {ratios[-1]:.2f}", flush=True)
            shutil.rmtree(lake)
            shutil.rmtree(plain)
        result = {
            "records": rows.num_rows, "record_size": args.record_size, "partitions": args.partitions,
            "segment_mb": args.segment_mb, "repeats": args.repeats, "host": platform.node(),
            "load": os.getloadavg(), "tier_rows_per_s": tier_rates, "plain_rows_per_s": plain_rates,
            "ratios": ratios,
        }
        print()
        print(f"| side | rows/s (median of {args.repeats}) |")
        print("|---|---|")
        print(f"| kstream tier run | {statistics.median(tier_rates):,.0f} |")
        print(f"| plain write_deltalake of the same rows | {statistics.median(plain_rates):,.0f} |")
        print(f"| ratio (median of per-repeat ratios) | {statistics.median(ratios):.2f} "
              f"(min {min(ratios):.2f}, max {max(ratios):.2f}) |")
        Path(args.out).mkdir(parents=True, exist_ok=True)
        with open(os.path.join(args.out, "tier_vs_delta.json"), "w") as f:
            json.dump(result, f, indent=1)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

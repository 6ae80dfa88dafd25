"""The JVM reader's union read of a tiered topic beside reading its two halves apart (issue 24,
goal >= 0.8).

    python -m bench.union_read [--records 2000000] [--record-size 100] [--partitions 2]
        [--segment-mb 8] [--tail-fraction 0.1] [--repeats 5] [--out bench/results]

One kstream topic gets ``--records`` * (1 - ``--tail-fraction``) random values
(bench.tier_vs_delta.fill), is tiered once (``Tierer.run(force=True)``: every sealed segment)
and its local segments below the lake end are deleted by retention; then the rest of the
records are appended and left in the log (the issue's scene: 90% of the rows in the lake).
Then, in one SparkSession (local[2], the kstream jar), alternating inside every repeat, each
side computing
``sum(length(value)), count(*), max(offset)`` over every row:

(a) **union**: ``format("kstream")`` with ``reader=jvm`` from earliest: the lake's Parquet files
    and the log's tail, one scan;
(b) **apart**: Spark's Parquet reader over the table's files (``spark.read.parquet(table)``:
    delta-spark is not on the session; reading the files directly skips the Delta log replay,
    which favours (b)) plus the JVM reader over the tail from the lake end, timed together.

The ratio (b)/(a) (union speed relative to apart) is taken per repeat; medians reported. Writes
OUT/union_read.json. Run under ``flock /tmp/kstream-bench.lock`` on a shared machine.
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

from bench.tier_vs_delta import TOPIC, fill, produce_random
from kstream.jars import JARS_CONF, jar_path
from kstream.log.cluster.cluster import Cluster
from kstream.tiering import Tierer

AGGREGATE = ("sum(length(value)) AS bytes", "count(*) AS rows", "max(offset) AS last")


def tier_and_delete(cluster_path: str, lake: str) -> dict[int, int]:
    """Tier every sealed segment, then let retention delete what the lake holds; the lake ends."""
    cluster = Cluster.open(cluster_path)
    try:
        cluster.alter_topic_config(TOPIC, {"tier.delta.path": lake})
        ends = {d.partition: d.end_offset for d in Tierer(cluster).run([TOPIC], force=True)}
        cluster.alter_topic_config(TOPIC, {"retention.bytes": "1"})
        info = cluster.topic(TOPIC)
        for p in range(info.num_partitions):
            handle = cluster.partition(info, p)
            try:
                handle.leader_log.apply_retention()
            finally:
                handle.close()
        return ends
    finally:
        cluster.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--segment-mb", type=int, default=8)
    parser.add_argument("--tail-fraction", type=float, default=0.1,
                        help="share of the records appended after tiering, left in the log")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    from pyspark.sql import SparkSession

    work = tempfile.mkdtemp(prefix="union-bench-")
    spark = None
    try:
        cluster_path, lake = os.path.join(work, "cluster"), os.path.join(work, "lake")
        if not 0 <= args.tail_fraction < 1:
            parser.error(f"--tail-fraction is in [0, 1), not {args.tail_fraction}")
        tail = int(args.records * args.tail_fraction)
        fill(cluster_path, args.records - tail, args.record_size, args.partitions, args.segment_mb)
        ends = tier_and_delete(cluster_path, lake)
        produce_random(cluster_path, tail, args.record_size, args.partitions, seed=25)
        spark = (SparkSession.builder.master("local[2]").appName("union-bench").config(JARS_CONF, jar_path())
                 .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")

        def kstream(**options):
            frame = spark.read.format("kstream").option("cluster", cluster_path).option("reader", "jvm")
            for key, value in {"subscribe": TOPIC, **options}.items():
                frame = frame.option(key, value)
            return frame.load()

        tail_start = json.dumps({TOPIC: {str(p): e for p, e in ends.items()}})

        def union() -> tuple[float, tuple]:
            started = time.perf_counter()
            row = kstream(startingOffsets="earliest").selectExpr(*AGGREGATE).collect()[0]
            return time.perf_counter() - started, tuple(row)

        def apart() -> tuple[float, tuple]:
            started = time.perf_counter()
            lake_row = spark.read.parquet(lake).selectExpr(*AGGREGATE).collect()[0]
            tail_row = kstream(startingOffsets=tail_start).selectExpr(*AGGREGATE).collect()[0]
            seconds = time.perf_counter() - started
            return seconds, (lake_row[0] + (tail_row[0] or 0), lake_row[1] + tail_row[1],
                             max(lake_row[2], tail_row[2] or -1))

        in_lake = spark.read.parquet(lake).count()
        expected = union()[1]  # warm-up of both
        assert apart()[1] == expected, (apart()[1], expected)
        assert expected[1] == args.records, expected
        union_s, apart_s, ratios = [], [], []
        for repeat in range(args.repeats):
            first, second = (union, apart) if repeat % 2 == 0 else (apart, union)
            a, b = first()[0], second()[0]
            u, s = (a, b) if repeat % 2 == 0 else (b, a)
            union_s.append(u)
            apart_s.append(s)
            ratios.append(s / u)
            print(f"repeat {repeat}: union {u:.2f} s, apart {s:.2f} s, ratio {s / u:.2f}", flush=True)
        result = {
            "records": args.records, "record_size": args.record_size, "partitions": args.partitions,
            "in_lake": in_lake, "lake_fraction": round(in_lake / args.records, 3),
            "union_s_median": round(statistics.median(union_s), 3),
            "apart_s_median": round(statistics.median(apart_s), 3),
            "ratio_median": round(statistics.median(ratios), 3), "ratios": [round(r, 3) for r in ratios],
            "host": platform.node(), "cpus": os.cpu_count(),
        }
        print(json.dumps(result, indent=2))
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "union_read.json"), "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
    finally:
        if spark is not None:
            spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Streaming ETL kstream -> Spark -> kstream through the Python sink and the JVM writer, side by
side (issue 22): the same records, one run, alternating, medians.

    python -m bench.stream_writers [--records 1000000] [--record-size 100] [--partitions 6]
        [--repeats 3] [--max-offsets-per-trigger 200000] [--latency-records 20000]
        [--latency-batch 1000] [--only etl|latency] [--sides python,jvm,memory,noop] [--jfr FILE]
        [--jfr-settings profile|FILE.jfc] [--out bench/results]

One kstream cluster gets ``--records`` values of ``--record-size`` random bytes (no key, batches of
~1 MB to partition j % partitions) and a small topic of ``--latency-records``. One SparkSession
(``local[2]``, the kstream jar on it). Each side warmed once, then the sides alternate inside every
repeat:

(a) throughput: ``Trigger.AvailableNow`` with ``maxOffsetsPerTrigger``, the JVM reader, identity
    ``key, value``, into a new topic with ``writer=python`` and with ``writer=jvm`` (exactly once: a
    checkpoint, one transaction per micro-batch, acks=all); records/s over the whole query, from
    ``start()`` to its end; every run's output is counted; and into Spark's ``noop`` sink (the
    source, the plan and Spark's per-batch work without any write: the writer's share is the
    difference);
(b) micro-batch duration: the same query over the small topic in micro-batches of
    ``--latency-batch`` records, into kstream with each writer and into Spark's memory sink (the
    floor: the same source and plan, no kstream write); each micro-batch's ``triggerExecution`` and
    ``addBatch`` (the sink's write and commit), the first of each run (the start-up) left out.

``--jfr FILE`` records the Spark JVM (driver and, in ``local[2]``, its executors) with Java Flight
Recorder's profile settings; ``jfr print --events jdk.ExecutionSample FILE`` reads it. ``--sides``
and ``--only`` narrow a profiling run to what is profiled.

Prints markdown tables and writes OUT/stream_writers.json. Starts Spark: run under
``flock /tmp/kstream-spark.lock`` (and ``flock /tmp/kstream-bench.lock`` for figures you report).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

from bench import peers
from bench.spark_vs_kafka import load_kstream, summary
from kstream import Admin, NewTopic
from kstream.jars import jar_path

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

INPUT, SMALL = "t", "small"
PYTHON, JVM, MEMORY, NOOP = "writer=python", "writer=jvm", "memory sink", "noop sink"
WRITERS = {PYTHON: "python", JVM: "jvm"}


class Bench:
    def __init__(self, spark: Any, cluster: str, root: str, args: argparse.Namespace) -> None:
        self.spark, self.cluster, self.root, self.args = spark, cluster, root, args
        self.runs = 0

    def query(self, side: str, topic: str, per_trigger: int) -> dict[str, Any]:
        """One availableNow query topic -> a new topic (or the memory sink); its wall time and batches."""
        self.runs += 1
        out = f"out-{self.runs}"
        checkpoint = os.path.join(self.root, f"cp-{self.runs}")
        frame = (self.spark.readStream.format("kstream").option("cluster", self.cluster).option("reader", "jvm")
                 .option("subscribe", topic).option("startingOffsets", "earliest")
                 .option("maxOffsetsPerTrigger", per_trigger).load().selectExpr("key", "value"))
        writer = frame.writeStream.option("checkpointLocation", checkpoint)
        if side == MEMORY:
            writer = writer.format("memory").queryName(out.replace("-", "_"))
        elif side == NOOP:
            writer = writer.format("noop")
        else:
            with Admin({"cluster": self.cluster}) as admin:
                admin.create_topics([NewTopic(out, self.args.partitions)])[out].result()
            writer = (writer.format("kstream").option("cluster", self.cluster).option("topic", out)
                      .option("writer", WRITERS[side]))
        started = time.perf_counter()
        query = writer.trigger(availableNow=True).start()
        query.awaitTermination()
        seconds = time.perf_counter() - started
        if query.exception() is not None:
            raise SystemExit(f"bench.stream_writers: the {side} query failed: {query.exception()}")
        plan = query._jsq.streamingQuery().lastExecution().executedPlan().toString()
        if side in (PYTHON, JVM) and ("JvmStreamingWrite" in plan) != (side == JVM):
            raise SystemExit(f"bench.stream_writers: the {side} query did not write through that writer: {plan}")
        batches = [p for p in query.recentProgress if p["numInputRows"]]
        records = sum(p["numInputRows"] for p in batches)
        if side == NOOP:
            written = records  # the noop sink keeps nothing to count
        elif side == MEMORY:
            written = self.spark.table(out.replace("-", "_")).count()
            self.spark.sql(f"DROP VIEW IF EXISTS {out.replace('-', '_')}")
        else:
            written = (self.spark.read.format("kstream").option("cluster", self.cluster).option("reader", "jvm")
                       .option("subscribe", out).load().count())
            with Admin({"cluster": self.cluster}) as admin:
                admin.delete_topics([out])[out].result()
        shutil.rmtree(checkpoint, ignore_errors=True)
        return {"seconds": seconds, "records": records, "written": written, "micro_batches": len(batches),
                "batch_ms": [p["durationMs"]["triggerExecution"] for p in batches],
                "add_batch_ms": [p["durationMs"].get("addBatch", 0) for p in batches]}

    def runs_of(self, sides: list[str], topic: str, per_trigger: int, expected: int) -> dict[str, Any]:
        runs: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
        for side in sides:  # warm-up
            self.query(side, topic, per_trigger)
        for _ in range(self.args.repeats):
            for side in sides:
                run = self.query(side, topic, per_trigger)
                if run["records"] != expected or run["written"] != expected:
                    raise SystemExit(f"bench.stream_writers: the {side} query read {run['records']} and wrote "
                                     f"{run['written']} records, expected {expected}")
                runs[side].append(run)
                print(f"{topic} {side}: {run['seconds']:.2f} s, {run['micro_batches']} micro-batches",
                      file=sys.stderr)
        rows = {}
        for side, side_runs in runs.items():
            row = summary([r["seconds"] for r in side_runs], expected)
            later = sorted(ms for r in side_runs for ms in r["batch_ms"][1:])  # the first has the start-up
            add = sorted(ms for r in side_runs for ms in r["add_batch_ms"][1:])
            row.update({"micro_batches": side_runs[0]["micro_batches"],
                        "batch_ms_p50": statistics.median(later) if later else None,
                        "batch_ms_p90": later[int(len(later) * 0.9)] if later else None,
                        "add_batch_ms_p50": statistics.median(add) if add else None})
            rows[side] = row
        return {"per_trigger": per_trigger, "rows": rows}


def report(results: dict[str, Any]) -> None:
    print(f"# {results['records']:,} records of {results['record_size']} B, {results['partitions']} partitions, "
          f"median of {results['repeats']}")
    for key, title in (("streaming_etl", "streaming ETL, availableNow"), ("micro_batch", "micro-batches")):
        if key not in results:
            continue
        part = results[key]
        print(f"\n| {title}, {part['per_trigger']:,} records a trigger | records/s | runs (s) | micro-batches "
              f"| batch p50 / p90 (ms) | addBatch p50 (ms) |\n|---|---|---|---|---|---|")
        for side, row in part["rows"].items():
            print(f"| {side} | {row['records_per_s']:,.0f} | {', '.join(f'{s:.2f}' for s in row['runs_s'])} "
                  f"| {row['micro_batches']} | {row['batch_ms_p50']} / {row['batch_ms_p90']} "
                  f"| {row['add_batch_ms_p50']} |")
    etl = results.get("streaming_etl", {}).get("rows", {})
    if JVM in etl and PYTHON in etl:
        print(f"\nthroughput, JVM writer / Python sink: {etl[JVM]['records_per_s'] / etl[PYTHON]['records_per_s']:.2f}")
    if JVM in etl and NOOP in etl:
        print(f"throughput, JVM writer / noop sink (the writer's share): "
              f"{etl[JVM]['records_per_s'] / etl[NOOP]['records_per_s']:.2f}")
    micro = results.get("micro_batch", {}).get("rows", {})
    for side in (PYTHON, JVM):
        if side not in micro or MEMORY not in micro:
            continue
        print(f"micro-batch p50 over the memory sink, {side}: "
              f"{micro[side]['batch_ms_p50'] - micro[MEMORY]['batch_ms_p50']:+.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-offsets-per-trigger", type=int, default=200_000)
    parser.add_argument("--latency-records", type=int, default=20_000)
    parser.add_argument("--latency-batch", type=int, default=1_000)
    parser.add_argument("--only", choices=("etl", "latency"), action="append",
                        help="run only these parts (repeatable); default both")
    parser.add_argument("--sides", default="python,jvm,memory,noop",
                        help="comma-separated sides to run: python, jvm, memory (the memory sink: latency only), "
                             "noop (Spark's noop sink: the ETL only, the source and Spark without any write)")
    parser.add_argument("--jfr", metavar="FILE", help="record the Spark JVM with Java Flight Recorder (profile "
                        "settings) into FILE; read it with `jfr print --events jdk.ExecutionSample FILE`")
    parser.add_argument("--jfr-settings", default="profile",
                        help="JFR settings: profile, default, or a .jfc file (e.g. one with file-threshold 0 ms, "
                             "so every fsync is a jdk.FileForce event)")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    parts = set(args.only or ("etl", "latency"))
    names = {"python": PYTHON, "jvm": JVM, "memory": MEMORY, "noop": NOOP}
    unknown = [s for s in args.sides.split(",") if s not in names]
    if unknown:
        raise SystemExit(f"bench.stream_writers: --sides {args.sides!r}: unknown {unknown}; "
                         "allowed: python, jvm, memory")
    sides = [names[s] for s in args.sides.split(",")]
    if jar_path() is None:
        raise SystemExit("bench.stream_writers: no kstream JVM jar: run `make jar` (jvm/build.sh)")
    from pyspark.sql import SparkSession

    root = tempfile.mkdtemp(prefix="kstream-stream-writers-", dir=os.environ.get("KSTREAM_BENCH_DIR", "/tmp"))
    cluster = os.path.join(root, "cluster")
    spark = None
    try:
        load_kstream(cluster, INPUT, peers.make_batches(args.records, args.record_size), args.partitions)
        load_kstream(cluster, SMALL, peers.make_batches(args.latency_records, args.record_size,
                                                        args.latency_batch * args.record_size), args.partitions)
        builder = SparkSession.builder
        if args.jfr:
            builder = builder.config("spark.driver.extraJavaOptions",
                                     f"-XX:StartFlightRecording=filename={os.path.abspath(args.jfr)},"
                                     f"settings={args.jfr_settings}")
        spark = (builder.master("local[2]").appName("stream-writers")
                 .config("spark.jars", str(jar_path()))
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.shuffle.partitions", "2").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        bench = Bench(spark, cluster, root, args)
        results: dict[str, Any] = {"records": args.records, "record_size": args.record_size,
                                   "partitions": args.partitions, "repeats": args.repeats}
        if "etl" in parts:
            results["streaming_etl"] = bench.runs_of([s for s in sides if s != MEMORY], INPUT,
                                                     args.max_offsets_per_trigger, args.records)
        if "latency" in parts:
            results["micro_batch"] = bench.runs_of([s for s in sides if s != NOOP], SMALL, args.latency_batch,
                                                   args.latency_records)
    finally:
        if spark is not None:
            spark.stop()
        shutil.rmtree(root, ignore_errors=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "stream_writers.json"), "w") as f:
        json.dump(results, f, indent=2)
    report(results)


if __name__ == "__main__":
    main()

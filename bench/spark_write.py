"""A Spark batch write of N x 100-byte rows: format("kstream") with writer=jvm, with
writer=python, and Spark writing the same rows as Parquet to the same disk (issue 22,
BENCHMARKS.md "Issue 22").

    python -m bench.spark_write [--records 1000000] [--repeats 3] [--partitions 2]
        [--values random|padded] [--driver-memory 4g]

One SparkSession (local[2], the kstream jar on it); the rows (a 100-byte binary ``value``,
incompressible unless ``--values padded``, no key: each task's rows go to its sticky partitions)
are cached in memory first, so each run times the write alone (after an untimed warm-up round);
each write is checked to hold every row (the topics' high watermarks). Each repeat runs the
writes back to back, each into a fresh topic (or directory) under one work dir
(KSTREAM_BENCH_DIR, else /tmp), removed after the round. ``parquet+fsync`` is the Parquet write
followed by an fsync of every file it wrote and of its directory (timed with it): Spark's own
Parquet write leaves its files in the page cache (Hadoop's local file system does not fsync),
kstream's writes are fsynced (acks=all), so this side is the durable like-for-like one. Before
each write (untimed) ``os.sync()`` writes back what earlier writes left dirty.
Prints the medians and the ratios. Run under ``flock /tmp/kstream-spark.lock flock /tmp/kstream-bench.lock``.
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

from kstream import Admin, Consumer, NewTopic, TopicPartition
from kstream.jars import jar_path

# 100-byte values: SHA-512 (64 B) + SHA-256 (32 B) + 4 B of SHA-256 of the row number, or it padded with 'x'.
VALUES = {
    "random": "concat(unhex(sha2(CAST(id AS string), 512)), unhex(sha2(CAST(id AS string), 256)), "
              "substring(unhex(sha2(CAST(id + 1 AS string), 256)), 1, 4)) AS value",
    "padded": "CAST(rpad(CAST(id AS string), 100, 'x') AS binary) AS value",
}


def _check_written(cluster: str, topic: str, partitions: int, records: int) -> None:
    """Every row is in the topic: the high watermarks add up to the rows plus one COMMIT marker
    per task and partition written (at most tasks x partitions)."""
    consumer = Consumer({"cluster": cluster})
    try:
        end = sum(consumer.get_watermark_offsets(TopicPartition(topic, p))[1] for p in range(partitions))
    finally:
        consumer.close()
    if not records <= end <= records + 64:
        raise SystemExit(f"{topic}: high watermarks add up to {end}, not {records} rows plus markers")


def _fsync_tree(directory: str) -> None:
    """fsync every file Spark wrote under ``directory``, then the directory (durable, as kstream's writes)."""
    for name in os.listdir(directory):
        fd = os.open(os.path.join(directory, name), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3, help="timed, after one untimed warm-up round")
    parser.add_argument("--partitions", type=int, default=2, help="of the topic, and of the DataFrame")
    parser.add_argument("--values", choices=sorted(VALUES), default="random",
                        help="random: 100 bytes of SHA-2 output per row (incompressible); padded: the row number "
                             "padded with 'x' to 100 bytes (Parquet's snappy and encodings shrink it several fold)")
    parser.add_argument("--sides", default="jvm,python,parquet,parquet+fsync",
                        help="comma-separated writes to time (a profiling run may keep one)")
    parser.add_argument("--jfr", metavar="FILE", help="record the Spark JVM with Java Flight Recorder (profile "
                        "settings) into FILE; read it with `jfr print --events jdk.ExecutionSample FILE`")
    parser.add_argument("--driver-memory", default="4g",
                        help="spark.driver.memory (local[2]: the executors' too); the cached rows must fit")
    args = parser.parse_args()
    if jar_path() is None:
        sys.exit("no kstream jar (jvm/build.sh): writer=jvm cannot run")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    if args.jfr:
        builder = builder.config("spark.driver.extraJavaOptions",
                                 f"-XX:StartFlightRecording=filename={os.path.abspath(args.jfr)},settings=profile")
    spark = (builder.master("local[2]").appName("kstream-spark-write")
             .config("spark.jars", jar_path()).config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", args.driver_memory).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="kstream-spark-write-", dir=os.environ.get("KSTREAM_BENCH_DIR", "/tmp"))
    cluster = os.path.join(work, "cluster")
    rows = spark.range(0, args.records, 1, args.partitions).selectExpr(VALUES[args.values]).cache()
    rows.count()
    times: dict[str, list[float]] = {name: [] for name in args.sides.split(",")}
    unknown = set(times) - {"jvm", "python", "parquet", "parquet+fsync"}
    if unknown:
        sys.exit(f"--sides: unknown {sorted(unknown)}; allowed: jvm, python, parquet, parquet+fsync")
    try:
        with Admin({"cluster": cluster}) as admin:
            for repeat in range(-1, args.repeats):  # -1: warm-up (JIT, the Python workers), not timed
                for writer in ("jvm", "python"):
                    if writer not in times:
                        continue
                    topic = f"{writer}-{repeat}"
                    admin.create_topics([NewTopic(topic, args.partitions)])[topic].result()
                for name in times:
                    os.sync()  # untimed: no side starts behind another's dirty pages (Parquet's are never synced)
                    started = time.perf_counter()
                    if name.startswith("parquet"):
                        directory = os.path.join(work, f"{name}-{repeat}")
                        rows.write.parquet(directory)
                        if name == "parquet+fsync":
                            _fsync_tree(directory)
                    else:
                        (rows.write.format("kstream").option("cluster", cluster).option("topic", f"{name}-{repeat}")
                         .option("writer", name).mode("append").save())
                    elapsed = time.perf_counter() - started
                    if not name.startswith("parquet"):
                        _check_written(cluster, f"{name}-{repeat}", args.partitions, args.records)
                    if repeat >= 0:
                        times[name].append(elapsed)
                    print(f"round {repeat} {name}: {elapsed:.2f} s", file=sys.stderr)
                for name in times:  # keep the disk's free space: each round's output goes
                    shutil.rmtree(os.path.join(work, f"{name}-{repeat}"), ignore_errors=True)
                for writer in ("jvm", "python"):
                    if writer not in times:
                        continue
                    admin.delete_topics([f"{writer}-{repeat}"])[f"{writer}-{repeat}"].result()
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    medians = {name: statistics.median(values) for name, values in times.items()}
    result = {
        "records": args.records, "repeats": args.repeats, "values": args.values,
        "median_s": {k: round(v, 3) for k, v in medians.items()},
        "records_per_s": {k: round(args.records / v) for k, v in medians.items()},
        **{f"jvm_over_{other.replace('+', '_')}": round(medians[other] / medians["jvm"], 2)
           for other in ("python", "parquet", "parquet+fsync") if other in medians and "jvm" in medians},
        "all_s": {k: [round(x, 3) for x in v] for k, v in times.items()},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

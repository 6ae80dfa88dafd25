"""A Spark batch write of N x 100-byte rows: format("kstream") with writer=jvm, with
writer=python, and Spark writing the same rows as Parquet to the same disk (issue 22,
BENCHMARKS.md "Issue 22").

    python -m bench.spark_write [--records 1000000] [--repeats 3] [--partitions 2]

One SparkSession (local[2], the kstream jar on it); the rows (a 100-byte binary ``value``, no
key: each task's rows go to its sticky partitions) are cached in memory first, so each run
times the write alone (after an untimed warm-up round); each write is checked to hold every
row (the topics' high watermarks). Each repeat runs the three writes back to back, each into a fresh topic
(or directory) under one work dir (KSTREAM_BENCH_DIR, else /tmp). Prints the medians and the
ratios. Run under ``flock /tmp/kstream-spark.lock flock /tmp/kstream-bench.lock``.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3, help="timed, after one untimed warm-up round")
    parser.add_argument("--partitions", type=int, default=2, help="of the topic, and of the DataFrame")
    args = parser.parse_args()
    if jar_path() is None:
        sys.exit("no kstream jar (jvm/build.sh): writer=jvm cannot run")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("kstream-spark-write")
             .config("spark.jars", jar_path()).config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="kstream-spark-write-", dir=os.environ.get("KSTREAM_BENCH_DIR", "/tmp"))
    cluster = os.path.join(work, "cluster")
    rows = (spark.range(0, args.records, 1, args.partitions)
            .selectExpr("CAST(rpad(CAST(id AS string), 100, 'x') AS binary) AS value").cache())
    rows.count()
    times: dict[str, list[float]] = {"jvm": [], "python": [], "parquet": []}
    try:
        with Admin({"cluster": cluster}) as admin:
            for repeat in range(-1, args.repeats):  # -1: warm-up (JIT, the Python workers), not timed
                for writer in ("jvm", "python"):
                    topic = f"{writer}-{repeat}"
                    admin.create_topics([NewTopic(topic, args.partitions)])[topic].result()
                for name in times:
                    started = time.perf_counter()
                    if name == "parquet":
                        rows.write.parquet(os.path.join(work, f"parquet-{repeat}"))
                    else:
                        (rows.write.format("kstream").option("cluster", cluster).option("topic", f"{name}-{repeat}")
                         .option("writer", name).mode("append").save())
                    elapsed = time.perf_counter() - started
                    if name != "parquet":
                        _check_written(cluster, f"{name}-{repeat}", args.partitions, args.records)
                    if repeat >= 0:
                        times[name].append(elapsed)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    medians = {name: statistics.median(values) for name, values in times.items()}
    result = {
        "records": args.records, "repeats": args.repeats,
        "median_s": {k: round(v, 3) for k, v in medians.items()},
        "records_per_s": {k: round(args.records / v) for k, v in medians.items()},
        "jvm_over_python": round(medians["python"] / medians["jvm"], 2),
        "jvm_over_parquet": round(medians["parquet"] / medians["jvm"], 2),
        "all_s": {k: [round(x, 3) for x in v] for k, v in times.items()},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

"""A Spark latest-per-key read of a compacted topic against reading its compacted log in full
(issue 25's goal: the latest-per-key read >= 0.8 of the full read's throughput at 10M keys).

    python -m bench.latest_per_key [--keys 1000000] [--versions 2] [--value-size 100]
        [--partitions 2] [--repeats 5] [--readers jvm,python] [--out bench/results]

One compacted topic (``--partitions`` partitions) gets ``--keys`` keys, each written ``--versions``
times (values of ``--value-size`` random bytes, Arrow batches of 100,000 records through
``produce_batch``, each key in its murmur2 partition), then the log cleaner runs once
(``kstream topics clean``'s code), so the log holds one record per key, as a compacted topic
does in steady state (segments of 1 MB, one more key per partition written last so that no
batch of the keys stays in the active segment, which the cleaner leaves alone). One
SparkSession (``local[2]``) with kstream's jar; then, each path warmed once and the two reads
alternating inside every repeat, per reader:

* full: ``spark.read.format("kstream")`` of the whole topic into the noop sink (every column);
* latest: the same read with ``latestPerKey=true`` into the noop sink.

Reports each read's median seconds and records per second (of the rows it returns: the keys) and
the ratio full time / latest time (the latest read's throughput relative to the full read's; the
goal is >= 0.8). Prints a markdown table and writes OUT/latest_per_key.json. Starts Spark: run
under ``flock /tmp/kstream-spark.lock`` and ``flock /tmp/kstream-bench.lock`` where other jobs share
the machine.
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
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from kstream import Admin, NewTopic, Producer
from kstream.jars import jar_path
from kstream.log.cluster.cluster import Cluster

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

TOPIC = "latest"
BATCH = 100_000


def write(cluster: str, keys: int, versions: int, value_size: int, partitions: int) -> float:
    """Create and fill the topic, clean it; the seconds the clean took."""
    config = {"cleanup.policy": "compact", "segment.bytes": str(1 << 20), "min.cleanable.dirty.ratio": "0.01"}
    with Admin({"cluster": cluster}) as admin:
        admin.create_topics([NewTopic(TOPIC, partitions, config=config)])[TOPIC].result()
    rng = np.random.default_rng(25)
    with Producer({"cluster": cluster, "linger.ms": 0, "acks": "1"}) as producer:
        for version in range(versions):
            for first in range(0, keys, BATCH):
                count = min(BATCH, keys - first)
                names = [f"key-{i:012d}".encode() for i in range(first, first + count)]
                payload = rng.integers(0, 256, count * value_size, dtype=np.uint8).tobytes()
                values = [payload[i * value_size:(i + 1) * value_size] for i in range(count)]
                # the partitioner puts each key in one partition (murmur2, as Kafka's)
                producer.produce_batch(TOPIC, pa.table({"key": names, "value": values}))
                producer.flush()
            print(f"wrote version {version + 1}/{versions} of {keys} keys", flush=True)
        # One more key per partition rolls the segment of the last batch (a frame larger than
        # segment.bytes fills one), so the cleaner, which never cleans the active segment, sees all.
        for partition in range(partitions):
            producer.produce_batch(TOPIC, pa.table({"key": [f"tail-{partition}".encode()], "value": [b"end"]}),
                                   partition=partition)
        producer.flush()
    started = time.perf_counter()
    handle = Cluster.open(cluster)
    try:
        handle.clean_topic(TOPIC, force=True)
    finally:
        handle.close()
    return time.perf_counter() - started


def timed(spark: Any, cluster: str, reader: str, latest: bool) -> float:
    frame = (spark.read.format("kstream").option("cluster", cluster).option("reader", reader)
             .option("subscribe", TOPIC))
    if latest:
        frame = frame.option("latestPerKey", "true")
    started = time.perf_counter()
    frame.load().write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--versions", type=int, default=2)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--readers", default="jvm,python")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    readers = [r.strip() for r in args.readers.split(",") if r.strip()]
    if "jvm" in readers and jar_path() is None:
        sys.exit("no kstream JVM jar: run `make jar` (jvm/build.sh), or --readers python")
    from pyspark.sql import SparkSession

    from kstream.jars import JARS_CONF

    workdir = tempfile.mkdtemp(prefix="kstream-latest-bench-")
    cluster = os.path.join(workdir, "cluster")
    try:
        clean_s = write(cluster, args.keys, args.versions, args.value_size, args.partitions)
        builder = SparkSession.builder.master("local[2]").appName("kstream-latest-bench")
        if jar_path() is not None:
            builder = builder.config(JARS_CONF, jar_path())
        spark = (builder.config("spark.ui.enabled", "false").config("spark.driver.memory", "2g").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        rows = (spark.read.format("kstream").option("cluster", cluster).option("subscribe", TOPIC)
                .option("latestPerKey", "true").load().count())
        full_rows = spark.read.format("kstream").option("cluster", cluster).option("subscribe", TOPIC).load().count()
        assert rows == args.keys + args.partitions, (rows, args.keys)
        results: dict[str, Any] = {"keys": args.keys, "versions": args.versions, "value_size": args.value_size,
                                   "partitions": args.partitions, "repeats": args.repeats, "clean_s": clean_s,
                                   "log_records_after_clean": full_rows, "readers": {}}
        for reader in readers:
            timed(spark, cluster, reader, False)  # warm both paths
            timed(spark, cluster, reader, True)
            full, latest = [], []
            for _ in range(args.repeats):
                full.append(timed(spark, cluster, reader, False))
                latest.append(timed(spark, cluster, reader, True))
            results["readers"][reader] = {"full_s": full, "latest_s": latest,
                                          "ratio_per_repeat": [f / la for f, la in zip(full, latest, strict=True)]}
        spark.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n{args.keys:,} keys x {args.versions} versions, {args.value_size} B values, {args.partitions} "
          f"partitions, {full_rows:,} records in the log after the clean ({clean_s:.1f} s to clean); "
          f"medians of {args.repeats}\n")
    print("| reader | full read (s) | latestPerKey read (s) | keys/s latest | ratio latest/full throughput |")
    print("|---|---|---|---|---|")
    for reader, r in results["readers"].items():
        full_m, latest_m = statistics.median(r["full_s"]), statistics.median(r["latest_s"])
        r.update(full_median_s=full_m, latest_median_s=latest_m, ratio_median=statistics.median(r["ratio_per_repeat"]))
        print(f"| {reader} | {full_m:.2f} | {latest_m:.2f} | {args.keys / latest_m:,.0f} | "
              f"{r['ratio_median']:.2f} |")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    with open(os.path.join(args.out, "latest_per_key.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()

"""Spark batch read throughput of the JVM reader vs the Python reader vs Spark's Parquet reader.

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/python jvm/bench/batch_throughput.py [--records 2000000]

The set-up of bench/issue4.py (2,000,000 records of 100-byte values, 6 partitions, local[2],
each read into the noop sink, median of --repeats runs after --warmups warm-up rounds), with the
kstream jar on the session; plus a typed topic of 20 float64 columns (zstd) read through the
JVM reader: 2 columns vs all 20. Prints a Markdown table and the ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from bench import peers

from kstream import Admin, NewTopic, Producer
from kstream.jars import jar_path, with_jar

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def timed(action) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def ensure_snapshot(cluster: str) -> None:
    if not os.path.exists(os.path.join(cluster, "metadata-snapshot.json")):
        from tests.spark.jvm_support import write_snapshot  # until the snapshot writer is merged

        write_snapshot(cluster)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmups", type=int, default=2)
    parser.add_argument("--typed-records", type=int, default=None, help="default: --records / 2 (as bench/issue4.py)")
    args = parser.parse_args()
    if jar_path() is None:
        raise SystemExit("no kstream jar: run make install (needs javac)")
    from pyspark.sql import SparkSession

    root = tempfile.mkdtemp(prefix="kstream-jvm-bench-", dir=os.environ.get("KSTREAM_BENCH_DIR", "/tmp"))
    try:
        cluster, wide = os.path.join(root, "cluster"), os.path.join(root, "wide")
        with Admin({"cluster": cluster}) as admin:
            admin.create_topics([NewTopic("t", 6)])["t"].result()
        batches = peers.make_batches(args.records, 100)
        with Producer({"cluster": cluster, "acks": "1"}) as producer:
            for batch in batches:
                producer.produce_batch("t", batch)
        parquet = os.path.join(root, "parquet")
        os.makedirs(parquet)
        pq.write_table(pa.Table.from_batches(batches), os.path.join(parquet, "part-0.parquet"))
        typed_records = args.typed_records or args.records // 2
        with Admin({"cluster": wide}) as admin:
            admin.create_topics([NewTopic("wide", 6, schema=pa.schema([(f"c{i}", pa.float64()) for i in range(20)]))])
        rng = np.random.default_rng(1)
        with Producer({"cluster": wide, "acks": "1", "compression.type": "zstd"}) as producer:
            for start in range(0, typed_records, 50_000):
                n = min(50_000, typed_records - start)
                producer.produce_batch("wide", pa.table({f"c{i}": rng.random(n) for i in range(20)}))
        ensure_snapshot(cluster)
        ensure_snapshot(wide)
        spark = (with_jar(SparkSession.builder).master("local[2]").config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")

        def kstream(reader, path=cluster, topic="t", columns=None):  # type: ignore[no-untyped-def]
            frame = (spark.read.format("kstream").option("cluster", path).option("subscribe", topic)
                     .option("reader", reader))
            return frame.option("columns", columns).load() if columns else frame.load()

        reads = {
            "kstream JVM reader": (args.records, lambda: kstream("jvm")),
            "kstream Python reader": (args.records, lambda: kstream("python")),
            "Spark Parquet reader": (args.records, lambda: spark.read.parquet(parquet)),
            "typed, 2 of 20 columns (JVM)": (typed_records, lambda: kstream("jvm", wide, "wide", "c0,c1")),
            "typed, all 20 columns (JVM)": (typed_records,
                                            lambda: kstream("jvm", wide, "wide", ",".join(f"c{i}" for i in range(20)))),
        }
        reads["empty 6-task Spark job (floor)"] = (6, lambda: spark.range(0, 6, 1, 6))
        runs: dict[str, list[float]] = {name: [] for name in reads}
        for _ in range(args.warmups):  # the JIT compiles the JVM reader's loops in the first runs
            for _, read in reads.values():
                read().write.format("noop").mode("overwrite").save()
        for _ in range(args.repeats):
            for name, (_, read) in reads.items():
                runs[name].append(timed(lambda read=read: read().write.format("noop").mode("overwrite").save()))
        spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rate = {name: reads[name][0] / statistics.median(s) for name, s in runs.items()}
    floor = statistics.median(runs["empty 6-task Spark job (floor)"])
    print("| Spark batch read -> noop sink | records/s (median) | runs (s) |\n|---|---|---|")
    for name, seconds in runs.items():
        print(f"| {name} | {rate[name]:,.0f} | {', '.join(f'{s:.2f}' for s in seconds)} |")
    print(f"JVM / Parquet = {rate['kstream JVM reader'] / rate['Spark Parquet reader']:.2f}; "
          f"JVM / Python = {rate['kstream JVM reader'] / rate['kstream Python reader']:.2f}; "
          f"typed 2 of 20 columns cost {cost(runs, 0):.2f} of 20 ({cost(runs, floor):.2f} net of the empty-job floor "
          f"{floor:.2f}s)")


def cost(runs: dict[str, list[float]], floor: float) -> float:
    two = statistics.median(runs["typed, 2 of 20 columns (JVM)"]) - floor
    return two / (statistics.median(runs["typed, all 20 columns (JVM)"]) - floor)


if __name__ == "__main__":
    main()

"""The JVM reader against Spark's Parquet reader and kstream's Python reader, side by side in one run.

    python -m bench.issue14 [--records 2000000] [--repeats 5]

1. Spark batch read into the noop sink: 2,000,000 records of 100-byte values, 6 partitions,
   local[2], through ``reader=jvm``, ``reader=python`` and ``spark.read.parquet`` over the same
   records written as Parquet (what issue 4 compared).
2. A typed topic of 20 float64 columns (zstd): reading 2 columns vs all 20, through each reader,
   beside an empty 6-task Spark job (the fixed cost of any job here).

Runs are interleaved (jvm, python, parquet, jvm, ...) so the machine's noise hits each path alike;
the table gives the median. Writes OUT/issue14.json.
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

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench import peers
from kstream import Admin, NewTopic, Producer
from kstream.jars import jar_path

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def _required_jar() -> str:
    path = jar_path()
    if path is None:
        raise SystemExit("no kstream JVM jar: run `make install` (it builds the jar with javac)")
    return path


def timed(action) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def noop(df) -> None:  # type: ignore[no-untyped-def]
    df.write.format("noop").mode("overwrite").save()


def interleaved(reads: dict, repeats: int) -> dict[str, list[float]]:  # type: ignore[type-arg]
    for read in reads.values():  # warm up each path once (JIT, page cache, Python workers)
        noop(read())
    runs: dict[str, list[float]] = {name: [] for name in reads}
    for _ in range(repeats):
        for name, read in reads.items():
            runs[name].append(timed(lambda read=read: noop(read())))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--typed-records", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    from pyspark.sql import SparkSession

    root = tempfile.mkdtemp(prefix="kstream-bench14-", dir=os.environ.get("KSTREAM_BENCH_DIR", "/tmp"))
    cluster = os.path.join(root, "cluster")
    try:
        with Admin({"cluster": cluster}) as admin:
            admin.create_topics([NewTopic("t", 6)])["t"].result()
            schema = pa.schema([(f"c{i}", pa.float64()) for i in range(20)])
            admin.create_topics([NewTopic("wide", 6, schema=schema)])["wide"].result()
        batches = peers.make_batches(args.records, 100)
        with Producer({"cluster": cluster, "acks": "1"}) as producer:
            for batch in batches:
                producer.produce_batch("t", batch)
        rng = np.random.default_rng(1)
        with Producer({"cluster": cluster, "acks": "1", "compression.type": "zstd"}) as producer:
            for start in range(0, args.typed_records, 50_000):
                n = min(50_000, args.typed_records - start)
                producer.produce_batch("wide", pa.table({f"c{i}": rng.random(n) for i in range(20)}))
        parquet = os.path.join(root, "parquet")
        os.makedirs(parquet)
        pq.write_table(pa.Table.from_batches(batches), os.path.join(parquet, "part-0.parquet"))
        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false").config("spark.jars", _required_jar())
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")

        def kstream(reader: str, topic: str, columns: str | None = None):  # type: ignore[no-untyped-def]
            def read():  # type: ignore[no-untyped-def]
                frame = (spark.read.format("kstream").option("cluster", cluster).option("reader", reader)
                         .option("subscribe", topic))
                return (frame if columns is None else frame.option("columns", columns)).load()
            return read

        runs = interleaved({"jvm reader": kstream("jvm", "t"), "python reader": kstream("python", "t"),
                            "parquet": lambda: spark.read.parquet(parquet)}, args.repeats)
        two, twenty = "c0,c1", ",".join(f"c{i}" for i in range(20))
        typed = interleaved({"jvm, 2 of 20 columns": kstream("jvm", "wide", two),
                             "jvm, 20 of 20 columns": kstream("jvm", "wide", twenty),
                             "python, 2 of 20 columns": kstream("python", "wide", two),
                             "python, 20 of 20 columns": kstream("python", "wide", twenty),
                             "empty 6-task Spark job (floor)": lambda: spark.range(0, 6, 1, 6)}, args.repeats)
        spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rows = {name: {"seconds": statistics.median(s), "records_per_s": args.records / statistics.median(s),
                   "runs_s": s} for name, s in runs.items()}
    rows.update({name: {"seconds": statistics.median(s), "records_per_s": args.typed_records / statistics.median(s),
                        "runs_s": s} for name, s in typed.items()})
    ratios = {
        "jvm / parquet": rows["jvm reader"]["records_per_s"] / rows["parquet"]["records_per_s"],
        "jvm / python": rows["jvm reader"]["records_per_s"] / rows["python reader"]["records_per_s"],
        "jvm: 2 of 20 columns cost, of 20": rows["jvm, 2 of 20 columns"]["seconds"]
        / rows["jvm, 20 of 20 columns"]["seconds"],
        "jvm: 2 of 20 columns cost, of 20, net of the empty-job floor":
        (rows["jvm, 2 of 20 columns"]["seconds"] - rows["empty 6-task Spark job (floor)"]["seconds"])
        / (rows["jvm, 20 of 20 columns"]["seconds"] - rows["empty 6-task Spark job (floor)"]["seconds"]),
        "python: 2 of 20 columns cost, of 20": rows["python, 2 of 20 columns"]["seconds"]
        / rows["python, 20 of 20 columns"]["seconds"],
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "issue14.json"), "w") as f:
        json.dump({"rows": rows, "ratios": ratios, "records": args.records, "typed_records": args.typed_records},
                  f, indent=1)
    print("| Spark batch read → noop sink | records/s (median) | runs (s) |\n|---|---|---|")
    for name, row in rows.items():
        print(f"| {name} | {row['records_per_s']:,.0f} | {', '.join(f'{s:.2f}' for s in row['runs_s'])} |")
    for name, ratio in ratios.items():
        print(f"{name}: {ratio:.2f}")


if __name__ == "__main__":
    main()

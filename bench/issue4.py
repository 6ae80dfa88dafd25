"""Spark read benchmarks (issue 4, the parts that exist so far), side by side in one run.

    python -m bench.issue4 [--records 2000000] [--repeats 3]

1. A Spark batch read of a kstream topic into the noop sink, vs a minimal Python
   data source that yields the same Arrow batches from memory: the ceiling of
   Spark's Python data source path.
2. The same vs Spark's built-in Parquet reader over the same records as Parquet.

2,000,000 records of 100-byte values, 6 partitions, local[2]. Prints a
Markdown table and writes OUT/issue4.json.
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
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from bench import peers
from kstream import Admin, NewTopic, Producer

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

_SCHEMA = "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int"


class MemorySource(DataSource):
    """The ceiling: yields prebuilt Arrow batches of kstream's output schema from memory."""

    @classmethod
    def name(cls) -> str:
        return "kstream_bench_memory"

    def schema(self) -> str:
        return _SCHEMA

    def reader(self, schema):  # type: ignore[no-untyped-def]
        return MemoryReader(int(self.options["records"]), int(self.options["partitions"]))


class MemoryReader(DataSourceReader):
    def __init__(self, records: int, partitions: int):
        self.records = records
        self.partitions_count = partitions

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(i) for i in range(self.partitions_count)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        import numpy as np

        per = self.records // self.partitions_count
        rows = 10_000
        value = pa.array([b"x" * 100] * rows, pa.binary())
        for start in range(0, per, rows):
            n = min(rows, per - start)
            yield pa.RecordBatch.from_arrays([
                pa.nulls(n, pa.binary()), value.slice(0, n), pa.array(["t"] * n),
                pa.array(np.full(n, partition.value, np.int32)), pa.array(np.arange(start, start + n)),
                pa.array(np.full(n, 1_700_000_000_000_000, np.int64)).cast(pa.timestamp("us", tz="UTC")),
                pa.array(np.zeros(n, np.int32)),
            ], names=["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"])


def timed(action) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    from pyspark.sql import SparkSession

    root = tempfile.mkdtemp(prefix="kstream-bench4-", dir=os.environ.get("KSTREAM_BENCH_DIR", "/tmp"))
    cluster = os.path.join(root, "cluster")
    try:
        with Admin({"cluster": cluster}) as admin:
            admin.create_topics([NewTopic("t", 6)])["t"].result()
        batches = peers.make_batches(args.records, 100)
        with Producer({"cluster": cluster, "acks": "1"}) as producer:
            for batch in batches:
                producer.produce_batch("t", batch)
        parquet = os.path.join(root, "parquet")
        os.makedirs(parquet)
        pq.write_table(pa.Table.from_batches(batches), os.path.join(parquet, "part-0.parquet"))
        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        spark.dataSource.register(MemorySource)
        runs: dict[str, list[float]] = {"kstream": [], "memory ceiling": [], "parquet": []}
        reads = {
            "kstream": lambda: spark.read.format("kstream").option("cluster", cluster)
            .option("subscribe", "t").option("startingOffsets", "earliest").load(),
            "memory ceiling": lambda: spark.read.format("kstream_bench_memory")
            .option("records", args.records).option("partitions", 6).load(),
            "parquet": lambda: spark.read.parquet(parquet),
        }
        for read in reads.values():  # warm up each path once
            read().write.format("noop").mode("overwrite").save()
        for _ in range(args.repeats):
            for name, read in reads.items():
                runs[name].append(timed(lambda read=read: read().write.format("noop").mode("overwrite").save()))
        typed = typed_columns(spark, root, args.records // 2, args.repeats)
        typed.update(streaming_etl(spark, root, cluster, args.records))
        spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rows = {name: {"seconds": statistics.median(s), "records_per_s": args.records / statistics.median(s),
                   "runs_s": s} for name, s in runs.items()}
    rows.update(typed)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "issue4.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print("| Spark batch read → noop sink | records/s (median) | runs (s) |\n|---|---|---|")
    for name, row in rows.items():
        if "runs_s" not in row:
            continue
        print(f"| {name} | {row['records_per_s']:,.0f} | {', '.join(f'{s:.2f}' for s in row['runs_s'])} |")
    print(json.dumps(rows["streaming ETL exactly-once"]))
    two, twenty = rows["typed topic, 2 of 20 columns"], rows["typed topic, all 20 columns"]
    print(f"typed: 2 columns cost {two['seconds'] / twenty['seconds']:.2f} of 20 columns")
    print(f"kstream / ceiling = {rows['kstream']['records_per_s'] / rows['memory ceiling']['records_per_s']:.2f}; "
          f"kstream / parquet = {rows['kstream']['records_per_s'] / rows['parquet']['records_per_s']:.2f}")


def streaming_etl(spark, root: str, cluster: str, records: int) -> dict:  # type: ignore[no-untyped-def]
    """kstream -> Spark -> kstream, exactly once, Trigger.AvailableNow in micro-batches of 200,000."""
    with Admin({"cluster": cluster}) as admin:
        admin.create_topics([NewTopic("etl-out", 6)])["etl-out"].result()
    started = time.perf_counter()
    query = (spark.readStream.format("kstream").option("cluster", cluster).option("subscribe", "t")
             .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", 200_000).load()
             .selectExpr("key", "value").writeStream.format("kstream").option("cluster", cluster)
             .option("topic", "etl-out").option("checkpointLocation", os.path.join(root, "etl-cp"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    seconds = time.perf_counter() - started
    batches = [p for p in query.recentProgress if p["numInputRows"]]
    durations = sorted(p["durationMs"]["triggerExecution"] for p in batches)
    rows = sum(p["numInputRows"] for p in batches)
    return {"streaming ETL exactly-once": {
        "seconds": seconds, "records_per_s": rows / seconds, "records": rows, "micro_batches": len(batches),
        "batch_ms_p50": durations[len(durations) // 2], "batch_ms_max": durations[-1]}}


def typed_columns(spark, root: str, records: int, repeats: int) -> dict:  # type: ignore[no-untyped-def]
    """A typed topic of 20 float64 columns (zstd): read 2 columns vs all 20."""
    import numpy as np

    cluster = os.path.join(root, "typed")
    schema = pa.schema([(f"c{i}", pa.float64()) for i in range(20)])
    with Admin({"cluster": cluster}) as admin:
        admin.create_topics([NewTopic("wide", 6, schema=schema)])["wide"].result()
    rng = np.random.default_rng(1)
    with Producer({"cluster": cluster, "acks": "1", "compression.type": "zstd"}) as producer:
        for start in range(0, records, 50_000):
            n = min(50_000, records - start)
            producer.produce_batch("wide", pa.table({f"c{i}": rng.random(n) for i in range(20)}))
    results = {}
    for label, columns in (("typed topic, 2 of 20 columns", "c0,c1"),
                           ("typed topic, all 20 columns", ",".join(f"c{i}" for i in range(20)))):
        def read(columns=columns):  # type: ignore[no-untyped-def]
            (spark.read.format("kstream").option("cluster", cluster).option("subscribe", "wide")
             .option("columns", columns).load().write.format("noop").mode("overwrite").save())
        read()
        seconds = [timed(read) for _ in range(repeats)]
        results[label] = {"seconds": statistics.median(seconds), "records_per_s": records / statistics.median(seconds),
                          "runs_s": seconds}
    return results


if __name__ == "__main__":
    main()

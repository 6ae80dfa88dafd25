"""A Spark driver that reads a tiered topic, in a process of its own (its own master and jars; a
delta-spark session needs Delta's SQL extension and catalog, which the shared test session must
not get). Used by tests/spark/test_tiered_table_delta_spark.py (master local[1]) and
test_tiered_table_standalone.py (a standalone cluster's master URL).

    python tests/spark/tiered_table_reader.py ENGINE MASTER JARS SOURCE [EXECUTORS]

ENGINE ``kstream``: ``spark.read.format("kstream")`` with reader=jvm, cluster SOURCE, topic ``t``
from earliest to latest (the union read of lake and log; the JVM reader: a task per partition).
ENGINE ``delta``: ``spark.read.format("delta").load(SOURCE)`` (delta-spark's extension and catalog
on the session). JARS: comma-separated spark.jars. EXECUTORS: wait (up to 120 s) until that many
executors registered before reading.

Prints one JSON line: ``columns``, ``rows`` (each [partition, offset, key hex, value hex, topic,
timestamp microseconds, timestampType, [[header key, value hex], ...]], sorted) and ``tasks``
({executor id: tasks it ran}, the driver left out). A failing read exits non-zero with Spark's
error on stderr.
"""

from __future__ import annotations

import json
import sys
import time

from pyspark.sql import SparkSession

ROW = ["`partition`", "`offset`", "hex(key)", "hex(value)", "topic", "unix_micros(`timestamp`)", "timestampType",
       "transform(headers, h -> array(h.key, hex(h.value)))"]
EXECUTOR_WAIT_S = 120


def session(engine: str, master: str, jars: str) -> SparkSession:
    builder = (SparkSession.builder.master(master).appName(f"tiered-table-{engine}")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.executor.memory", "512m")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1"))
    if jars:
        builder = builder.config("spark.jars", jars)
    if engine == "delta":
        builder = (builder.config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
                   .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"))
    return builder.getOrCreate()


def wait_for_executors(spark: SparkSession, count: int) -> None:
    deadline = time.monotonic() + EXECUTOR_WAIT_S
    while (registered := spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1) < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"only {registered} of {count} executors registered with the master within "
                             f"{EXECUTOR_WAIT_S} s: see the workers' logs")
        time.sleep(0.5)


def tasks_per_executor(spark: SparkSession) -> dict[str, int]:
    executors = spark.sparkContext._jsc.sc().statusStore().executorList(True)
    out = {}
    for i in range(executors.size()):
        summary = executors.apply(i)
        if summary.id() != "driver":
            out[summary.id()] = summary.totalTasks()
    return out


def main(engine: str, master: str, jars: str, source: str, executors: int) -> None:
    spark = session(engine, master, jars)
    try:
        spark.sparkContext.setLogLevel("ERROR")
        if executors:
            wait_for_executors(spark, executors)
        if engine == "kstream":
            frame = (spark.read.format("kstream").option("cluster", source).option("subscribe", "t")
                     .option("reader", "jvm").option("includeHeaders", "true").load())
        elif engine == "delta":
            frame = spark.read.format("delta").load(source)
        else:
            raise SystemExit(f"ENGINE must be kstream or delta, not {engine!r}")
        got = [[r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7] or []] for r in frame.selectExpr(*ROW).collect()]
        print(json.dumps({"columns": frame.columns, "rows": sorted(got, key=lambda r: (r[0], r[1])),
                          "tasks": tasks_per_executor(spark)}))
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]) if len(sys.argv) > 5 else 0)

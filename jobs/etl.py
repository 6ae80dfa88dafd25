"""Topic -> transform -> topic, exactly once, as a spark-submit job.

    spark-submit --properties-file conf/spark-defaults.conf jobs/etl.py \\
        --source events --sink events-clean --checkpoint /var/kstream/etl-cp \\
        --sql "SELECT key, upper(CAST(value AS STRING)) AS value FROM input"

The transform is SQL over a view named ``input`` (the source's columns), or
``--function module:callable`` taking and returning a DataFrame. Killed at any
moment and restarted with the same checkpoint, every input record reaches the
sink exactly once (micro-batch B commits once; a replay commits nothing).
"""

from __future__ import annotations

import argparse
import importlib

from pyspark.sql import DataFrame, SparkSession

from kstream.jars import with_jar


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cluster", default=None, help="cluster path (default $KSTREAM_CLUSTER or ./data)")
    parser.add_argument("--source", required=True, help="input topic(s), comma-separated")
    parser.add_argument("--sink", required=True, help="output topic")
    parser.add_argument("--checkpoint", required=True, help="checkpoint location (identifies the query)")
    parser.add_argument("--sql", help="transform: SQL over the view `input`")
    parser.add_argument("--function", help="transform: module:callable(DataFrame) -> DataFrame")
    parser.add_argument("--max-offsets-per-trigger", type=int, default=None)
    parser.add_argument("--trigger-ms", type=int, default=0, help="processing-time trigger (0: as fast as possible)")
    parser.add_argument("--available-now", action="store_true", help="process what exists, then stop")
    args = parser.parse_args()
    spark = with_jar(SparkSession.builder.appName(f"kstream-etl-{args.source}-{args.sink}")).getOrCreate()
    reader = spark.readStream.format("kstream").option("subscribe", args.source).option("startingOffsets", "earliest")
    if args.cluster:
        reader = reader.option("cluster", args.cluster)
    if args.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", args.max_offsets_per_trigger)
    output = transform(spark, reader.load(), args.sql, args.function)
    writer = output.writeStream.format("kstream").option("topic", args.sink).option("checkpointLocation",
                                                                                  args.checkpoint)
    if args.cluster:
        writer = writer.option("cluster", args.cluster)
    if args.available_now:
        writer = writer.trigger(availableNow=True)
    elif args.trigger_ms:
        writer = writer.trigger(processingTime=f"{args.trigger_ms} milliseconds")
    writer.start().awaitTermination()


def transform(spark: SparkSession, source: DataFrame, sql: str | None, function: str | None) -> DataFrame:
    if (sql is None) == (function is None):
        raise SystemExit("give exactly one of --sql or --function")
    if sql is not None:
        source.createOrReplaceTempView("input")
        return spark.sql(sql)
    module, _, name = function.partition(":")
    return getattr(importlib.import_module(module), name)(source)


if __name__ == "__main__":
    main()

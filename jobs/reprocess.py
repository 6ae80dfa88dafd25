"""Reprocess an offset range of a topic into Parquet or another topic (a batch job).

    spark-submit --properties-file conf/spark-defaults.conf jobs/reprocess.py \\
        --source events --starting '{"events":{"0":100}}' --ending latest --parquet /tmp/events-archive

Reprocess exactly what consumer group G consumed between 10:00 and 12:00:

    spark-submit --properties-file conf/spark-defaults.conf jobs/reprocess.py \\
        --source events --group G --starting group@timestamp=2026-11-20T10:00:00Z \\
        --ending group@timestamp=2026-11-20T12:00:00Z --parquet /tmp/g-10-to-12

``--starting`` / ``--ending`` take what the reader's startingOffsets / endingOffsets
take: earliest, latest, Kafka-style JSON, or (with ``--group``) the group's
committed offsets ``group``, ``group@version=N``, ``group@timestamp=ISO-8601``.
``--sql`` optionally transforms the view ``input`` first. Writing to a topic is
all-or-nothing for the job.
"""

from __future__ import annotations

import argparse

from pyspark.sql import SparkSession

from kstream.jars import with_jar


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cluster", default=None)
    parser.add_argument("--source", required=True)
    parser.add_argument("--starting", default="earliest")
    parser.add_argument("--ending", default="latest")
    parser.add_argument("--group", help="consumer group for group/group@... positions")
    parser.add_argument("--sql", help="SQL over the view `input`")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--parquet", help="write Parquet files here")
    target.add_argument("--sink", help="write to this topic")
    args = parser.parse_args()
    spark = with_jar(SparkSession.builder.appName(f"kstream-reprocess-{args.source}")).getOrCreate()
    reader = (spark.read.format("kstream").option("subscribe", args.source)
              .option("startingOffsets", args.starting).option("endingOffsets", args.ending))
    if args.cluster:
        reader = reader.option("cluster", args.cluster)
    if args.group:
        reader = reader.option("group.id", args.group)
    frame = reader.load()
    if args.sql:
        frame.createOrReplaceTempView("input")
        frame = spark.sql(args.sql)
    if args.parquet:
        frame.write.mode("overwrite").parquet(args.parquet)
        print(f"wrote {spark.read.parquet(args.parquet).count()} records to {args.parquet}")
    else:
        writer = frame.write.format("kstream").option("topic", args.sink).mode("append")
        if args.cluster:
            writer = writer.option("cluster", args.cluster)
        writer.save()
        print(f"wrote the range of {args.source} to topic {args.sink}")


if __name__ == "__main__":
    main()

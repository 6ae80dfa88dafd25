"""The quick start, run by `make run` through spark-submit.

Produces 10,000 sample click events into the embedded cluster (./data, or
$KSTREAM_CLUSTER), streams them through an aggregation (clicks per user per
page, Trigger.AvailableNow) into the topic `click-counts` with exactly-once
writes, then reads that topic back as a batch and prints what it did.

The query's checkpoint lives in the cluster dir (<cluster>/checkpoints/quickstart), so
each run is a restart of the same query: it streams only the events produced since the
last run, and its counts (complete mode: every count, rewritten each run) add up every
run's events once. `rm -rf ./data` removes both and starts over.
"""

from __future__ import annotations

import os
import random
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the usual PySpark spelling

from kstream import Admin, NewTopic, Producer, TopicExistsError
from kstream.jars import with_jar

CLUSTER = os.environ.get("KSTREAM_CLUSTER", "./data")
CHECKPOINT = os.path.join(CLUSTER, "checkpoints", "quickstart")
EVENTS = 10_000


def ensure_topics(admin: Admin) -> None:
    for name, partitions in (("clicks", 3), ("click-counts", 1)):
        try:  # (and the cluster, on the first run)
            admin.create_topics([NewTopic(name, partitions)])[name].result()
        except TopicExistsError:
            pass


def produce_events(n: int) -> None:
    rng = random.Random()
    with Producer({"cluster": CLUSTER, "acks": "all"}) as producer:
        for _ in range(n):
            user = f"user-{rng.randrange(5)}"
            producer.produce("clicks", f"{user},/page/{rng.randrange(3)}".encode(), key=user.encode())


def main() -> None:
    with Admin({"cluster": CLUSTER}) as admin:
        ensure_topics(admin)
    restart = os.path.isdir(CHECKPOINT)
    started = time.time()
    produce_events(EVENTS)
    print(f"\nProduced {EVENTS} click events into topic clicks (cluster {CLUSTER}).")
    spark = with_jar(SparkSession.builder.appName("kstream-quickstart")).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    clicks = (spark.readStream.format("kstream").option("cluster", CLUSTER).option("subscribe", "clicks")
              .option("startingOffsets", "earliest").load()
              .select(F.split(F.col("value").cast("string"), ",").alias("f"), "timestamp")
              .select(F.col("f")[0].alias("user"), F.col("f")[1].alias("page")))
    counts = (clicks.groupBy("user", "page").count()
              .select(F.col("user").cast("binary").alias("key"),
                      F.to_json(F.struct("user", "page", "count")).cast("binary").alias("value")))
    query = (counts.writeStream.format("kstream").option("cluster", CLUSTER).option("topic", "click-counts")
             .option("checkpointLocation", CHECKPOINT).outputMode("complete")
             .trigger(availableNow=True).start())
    query.awaitTermination()
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    since = ("the events produced since the last run: the query restarted from its checkpoint"
             if restart else "the topic from its start: a new checkpoint")
    print(f"Streamed {rows} click events this run ({since}) in {time.time() - started:.1f} s, "
          f"exactly once into topic click-counts.")
    schema = "user string, page string, count long"
    latest = (spark.read.format("kstream").option("cluster", CLUSTER).option("subscribe", "click-counts").load()
              .select(F.from_json(F.col("value").cast("string"), schema).alias("c"), "offset")
              .groupBy("c.user", "c.page").agg(F.max_by("c.count", "offset").alias("count"))
              .orderBy("user", "page").collect())
    total = sum(row["count"] for row in latest)
    print(f"Clicks per user and page, all runs together ({total} events, each counted once):")
    for row in latest:
        print(f"   {row['user']} {row['page']}: {row['count']}")
    print(f"Cluster: {CLUSTER}; checkpoint: {CHECKPOINT}. Run again to add {EVENTS} more events; "
          f"rm -rf {CLUSTER} starts over.")
    spark.stop()


if __name__ == "__main__":
    main()

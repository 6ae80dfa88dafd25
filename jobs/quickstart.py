"""The quick start, run by `make run` through spark-submit.

Produces sample click events into the embedded cluster (./data, or
$KSTREAM_CLUSTER), streams them through an aggregation (clicks per user per
page, Trigger.AvailableNow) into the topic `click-counts` with exactly-once
writes, then reads that topic back as a batch and prints what it did.
"""

from __future__ import annotations

import os
import random
import tempfile
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the usual PySpark spelling

from kstream import Admin, NewTopic, Producer, TopicExistsError
from kstream.jars import with_jar

CLUSTER = os.environ.get("KSTREAM_CLUSTER", "./data")


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
    started = time.time()
    produce_events(10_000)
    spark = with_jar(SparkSession.builder.appName("kstream-quickstart")).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    clicks = (spark.readStream.format("kstream").option("cluster", CLUSTER).option("subscribe", "clicks")
              .option("startingOffsets", "earliest").load()
              .select(F.split(F.col("value").cast("string"), ",").alias("f"), "timestamp")
              .select(F.col("f")[0].alias("user"), F.col("f")[1].alias("page")))
    counts = (clicks.groupBy("user", "page").count()
              .select(F.col("user").cast("binary").alias("key"),
                      F.to_json(F.struct("user", "page", "count")).cast("binary").alias("value")))
    checkpoint = tempfile.mkdtemp(prefix="kstream-quickstart-")
    query = (counts.writeStream.format("kstream").option("cluster", CLUSTER).option("topic", "click-counts")
             .option("checkpointLocation", checkpoint).outputMode("complete")
             .trigger(availableNow=True).start())
    query.awaitTermination()
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    print(f"\nStreamed {rows} click events through the aggregation in {time.time() - started:.1f} s "
          f"(exactly-once into topic click-counts).")
    latest = (spark.read.format("kstream").option("cluster", CLUSTER).option("subscribe", "click-counts").load()
              .orderBy(F.col("offset").desc()).limit(15)
              .select(F.col("value").cast("string").alias("count")))
    print("Latest counts written to click-counts:")
    for row in latest.collect():
        print("  ", row["count"])
    spark.stop()


if __name__ == "__main__":
    main()

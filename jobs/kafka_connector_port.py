"""A Spark Kafka-connector job moved onto kstream, as a spark-submit job.

    spark-submit --properties-file conf/spark-defaults.conf jobs/kafka_connector_port.py \\
        --source orders --checkpoint /var/kstream/orders-cp

It is written as a job for the Kafka connector would be (the connector's
options, ``kafka.*`` client settings, the connector's columns) and was moved
by two edits: ``format("kafka")`` -> ``format("kstream")`` and
``kafka.bootstrap.servers`` -> ``cluster``. It reads JSON orders, drops the
cancelled ones and routes each order by its region to ``orders-<region>``
through the ``topic`` column (the topics must exist). With the same
checkpoint, a restart goes on where the last run stopped, and every order
reaches its topic exactly once (the connector's sink gives at least once).
"""

from __future__ import annotations

import argparse
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the usual PySpark spelling

from kstream.jars import with_jar

ORDER = "id STRING, region STRING, amount DOUBLE, status STRING"


def run(spark: SparkSession, cluster: str, source: str, checkpoint: str, available_now: bool = True) -> Any:
    """Start the routing query (see the module docstring); returns the StreamingQuery."""
    orders = (spark.readStream
              .format("kstream")                                # was: format("kafka")
              .option("cluster", cluster)                       # was: kafka.bootstrap.servers
              .option("subscribe", source)
              .option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", 10000)
              .option("failOnDataLoss", "true")
              .option("kafka.security.protocol", "SASL_SSL")    # Kafka client settings: accepted
              .option("kafka.sasl.mechanism", "PLAIN")
              .option("kafka.group.id", "orders-router")        # as with the connector: commits nothing
              .load()
              .select(F.col("key"), F.from_json(F.col("value").cast("string"), ORDER).alias("order")))
    routed = (orders.where(F.col("order.status") != "cancelled")
              .select(F.concat(F.lit("orders-"), F.col("order.region")).alias("topic"),
                      F.col("key"),
                      F.to_json(F.col("order")).alias("value")))
    writer = (routed.writeStream
              .format("kstream")                                # was: format("kafka")
              .option("cluster", cluster)                       # was: kafka.bootstrap.servers
              .option("kafka.acks", "all")
              .option("checkpointLocation", checkpoint))
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cluster", default="./data", help="cluster path (default ./data)")
    parser.add_argument("--source", required=True, help="input topic of JSON orders")
    parser.add_argument("--checkpoint", required=True, help="checkpoint location (identifies the query)")
    parser.add_argument("--continuous", action="store_true", help="keep running (default: route what exists, "
                                                                  "then stop)")
    args = parser.parse_args()
    spark = with_jar(SparkSession.builder.appName(f"kafka-connector-port-{args.source}")).getOrCreate()
    query = run(spark, args.cluster, args.source, args.checkpoint, available_now=not args.continuous)
    query.awaitTermination()
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    print(f"routed {rows} orders from {args.source!r}")
    spark.stop()


if __name__ == "__main__":
    main()

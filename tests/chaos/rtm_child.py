"""A Real-time Mode query kstream -> Spark -> kstream in a child process of the chaos class
``rtm_sink_sigkill`` (tests/chaos/rtm_rounds.py), with a Spark session of its own; the round
SIGKILLs its process group (the Python driver and its Spark JVM) at a seeded moment and starts it
again on the same checkpoint.

  run CLUSTER CHECKPOINT SOURCE SINK TRIGGER EXPECT
      reads SOURCE from the earliest offset and writes, through kstream.write_real_time (the JVM
      KStreamForeachWriter, acks=all), one row per source record to SINK whose value is
      "<source partition>:<source offset>:<source value>" (the checker matches each output record
      to its source position). Prints, flushed: "S" once the query started, "P batch" per
      finished batch, and when EXPECT > 0, "DONE" once SINK holds EXPECT records (then the query
      is stopped), or "E error" when the query failed.
"""

from __future__ import annotations

import sys
import time

POLL_S = 0.2


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _records(cluster: str, topic: str) -> int:
    """Records in ``topic`` (the Real-time sink writes no transactions: the HWs' sum)."""
    from kstream import Consumer, TopicPartition

    consumer = Consumer({"cluster": cluster})
    try:
        partitions = consumer.list_topics(topic).topics[topic].partitions
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p))[1] for p in partitions)
    finally:
        consumer.close()


def run(cluster: str, checkpoint: str, source: str, sink: str, trigger: str, expect: str) -> None:
    from pyspark.sql.functions import col, concat_ws

    import kstream

    spark = kstream.spark_session("chaos-rtm", "local[2]", conf={"spark.ui.enabled": "false"})
    frame = kstream.with_source_position(
        spark.readStream.format("kstream").option("cluster", cluster).option("subscribe", source)
        .option("startingOffsets", "earliest").load())
    rows = frame.select(
        "key", concat_ws(":", col("source_partition").cast("string"), col("source_offset").cast("string"),
                         col("value").cast("string")).cast("binary").alias("value"),
        "source_topic", "source_partition", "source_offset")
    query = kstream.write_real_time(rows, cluster=cluster, topic=sink, checkpoint=checkpoint, trigger=trigger)
    _say("S")
    reported = None
    while query.isActive:
        progress = query.lastProgress
        if progress is not None and progress["batchId"] != reported:
            reported = progress["batchId"]
            _say(f"P {reported}")
        if int(expect) > 0 and _records(cluster, sink) >= int(expect):
            query.stop()
            _say("DONE")
            return
        time.sleep(POLL_S)
    _say(f"E {str(query.exception()).splitlines()[0][:300]}")


if __name__ == "__main__":
    {"run": run}[sys.argv[1]](*sys.argv[2:])

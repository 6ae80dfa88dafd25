"""Streaming queries kstream -> Spark -> kstream in a child process of the JVM writer's chaos
classes (tests/chaos/jvm_rounds.py), with a Spark session of its own; the round SIGKILLs it (the
driver, and in local mode its executor with it) at a seeded moment and starts it again on the
same checkpoints.

  run CLUSTER SPEC_JSON
      SPEC_JSON: {"conf": {spark setting: value}, "queries": [{"name", "source", "sink", "writer",
      "checkpoint", "max_offsets", "slow_first_attempt_ms", "slow_partition", "markers"}],
      "master": a Spark master URL (default local[2])}: each query reads "source" from the
      earliest offset (maxOffsetsPerTrigger "max_offsets"), keeps its value and writes it to
      "sink" (writer "writer": jvm or python), exactly once through "checkpoint", with
      trigger(availableNow). With "slow_first_attempt_ms" the first attempt of the task of
      partition "slow_partition" sleeps that long first (a straggler, for speculation), and every
      task attempt leaves a file named by stage, partition and attempt in "markers". Prints, flushed: "S" once
      every query started, "P name batch" per finished micro-batch, "DONE" when all ended, or
      "E name error" when one failed.
"""

from __future__ import annotations

import json
import sys
import time

POLL_S = 0.1


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _slow_first_attempt(frame, sleep_ms: int, partition: int, markers: str):
    """The first attempt of the task of ``partition`` sleeps ``sleep_ms`` before its first row (a
    straggler: with speculation on, Spark runs a copy); every task attempt leaves a file
    ``s<stage>-p<partition>-a<attempt>`` in ``markers`` (attempt > 0: a copy or a retry ran)."""
    from pyspark.sql.functions import col, udf
    from pyspark.sql.types import BinaryType

    def slow(value):
        import os

        from pyspark import TaskContext

        context = TaskContext.get()
        if context is not None and not getattr(slow, "seen", False):
            slow.seen = True  # type: ignore[attr-defined]
            name = f"s{context.stageId()}-p{context.partitionId()}-a{context.attemptNumber()}"
            open(os.path.join(markers, name), "w").close()
            if context.attemptNumber() == 0 and context.partitionId() == partition:
                time.sleep(sleep_ms / 1000)
        return value

    return frame.withColumn("value", udf(slow, BinaryType())(col("value")))


def run(cluster: str, spec_json: str) -> None:
    import kstream

    spec = json.loads(spec_json)
    spark = kstream.spark_session("chaos-query", spec.get("master", "local[2]"),
                                  conf={"spark.ui.enabled": "false", **spec.get("conf", {})})
    queries = {}
    for q in spec["queries"]:
        frame = (spark.readStream.format("kstream").option("cluster", cluster).option("subscribe", q["source"])
                 .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", str(q["max_offsets"]))
                 .load().select("value"))
        if q.get("slow_first_attempt_ms"):
            frame = _slow_first_attempt(frame, int(q["slow_first_attempt_ms"]), int(q["slow_partition"]), q["markers"])
        queries[q["name"]] = (frame.writeStream.format("kstream").option("cluster", cluster)
                              .option("topic", q["sink"]).option("writer", q["writer"])
                              .option("checkpointLocation", q["checkpoint"]).queryName(q["name"])
                              .trigger(availableNow=True).start())
    _say("S")
    reported: dict[str, int] = {}
    while queries:
        for name, query in list(queries.items()):
            progress = query.lastProgress
            if progress is not None and progress["batchId"] != reported.get(name):
                reported[name] = progress["batchId"]
                _say(f"P {name} {progress['batchId']}")
            if not query.isActive:
                error = query.exception()
                if error is not None:
                    _say(f"E {name} {str(error).splitlines()[0][:300]}")
                    return
                del queries[name]
        time.sleep(POLL_S)
    _say("DONE")


if __name__ == "__main__":
    {"run": run}[sys.argv[1]](*sys.argv[2:])

"""Streaming queries kstream -> Spark -> kstream in a child process of the JVM writer's chaos
classes (tests/chaos/jvm_rounds.py), with a Spark session of its own; the round SIGKILLs it (the
driver, and in local mode its executor with it) at a seeded moment and starts it again on the
same checkpoints.

  run CLUSTER SPEC_JSON
      SPEC_JSON: {"conf": {spark setting: value}, "queries": [{"name", "source", "sink", "writer",
      "checkpoint", "max_offsets", "slow_first_attempt_ms"}]}: each query reads "source" from the
      earliest offset (maxOffsetsPerTrigger "max_offsets"), keeps its value and writes it to
      "sink" (writer "writer": jvm or python), exactly once through "checkpoint", with
      trigger(availableNow). With "slow_first_attempt_ms" the first attempt of every task sleeps
      that long per partition first (a straggler, for speculation). Prints, flushed: "S" once
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


def _slow_first_attempt(frame, sleep_ms: int):
    """Tasks of attempt 0 sleep first: Spark sees stragglers and, with speculation on, runs copies."""
    from pyspark.sql.functions import col, udf
    from pyspark.sql.types import BinaryType

    def slow(value):
        from pyspark import TaskContext

        context = TaskContext.get()
        if context is not None and context.attemptNumber() == 0 and not getattr(slow, "slept", False):
            slow.slept = True  # type: ignore[attr-defined]
            time.sleep(sleep_ms / 1000)
        return value

    return frame.withColumn("value", udf(slow, BinaryType())(col("value")))


def run(cluster: str, spec_json: str) -> None:
    import kstream

    spec = json.loads(spec_json)
    spark = kstream.spark_session("chaos-query", "local[2]", conf={"spark.ui.enabled": "false", **spec.get("conf", {})})
    queries = {}
    for q in spec["queries"]:
        frame = (spark.readStream.format("kstream").option("cluster", cluster).option("subscribe", q["source"])
                 .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", str(q["max_offsets"]))
                 .load().select("value"))
        if q.get("slow_first_attempt_ms"):
            frame = _slow_first_attempt(frame, int(q["slow_first_attempt_ms"]))
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

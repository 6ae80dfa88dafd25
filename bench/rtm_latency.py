"""Real-time Mode latency: kstream source (JVM reader) -> JVM ForeachWriter, produce() return -> sink.

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/python -m bench.rtm_latency --rate 1000 --seconds 20

Starts a local[2] session with the kstream jar, a Real-time Mode query (trigger realTime,
Update mode) reading a topic into io.kstream.spark.bench.LatencyWriter (it logs each record's
sequence and the wall clock when it saw it), then produces ``--rate`` records/s for
``--seconds``, noting the wall clock when each produce() returned. Prints p50/p90/p99/max of
(seen - produced) in ms. Records produced during the first ``--warmup`` seconds are left out.
"""

from __future__ import annotations

import argparse
import glob
import os
import tempfile
import time

from pyspark.sql import SparkSession

from kstream import Admin, NewTopic, Producer
from kstream.jars import jar_path, with_jar

# The bench classes are built by jvm/pom.xml into their own jar, never into the shipped one.
BENCH_JAR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "jvm", "target", "kstream-spark-bench.jar")


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=1000, help="records per second")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--acks", default="all")
    parser.add_argument("--linger-ms", type=int, default=0)
    parser.add_argument("--isolation", default="read_committed")
    parser.add_argument("--sink", choices=("jvm", "python"), default="jvm",
                        help="jvm: the JVM LatencyWriter; python: a PySpark foreach function (a Python worker)")
    parser.add_argument("--batch", default="5 minutes", help="the realTime trigger's batch duration (>= 5 seconds)")
    args = parser.parse_args()
    if jar_path() is None:
        raise SystemExit("no kstream jar: run make install (needs javac and mvn)")
    if args.sink == "jvm" and not os.path.isfile(BENCH_JAR):
        raise SystemExit(f"no {BENCH_JAR}: run make jar (the LatencyWriter ships apart from the reader)")
    work = tempfile.mkdtemp(prefix="kstream-rtm-")
    cluster, sink_dir = os.path.join(work, "cluster"), os.path.join(work, "sink")
    os.makedirs(sink_dir)
    with Admin({"cluster": cluster}) as admin:
        admin.create_topics([NewTopic("rtm", args.partitions, 1)])["rtm"].result()
    if not os.path.exists(os.path.join(cluster, "metadata-snapshot.json")):
        from tests.spark.jvm_support import write_snapshot  # until the snapshot writer is merged

        write_snapshot(cluster)
    builder = with_jar(SparkSession.builder)
    if args.sink == "jvm":
        builder = builder.config("spark.jars", f"{jar_path()},{BENCH_JAR}")
    spark = (builder.master("local[2]").appName("kstream-rtm-latency")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark._jvm
    frame = (spark.readStream.format("kstream").option("cluster", cluster).option("subscribe", "rtm")
             .option("reader", "jvm").option("startingOffsets", "latest")
             .option("isolation.level", args.isolation).load().select("value"))
    if args.sink == "jvm":
        query = (frame._jdf.writeStream().foreach(jvm.io.kstream.spark.bench.LatencyWriter(sink_dir))
                 .outputMode("update").trigger(jvm.org.apache.spark.sql.streaming.Trigger.RealTime(args.batch))
                 .option("checkpointLocation", os.path.join(work, "checkpoint")).start())
    else:
        query = (frame.writeStream.foreach(PythonLatencyWriter(sink_dir)).outputMode("update")
                 .trigger(realTime=args.batch).option("checkpointLocation", os.path.join(work, "checkpoint"))
                 .start())
    produced: dict[int, int] = {}
    with Producer({"cluster": cluster, "linger.ms": args.linger_ms, "acks": args.acks}) as producer:
        # Wait until the query's readers see records (they start at the end of the log).
        deadline = time.time() + 120
        probe = 0
        while not _seen(sink_dir) and time.time() < deadline:
            probe -= 1
            producer.produce("rtm", str(probe).encode())
            producer.poll(0)
            time.sleep(0.2)
        if not _seen(sink_dir):
            raise SystemExit(f"the query never delivered a record: {query.exception()}")
        interval = 1.0 / args.rate
        start = time.perf_counter()
        total = int(args.rate * args.seconds)
        for seq in range(total):
            target = start + seq * interval
            while (now := time.perf_counter()) < target:
                if target - now > 0.002:
                    time.sleep(target - now - 0.001)
            producer.produce("rtm", str(seq).encode())
            produced[seq] = time.time_ns()
            producer.poll(0)
        achieved = total / (time.perf_counter() - start)
        producer.flush()
    settle = time.time() + (15.0 if args.sink == "jvm" else 60.0)  # a Python sink sees rows at batch end
    while len(_seen(sink_dir)) < len(produced) and time.time() < settle:
        time.sleep(0.5)
    seen = _seen(sink_dir)
    # Stopping ends the running Real-time batch before its duration: Spark denies that batch's
    # commit and logs the task's "Commit denied" at ERROR. Every record was already measured.
    spark.sparkContext.setLogLevel("OFF")
    query.stop()
    spark.stop()
    warm = int(args.rate * args.warmup)
    latencies = sorted((seen[s] - t) / 1e6 for s, t in produced.items() if s >= warm and s in seen)
    missing = sum(1 for s in produced if s not in seen)
    print(f"sink {args.sink}, batch {args.batch}, rate {args.rate}/s (achieved {achieved:.0f}/s) for {args.seconds}s, "
          f"partitions {args.partitions}, acks={args.acks}, linger.ms={args.linger_ms}, {args.isolation}: "
          f"{len(latencies)} records measured, {missing} not seen")
    print(f"latency ms: p50 {percentile(latencies, 0.5):.2f}  p90 {percentile(latencies, 0.9):.2f}  "
          f"p99 {percentile(latencies, 0.99):.2f}  max {latencies[-1]:.2f}")


class PythonLatencyWriter:
    """The Python twin of io.kstream.spark.bench.LatencyWriter (runs in a Spark Python worker)."""

    def __init__(self, directory: str):
        self.directory = directory

    def open(self, partition_id: int, epoch_id: int) -> bool:
        self.out = open(os.path.join(self.directory, f"py{partition_id}-e{epoch_id}-{time.monotonic_ns()}.txt"),
                        "a", encoding="ascii")
        return True

    def process(self, row) -> None:  # type: ignore[no-untyped-def]
        self.out.write(f"{row.value.decode('ascii')} {time.time_ns()}\n")
        self.out.flush()

    def close(self, error) -> None:  # type: ignore[no-untyped-def]
        self.out.close()


def _seen(sink_dir: str) -> dict[int, int]:
    seen: dict[int, int] = {}
    for path in glob.glob(os.path.join(sink_dir, "*.txt")):
        with open(path, encoding="ascii") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2:
                    seen.setdefault(int(parts[0]), int(parts[1]))
    return seen


if __name__ == "__main__":
    main()

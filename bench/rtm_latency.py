"""Real-time Mode latency: kstream source (JVM reader) -> JVM ForeachWriter, produce() return -> sink;
with ``--kafka`` the connector's Real-time paths beside it, in the same session (issue 21).

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/python -m bench.rtm_latency --rate 1000 --seconds 20
    python -m bench.rtm_latency --kafka --rate 1000 --seconds 15 --rounds 2   # kstream beside the connector

Starts a local[2] session with the kstream jar, a Real-time Mode query (trigger realTime,
Update mode) reading a topic into io.kstream.spark.bench.LatencyWriter (it logs each record's
sequence and the wall clock when it saw it), then produces ``--rate`` records/s for
``--seconds``, noting the wall clock when each produce() returned. Prints p50/p90/p99/max of
(seen - produced) in ms. Records produced during the first ``--warmup`` seconds are left out.

``--kafka`` starts Apache Kafka (kstream.tools.perf.kafka_peer, one broker) with two topics: one
at Kafka's default durability (acknowledged from the page cache) and one with
``flush.messages=1`` (fsynced before acknowledged, kstream's acks=all). It puts the connector's
jars on the session and, one query at a time, measures: kstream source -> LatencyWriter
(kstream Producer, ``--acks``); the connector's Kafka source -> the same LatencyWriter; and the
connector's own Real-time path, Kafka source -> Kafka sink, timed to a confluent-kafka consumer
of the output topic (a process of its own). Kafka records come from a confluent-kafka producer
with acks=all. The paths alternate ``--rounds`` times; the table gives medians.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from kstream import Admin, NewTopic, Producer
from kstream.jars import jar_path, with_jar
from kstream.tools.perf import kafka_peer
from kstream.tools.perf.kafka_peer import KafkaPeer, create_topic

# The bench classes are built by jvm/pom.xml into their own jar, never into the shipped one.
BENCH_JAR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "jvm", "target", "kstream-spark-bench.jar")


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


# How produce_paced waits for a record's due time (--pacing).
PACINGS = ("sleep", "spin")


def produce_paced(producer: Any, topic: str, rate: float, seconds: float, produced: dict[int, int],
                  pacing: str = "sleep") -> float:
    """Produce the values 0, 1, ... as ASCII to ``topic`` at ``rate`` records/s for ``seconds``;
    ``produced[seq]`` gets the wall clock (ns) when its produce() returned. Returns the rate
    achieved.

    ``pacing="sleep"`` (default): sleep until the next record is due, then produce every record
    due by then (at 10,000/s a wake often finds two or three due). The sleep releases the GIL,
    as an application waiting for its input does. ``pacing="spin"``: sleep to 1 ms before each
    record's due time, then spin; below 1 ms between records (1,000/s and up) the loop never
    sleeps and holds the GIL, and kstream's Producer, whose send thread is a Python thread of the
    same process, gets it only at the interpreter's switch interval (5 ms), several times per
    append: ~30 ms from produce() to readable here (docs/BENCHMARKS.md, "Issue 22: Real-time
    Mode", the breakdown). confluent-kafka's send threads are C threads and do not wait for it.
    """
    if pacing not in PACINGS:
        raise ValueError(f"pacing={pacing!r}: one of {PACINGS}")
    interval = 1.0 / rate
    start = time.perf_counter()
    total = int(rate * seconds)
    seq = 0
    while seq < total:
        due = start + seq * interval
        if pacing == "spin":
            while (now := time.perf_counter()) < due:
                if due - now > 0.002:
                    time.sleep(due - now - 0.001)
            last = seq + 1
        else:
            wait = due - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            last = min(total, max(seq + 1, int((time.perf_counter() - start) / interval) + 1))
        while seq < last:
            producer.produce(topic, str(seq).encode())
            produced[seq] = time.time_ns()
            producer.poll(0)
            seq += 1
    return total / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=1000, help="records per second")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--acks", default="all")
    parser.add_argument("--linger-ms", type=int, default=0)
    parser.add_argument("--pacing", choices=PACINGS, default="sleep",
                        help="how the producer loop waits for each record's due time (produce_paced)")
    parser.add_argument("--isolation", default="read_committed")
    parser.add_argument("--sink", choices=("jvm", "python"), default="jvm",
                        help="jvm: the JVM LatencyWriter; python: a PySpark foreach function (a Python worker)")
    parser.add_argument("--batch", default="5 minutes", help="the realTime trigger's batch duration (>= 5 seconds)")
    parser.add_argument("--kafka", action="store_true",
                        help="also the connector's side, in the same session: Apache Kafka (kafka_peer) source -> "
                             "the same LatencyWriter, and Kafka source -> Kafka sink (read by a consumer), at "
                             "Kafka's default durability and with the topics' flush.messages=1")
    parser.add_argument("--rounds", type=int, default=1, help="with --kafka: the paths alternate this many times")
    args = parser.parse_args()
    if jar_path() is None:
        raise SystemExit("no kstream jar: run make install (needs javac and mvn)")
    if args.sink == "jvm" and not os.path.isfile(BENCH_JAR):
        raise SystemExit(f"no {BENCH_JAR}: run make jar (the LatencyWriter ships apart from the reader)")
    if args.kafka and args.sink != "jvm":
        raise SystemExit("--kafka measures the JVM LatencyWriter on both sides: leave --sink at jvm")
    connector: list[str] = []
    if args.kafka:
        reason = kafka_peer.missing()
        connector = kafka_peer.connector_jars()
        if reason or not connector:
            raise SystemExit(f"--kafka: {reason or 'no connector jars'}: run `make kafka`")
    work = tempfile.mkdtemp(prefix="kstream-rtm-")
    cluster = os.path.join(work, "cluster")
    with Admin({"cluster": cluster}) as admin:
        admin.create_topics([NewTopic("rtm", args.partitions, 1)])["rtm"].result()
    if not os.path.exists(os.path.join(cluster, "metadata-snapshot.json")):
        from tests.spark.jvm_support import write_snapshot  # until the snapshot writer is merged

        write_snapshot(cluster)
    peer = KafkaPeer(1, directory=Path(work) / "kafka") if args.kafka else None
    try:
        if peer is not None:
            peer.start()
        builder = with_jar(SparkSession.builder)
        if args.sink == "jvm":
            builder = builder.config("spark.jars", ",".join([str(jar_path()), BENCH_JAR, *connector]))
        spark = (builder.master("local[2]").appName("kstream-rtm-latency")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.shuffle.partitions", "2").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        bench = Bench(spark, work, cluster, peer.bootstrap if peer else None, args)
        paths = [("kstream", "jvm", None)]
        if peer is not None:
            paths += [("kafka", "jvm", "rtm-default"), ("kafka", "jvm", "rtm-flush1"),
                      ("kafka", "kafka", "rtm-default"), ("kafka", "kafka", "rtm-flush1")]
        results: dict[str, list[dict[str, float]]] = {}
        for _ in range(args.rounds if peer is not None else 1):
            for source, sink, topic in paths:
                label = describe(source, sink, topic, args)
                try:
                    result = bench.run(source, sink, topic)
                except RefusedError as refused:
                    print(f"{label}: failed: {refused}", flush=True)
                    results.setdefault(label, [])
                    continue
                results.setdefault(label, []).append(result)
                print(f"{label}: {result['measured']} records measured, {result['missing']} not seen, achieved "
                      f"{result['achieved']:.0f}/s; ms p50 {result['p50']:.2f}  p90 {result['p90']:.2f}  "
                      f"p99 {result['p99']:.2f}  max {result['max']:.2f}", flush=True)
        spark.sparkContext.setLogLevel("OFF")
        spark.stop()
    finally:
        if peer is not None:
            peer.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nrate {args.rate}/s for {args.seconds:.0f} s (first {args.warmup:.0f} s left out), "
          f"{args.partitions} partition(s), batch {args.batch}; medians over {args.rounds} round(s)")
    print("| path | producer, durability | p50 ms | p90 ms | p99 ms | max ms | runs' p99 |")
    print("|---|---|---|---|---|---|---|")
    for label, runs in results.items():
        if not runs:
            print(f"| {label} | failed (above) | | | | | |")
            continue
        med = {k: statistics.median(r[k] for r in runs) for k in ("p50", "p90", "p99", "max")}
        p99s = ", ".join(f"{r['p99']:.2f}" for r in runs)
        print(f"| {label} | {med['p50']:.2f} | {med['p90']:.2f} | {med['p99']:.2f} | {med['max']:.2f} | {p99s} |")


class RefusedError(Exception):
    """Spark refused the query, or it failed or delivered nothing (the text says which)."""


def describe(source: str, sink: str, topic: str | None, args: argparse.Namespace) -> str:
    if source == "kstream":
        return (f"kstream source (JVM reader, {args.isolation}) -> JVM LatencyWriter | kstream Producer "
                f"acks={args.acks}, linger.ms={args.linger_ms}, fsynced before readable")
    durability = "flush.messages=1 (fsync per append)" if topic and "flush1" in topic else "default (page cache)"
    target = "JVM LatencyWriter" if sink == "jvm" else "Kafka sink -> consumer of the output topic"
    return (f"Kafka source (connector) -> {target} | confluent-kafka acks=all, linger.ms={args.linger_ms}, "
            f"Kafka {durability}")


class Bench:
    """One Real-time query at a time on one session: start it, produce at the rate, read what was seen."""

    def __init__(self, spark: Any, work: str, cluster: str, bootstrap: str | None, args: argparse.Namespace):
        self.spark, self.work, self.cluster, self.bootstrap, self.args = spark, work, cluster, bootstrap, args
        self.runs = 0

    def run(self, source: str, sink: str, topic: str | None) -> dict[str, float]:
        self.runs += 1
        out_dir = os.path.join(self.work, f"seen-{self.runs}")
        os.makedirs(out_dir)
        checkpoint = os.path.join(self.work, f"checkpoint-{self.runs}")
        spark, jvm, args = self.spark, self.spark._jvm, self.args
        if topic is not None:  # new Kafka topics for every run: no record of an earlier run is seen
            config = {"flush.messages": "1"} if "flush1" in topic else {}
            topic = f"{topic}-{self.runs}"
            for name in (topic, f"{topic}-out"):
                create_topic(self.bootstrap, name, partitions=args.partitions, config=config)
        if source == "kstream":
            frame = (spark.readStream.format("kstream").option("cluster", self.cluster).option("subscribe", "rtm")
                     .option("reader", "jvm").option("startingOffsets", "latest")
                     .option("isolation.level", args.isolation).load().select("value"))
        else:
            frame = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", self.bootstrap)
                     .option("subscribe", topic).option("startingOffsets", "latest").load().select("value"))
        consumer = None
        try:
            if sink == "jvm" and args.sink == "jvm":
                query = StreamingQuery(
                    frame._jdf.writeStream().foreach(jvm.io.kstream.spark.bench.LatencyWriter(out_dir))
                    .outputMode("update").trigger(jvm.org.apache.spark.sql.streaming.Trigger.RealTime(args.batch))
                    .option("checkpointLocation", checkpoint).start())
            elif sink == "python":
                query = (frame.writeStream.foreach(PythonLatencyWriter(out_dir)).outputMode("update")
                         .trigger(realTime=args.batch).option("checkpointLocation", checkpoint).start())
            else:  # the connector's own Real-time path: Kafka source -> Kafka sink
                consumer = subprocess.Popen([sys.executable, "-c", CONSUMER, self.bootstrap, f"{topic}-out",
                                             os.path.join(out_dir, "consumer.txt")])
                query = (frame.writeStream.format("kafka").option("kafka.bootstrap.servers", self.bootstrap)
                         .option("topic", f"{topic}-out").outputMode("update").trigger(realTime=args.batch)
                         .option("checkpointLocation", checkpoint).start())
        except Exception as err:  # Spark's analysis error: reported as the result
            if consumer is not None:
                consumer.kill()
            raise RefusedError(str(err).splitlines()[0] if str(err) else repr(err)) from err
        try:
            return self._measure(source, topic, out_dir, query)
        finally:
            # Stopping ends the running Real-time batch before its duration: Spark denies that batch's
            # commit and logs the task's "Commit denied" at ERROR. Every record was already measured.
            spark.sparkContext.setLogLevel("OFF")
            query.stop()
            spark.sparkContext.setLogLevel("ERROR")
            if consumer is not None:
                consumer.kill()
                consumer.wait()

    def _measure(self, source: str, topic: str | None, out_dir: str, query: Any) -> dict[str, float]:
        args = self.args
        if source == "kstream":
            producer: Any = Producer({"cluster": self.cluster, "linger.ms": args.linger_ms, "acks": args.acks})
            target = "rtm"
        else:
            from confluent_kafka import Producer as KafkaProducer

            producer = KafkaProducer({"bootstrap.servers": self.bootstrap, "acks": "all",
                                      "linger.ms": args.linger_ms})
            target = topic
        produced: dict[int, int] = {}
        try:
            # Wait until the query's readers see records (they start at the end of the log).
            deadline = time.time() + 60
            probe = 0
            while not _seen(out_dir) and time.time() < deadline:
                if query.exception() is not None:
                    raise RefusedError(str(query.exception()).splitlines()[0])
                probe -= 1
                producer.produce(target, str(probe).encode())
                producer.poll(0)
                time.sleep(0.2)
            if not _seen(out_dir):
                raise RefusedError(f"the query delivered no record in 60 s: {query.exception()}")
            achieved = produce_paced(producer, target, args.rate, args.seconds, produced, args.pacing)
            producer.flush()
        finally:
            if source == "kstream":
                producer.close()
        settle = time.time() + (15.0 if args.sink == "jvm" else 60.0)  # a Python sink sees rows at batch end
        while sum(1 for s in _seen(out_dir) if s >= 0) < len(produced) and time.time() < settle:
            time.sleep(0.5)
        seen = _seen(out_dir)
        warm = int(args.rate * args.warmup)
        latencies = sorted((seen[s] - t) / 1e6 for s, t in produced.items() if s >= warm and s in seen)
        if not latencies:
            raise SystemExit(f"no record produced after the warm-up was seen: {query.exception()}")
        return {"measured": len(latencies), "missing": sum(1 for s in produced if s not in seen),
                "achieved": achieved, "p50": percentile(latencies, 0.5), "p90": percentile(latencies, 0.9),
                "p99": percentile(latencies, 0.99), "max": latencies[-1]}


# A consumer of the Kafka sink's output topic in its own process (its polling never shares the
# producer's GIL): "sequence seen_ns" per record, flushed at once.
CONSUMER = """
import sys, time
from confluent_kafka import Consumer, TopicPartition
bootstrap, topic, path = sys.argv[1:4]
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "rtm-latency", "enable.auto.commit": False,
                     "fetch.wait.max.ms": 5, "auto.offset.reset": "earliest"})
consumer.subscribe([topic])
with open(path, "a", encoding="ascii") as out:
    while True:
        message = consumer.poll(0.1)
        if message is None or message.error():
            continue
        out.write(f"{message.value().decode('ascii')} {time.time_ns()}\\n")
        out.flush()
"""


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

"""Spark beside Apache Kafka: kstream's Spark paths against Spark's Kafka connector on a Kafka broker,
the same records, one run, alternating, medians (issue 21, "Spark side by side").

    python -m bench.spark_vs_kafka [--records 2000000] [--record-size 100] [--partitions 6] [--repeats 5]
        [--flush-messages 1] [--max-offsets-per-trigger 200000] [--only read|etl|latency]
        [--kafka-v2] [--jfr FILE] [--out bench/results]

One kstream cluster and one Apache Kafka broker (kstream.tools.perf.kafka_peer, Kafka's default
durability unless ``--flush-messages``) get the same records: ``--records`` values of
``--record-size`` random bytes, no key, batch j of ~1 MB to partition j % partitions on both sides.
One SparkSession (``local[2]``) carries kstream's jar and the connector's jars. Then, each path
warmed once and the two sides alternating inside every repeat:

(a) batch read into the noop sink: ``format("kstream")`` with ``reader=jvm`` vs ``format("kafka")``;
(b) streaming ETL topic -> topic, ``Trigger.AvailableNow`` with ``maxOffsetsPerTrigger``: kstream
    source -> kstream sink (exactly once: a checkpoint, one transaction per micro-batch, acks=all) vs
    the connector's Kafka source -> Kafka sink (at least once), records/s over the whole query, from
    ``start()`` to its end; each run writes a new output topic, whose count is checked afterwards;
(c) micro-batch duration, the floor of a micro-batch pipeline's latency: the same ETL over a topic
    of ``--latency-records`` in micro-batches of ``--latency-batch`` records, each micro-batch's
    ``triggerExecution`` (its first, with the query's start-up, left out).

Prints markdown tables and writes OUT/spark_vs_kafka.json. Starts Spark and a Kafka broker: run
under ``flock /tmp/kstream-spark.lock`` where other Spark jobs share the machine. Needs the kstream
jar (``make jar``) and ``make kafka``'s jars.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import peers
from kstream import Admin, NewTopic, Producer
from kstream.jars import jar_path
from kstream.tools.perf import kafka_peer
from kstream.tools.perf.kafka_peer import KafkaPeer, create_topic

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

KSTREAM, KAFKA = "kstream", "Kafka + connector"
INPUT, SMALL = "t", "small"


def required() -> tuple[str, list[str]]:
    """kstream's jar and the connector's jars, or exit saying how to get them."""
    missing = []
    if jar_path() is None:
        missing.append("no kstream JVM jar: run `make jar` (jvm/build.sh)")
    connector = kafka_peer.connector_jars()
    reason = kafka_peer.missing()
    if reason or not connector:
        missing.append(reason or f"no Spark Kafka connector jars in {kafka_peer.kafka_lib() / 'connector'}: "
                                 "run `make kafka`")
    if missing:
        raise SystemExit("bench.spark_vs_kafka: " + "; ".join(missing))
    return str(jar_path()), connector


def load_kstream(cluster: str, topic: str, batches: list, partitions: int) -> None:
    with Admin({"cluster": cluster}) as admin:
        admin.create_topics([NewTopic(topic, partitions)])[topic].result()
    with Producer({"cluster": cluster, "acks": "1"}) as producer:
        for j, batch in enumerate(batches):
            producer.produce_batch(topic, batch, partition=j % partitions)
        producer.flush()


def load_kafka(bootstrap: str, topic: str, batches: list, partitions: int) -> None:
    from confluent_kafka import Producer as KafkaProducer

    create_topic(bootstrap, topic, partitions=partitions)
    producer = KafkaProducer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 20,
                              "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000})
    errors: list[Any] = []

    def report(error, _message):  # type: ignore[no-untyped-def]
        if error is not None:
            errors.append(error)

    for j, batch in enumerate(batches):
        for value in batch.column(0).to_pylist():
            while True:
                try:
                    producer.produce(topic, value, partition=j % partitions, on_delivery=report)
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.poll(0)
    if producer.flush(120) or errors:
        raise SystemExit(f"bench.spark_vs_kafka: loading Kafka failed: {errors[:3]}")


def timed(action: Callable[[], Any]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def summary(seconds: list[float], records: int) -> dict[str, Any]:
    median = statistics.median(seconds)
    return {"seconds": median, "records_per_s": records / median, "runs_s": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-offsets-per-trigger", type=int, default=200_000)
    parser.add_argument("--latency-records", type=int, default=20_000)
    parser.add_argument("--latency-batch", type=int, default=1_000)
    parser.add_argument("--flush-messages", type=int, default=None,
                        help="the broker's log.flush.interval.messages (1: fsync each append); Kafka's default: never")
    parser.add_argument("--only", choices=("read", "etl", "latency"), action="append",
                        help="run only these parts (repeatable); default all three")
    parser.add_argument("--kafka-v2", action="store_true",
                        help="batch reads of format('kafka') through the connector's DataSource V2 scan (KafkaScan) "
                             "instead of Spark's default V1 KafkaRelation (spark.sql.sources.useV1SourceList)")
    parser.add_argument("--jfr", metavar="FILE", help="record the Spark JVM with Java Flight Recorder (profile "
                        "settings) into FILE; read it with `jfr print --events jdk.ExecutionSample FILE`")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    parts = set(args.only or ("read", "etl", "latency"))
    kstream_jar, connector = required()
    from pyspark.sql import SparkSession

    root = tempfile.mkdtemp(prefix="kstream-spark-vs-kafka-", dir=os.environ.get("KSTREAM_BENCH_DIR", "/tmp"))
    cluster = os.path.join(root, "cluster")
    results: dict[str, Any] = {"records": args.records, "record_size": args.record_size,
                               "partitions": args.partitions, "repeats": args.repeats,
                               "max_offsets_per_trigger": args.max_offsets_per_trigger,
                               "flush_messages": args.flush_messages, "kafka_v2": args.kafka_v2,
                               "kafka": kafka_peer.kafka_version(),
                               "connector": kafka_peer.connector_version(), "argv": sys.argv[1:],
                               "machine": f"{os.cpu_count()} cores, {platform.platform()}"}
    peer = KafkaPeer(1, flush_messages=args.flush_messages, directory=Path(root) / "kafka")
    try:
        peer.start()
        bootstrap = peer.bootstrap
        started = time.perf_counter()
        batches = peers.make_batches(args.records, args.record_size)
        load_kstream(cluster, INPUT, batches, args.partitions)
        loaded_kstream = time.perf_counter()
        load_kafka(bootstrap, INPUT, batches, args.partitions)
        small = peers.make_batches(args.latency_records, args.record_size, args.latency_batch * args.record_size)
        load_kstream(cluster, SMALL, small, args.partitions)
        load_kafka(bootstrap, SMALL, small, args.partitions)
        print(f"loaded {args.records:,} records: kstream {loaded_kstream - started:.1f} s, "
              f"Kafka {time.perf_counter() - loaded_kstream:.1f} s", file=sys.stderr)

        import pyspark
        results["pyspark"] = pyspark.__version__
        builder = SparkSession.builder
        if args.jfr:
            builder = builder.config("spark.driver.extraJavaOptions",
                                     f"-XX:StartFlightRecording=filename={os.path.abspath(args.jfr)},settings=profile")
        if args.kafka_v2:  # Spark's default list, less kafka
            builder = builder.config("spark.sql.sources.useV1SourceList", "avro,csv,json,orc,parquet,text")
        spark = (builder.master("local[2]").appName("spark-vs-kafka")
                 .config("spark.jars", ",".join([kstream_jar, *connector]))
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.shuffle.partitions", "2").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        bench = Bench(spark, cluster, bootstrap, root, args)
        for side, topic in ((KSTREAM, INPUT), (KAFKA, INPUT), (KSTREAM, SMALL), (KAFKA, SMALL)):
            count = bench.read(side, topic).count()
            expected = args.records if topic == INPUT else args.latency_records
            if count != expected:
                raise SystemExit(f"bench.spark_vs_kafka: {side} holds {count} records in {topic}, not {expected}")
        plan = bench.read(KAFKA, INPUT)._jdf.queryExecution().executedPlan().toString()
        results["kafka_scan"] = "KafkaScan (V2)" if "BatchScan" in plan else "KafkaRelation (V1)"
        if ("BatchScan" in plan) != args.kafka_v2:
            raise SystemExit(f"bench.spark_vs_kafka: format('kafka') reads through {results['kafka_scan']}:\n{plan}")
        if "read" in parts:
            results["batch_read"] = bench.batch_read()
        if "etl" in parts:
            results["streaming_etl"] = bench.etl_runs(INPUT, args.max_offsets_per_trigger, args.records)
        if "latency" in parts:
            results["micro_batch"] = bench.etl_runs(SMALL, args.latency_batch, args.latency_records)
        spark.stop()
    finally:
        peer.stop()
        shutil.rmtree(root, ignore_errors=True)
    os.makedirs(args.out, exist_ok=True)
    name = ("spark_vs_kafka" + (f"_flush{args.flush_messages}" if args.flush_messages else "")
            + ("_kafka_v2" if args.kafka_v2 else "") + ".json")
    with open(os.path.join(args.out, name), "w") as f:
        json.dump(results, f, indent=1)
    report(results)


class Bench:
    """The measured paths over one session, one kstream cluster and one broker."""

    def __init__(self, spark: Any, cluster: str, bootstrap: str, root: str, args: argparse.Namespace) -> None:
        self.spark, self.cluster, self.bootstrap, self.root, self.args = spark, cluster, bootstrap, root, args
        self.runs = 0

    def read(self, side: str, topic: str) -> Any:
        if side == KSTREAM:
            return (self.spark.read.format("kstream").option("cluster", self.cluster).option("reader", "jvm")
                    .option("subscribe", topic).load())
        return (self.spark.read.format("kafka").option("kafka.bootstrap.servers", self.bootstrap)
                .option("subscribe", topic).load())

    def batch_read(self) -> dict[str, Any]:
        def noop(side: str) -> None:
            self.read(side, INPUT).write.format("noop").mode("overwrite").save()

        runs: dict[str, list[float]] = {KSTREAM: [], KAFKA: []}
        for side in runs:  # warm-up: JIT, page cache, connections
            noop(side)
        for _ in range(self.args.repeats):
            for side in runs:
                runs[side].append(timed(lambda side=side: noop(side)))
                print(f"batch read {side}: {runs[side][-1]:.2f} s", file=sys.stderr)
        rows = {side: summary(seconds, self.args.records) for side, seconds in runs.items()}
        return {"rows": rows, "ratio": rows[KSTREAM]["records_per_s"] / rows[KAFKA]["records_per_s"]}

    def etl(self, side: str, topic: str, per_trigger: int) -> dict[str, Any]:
        """One availableNow query topic -> a new topic; its wall time, micro-batches and output count."""
        self.runs += 1
        out = f"etl-{self.runs}"
        checkpoint = os.path.join(self.root, f"cp-{self.runs}")
        if side == KSTREAM:
            with Admin({"cluster": self.cluster}) as admin:
                admin.create_topics([NewTopic(out, self.args.partitions)])[out].result()
            stream = (self.spark.readStream.format("kstream").option("cluster", self.cluster)
                      .option("reader", "jvm").option("subscribe", topic))
        else:
            create_topic(self.bootstrap, out, partitions=self.args.partitions)
            stream = (self.spark.readStream.format("kafka").option("kafka.bootstrap.servers", self.bootstrap)
                      .option("subscribe", topic))
        frame = (stream.option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", per_trigger).load()
                 .selectExpr("key", "value"))
        writer = frame.writeStream.option("topic", out).option("checkpointLocation", checkpoint)
        writer = (writer.format("kstream").option("cluster", self.cluster) if side == KSTREAM
                  else writer.format("kafka").option("kafka.bootstrap.servers", self.bootstrap))
        started = time.perf_counter()
        query = writer.trigger(availableNow=True).start()
        query.awaitTermination()
        seconds = time.perf_counter() - started
        if query.exception() is not None:
            raise SystemExit(f"bench.spark_vs_kafka: the {side} ETL failed: {query.exception()}")
        batches = [p for p in query.recentProgress if p["numInputRows"]]
        records = sum(p["numInputRows"] for p in batches)
        written = self.read(side, out).count()
        if side == KSTREAM:
            with Admin({"cluster": self.cluster}) as admin:
                admin.delete_topics([out])[out].result()
        else:
            from confluent_kafka.admin import AdminClient

            admin = AdminClient({"bootstrap.servers": self.bootstrap})  # kept alive until the answer
            admin.delete_topics([out])[out].result()
        shutil.rmtree(checkpoint, ignore_errors=True)
        return {"seconds": seconds, "records": records, "written": written, "micro_batches": len(batches),
                "batch_ms": [p["durationMs"]["triggerExecution"] for p in batches],
                "phases_ms": [p["durationMs"] for p in batches]}

    def etl_runs(self, topic: str, per_trigger: int, expected: int) -> dict[str, Any]:
        runs: dict[str, list[dict[str, Any]]] = {KSTREAM: [], KAFKA: []}
        for side in runs:  # warm-up
            self.etl(side, topic, per_trigger)
        for _ in range(self.args.repeats):
            for side in runs:
                run = self.etl(side, topic, per_trigger)
                if run["records"] != expected or run["written"] < expected:
                    raise SystemExit(f"bench.spark_vs_kafka: the {side} ETL read {run['records']} and wrote "
                                     f"{run['written']} records, expected {expected}")
                runs[side].append(run)
                print(f"{topic} ETL {side}: {run['seconds']:.2f} s, {run['micro_batches']} micro-batches",
                      file=sys.stderr)
        rows = {}
        for side, side_runs in runs.items():
            row = summary([r["seconds"] for r in side_runs], expected)
            later = sorted(ms for r in side_runs for ms in r["batch_ms"][1:])  # the first has the start-up
            row.update({"micro_batches": side_runs[0]["micro_batches"],
                        "written": [r["written"] for r in side_runs],
                        "batch_ms_p50": later[len(later) // 2] if later else None,
                        "batch_ms_p90": later[int(len(later) * 0.9)] if later else None,
                        "first_batch_ms_median": statistics.median(r["batch_ms"][0] for r in side_runs),
                        "phases_ms_p50": phases(side_runs)})
            rows[side] = row
        return {"per_trigger": per_trigger, "rows": rows,
                "ratio": rows[KSTREAM]["records_per_s"] / rows[KAFKA]["records_per_s"]}


def phases(runs: list[dict[str, Any]]) -> dict[str, float]:
    """The median of each phase Spark times in a micro-batch (addBatch: the sink's write and commit;
    latestOffset, getBatch, queryPlanning, walCommit, commitOffsets), the first batches left out."""
    later = [phase for run in runs for phase in run["phases_ms"][1:]]
    keys = sorted({key for phase in later for key in phase if key != "triggerExecution"})
    return {key: statistics.median(phase.get(key, 0) for phase in later) for key in keys} if later else {}


def report(results: dict[str, Any]) -> None:
    durability = (f"Kafka flush.messages={results['flush_messages']}" if results["flush_messages"]
                  else "Kafka's default durability (page cache)")
    print(f"# {results['records']:,} records of {results['record_size']} B, {results['partitions']} partitions, "
          f"median of {results['repeats']}; Kafka {results['kafka']}, connector {results['connector']}, "
          f"pyspark {results.get('pyspark')}; {durability}"
          + f"; format('kafka') batch reads through {results.get('kafka_scan')}")
    if "batch_read" in results:
        print("\n| batch read -> noop | records/s | runs (s) |\n|---|---|---|")
        for side, row in results["batch_read"]["rows"].items():
            print(f"| {side} | {row['records_per_s']:,.0f} | {', '.join(f'{s:.2f}' for s in row['runs_s'])} |")
        print(f"kstream / connector: {results['batch_read']['ratio']:.2f} (goal >= 2)")
    for key, title in (("streaming_etl", "streaming ETL, availableNow"), ("micro_batch", "micro-batches")):
        if key not in results:
            continue
        part = results[key]
        print(f"\n| {title}, {part['per_trigger']:,} records a trigger | records/s | runs (s) | micro-batches "
              f"| batch p50 / p90 (ms) | first batch (ms) |\n|---|---|---|---|---|---|")
        for side, row in part["rows"].items():
            print(f"| {side} | {row['records_per_s']:,.0f} | {', '.join(f'{s:.2f}' for s in row['runs_s'])} "
                  f"| {row['micro_batches']} | {row['batch_ms_p50']} / {row['batch_ms_p90']} "
                  f"| {row['first_batch_ms_median']:.0f} |")
        print(f"kstream / connector: {part['ratio']:.2f}" + (" (goal >= 1.0)" if key == "streaming_etl" else ""))
        for side, row in part["rows"].items():
            print(f"  {side}, micro-batch phases p50 (ms): "
                  + ", ".join(f"{k} {v:.0f}" for k, v in row["phases_ms_p50"].items()))


if __name__ == "__main__":
    main()

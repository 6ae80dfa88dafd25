"""Real-time Mode kstream -> Spark -> kstream latency: produce() return -> a read_committed
consumer of the output topic seeing the record (issue 22).

    flock /tmp/kstream-spark.lock flock /tmp/kstream-bench.lock \\
      python -m bench.rtm_sink_latency --rates 1000,10000 --seconds 15 --rounds 3 --linger-ms 1

One local[2] session with the kstream jar; per run new topics ``in-N`` and ``out-N``
(``--partitions`` each) and a Real-time Mode query (``kstream.write_real_time``: the JVM
KStreamForeachWriter, ``--sink-acks``, ``--sink-linger-ms``) from ``in-N`` to ``out-N``. A
kstream Consumer (read_committed, its own process) reads ``out-N`` and logs "sequence seen_ns";
the producer (kstream Producer, ``--acks``, ``--linger-ms``) sends ``--rate`` records/s for
``--seconds``, noting the wall clock when each produce() returned. Prints p50/p90/p99/max of
(seen - produced) in ms per run, leaving out the first ``--warmup`` seconds, the records missing
and the duplicates (a record seen twice), then the medians over ``--rounds`` per rate.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from pyspark.sql import SparkSession

from bench.rtm_latency import PACINGS, percentile, produce_paced
from kstream import Admin, NewTopic, Producer, with_source_position, write_real_time
from kstream.jars import jar_path, with_jar

# The output topic's reader: its own process (its polling never shares the producer's GIL).
CONSUMER = """
import sys, time
from kstream import Consumer, TopicPartition
cluster, topic, partitions, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
consumer = Consumer({"cluster": cluster, "isolation.level": "read_committed", "fetch.wait.max.ms": 1})
consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
with open(path, "a", encoding="ascii") as out:
    while True:
        message = consumer.poll(0.05)
        if message is None:
            continue
        out.write(f"{message.value().decode('ascii')} {time.time_ns()}\\n")
        out.flush()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="1000,10000", help="records per second, comma-separated")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--acks", default="all", help="the input producer's acks")
    parser.add_argument("--linger-ms", type=int, default=1, help="the input producer's linger.ms")
    parser.add_argument("--pacing", choices=PACINGS, default="sleep",
                        help="how the producer loop waits for each record's due time (bench.rtm_latency.produce_paced)")
    parser.add_argument("--sink-acks", default="all")
    parser.add_argument("--sink-linger-ms", type=int, default=0)
    parser.add_argument("--batch", default="5 minutes", help="the realTime trigger's batch duration")
    args = parser.parse_args()
    if jar_path() is None:
        raise SystemExit("no kstream jar: run make install (needs javac and mvn)")
    work = tempfile.mkdtemp(prefix="kstream-rtm-sink-")
    cluster = os.path.join(work, "cluster")
    Admin({"cluster": cluster}).close()
    spark = (with_jar(SparkSession.builder).master("local[2]").appName("kstream-rtm-sink-latency")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    results: dict[int, list[dict[str, float]]] = {}
    try:
        run = 0
        for _ in range(args.rounds):
            for rate in [int(r) for r in args.rates.split(",")]:
                run += 1
                result = one_run(spark, cluster, work, run, rate, args)
                results.setdefault(rate, []).append(result)
                print(f"rate {rate}/s: {result['measured']:.0f} measured, {result['missing']:.0f} missing, "
                      f"{result['duplicates']:.0f} duplicates, achieved {result['achieved']:.0f}/s; ms p50 "
                      f"{result['p50']:.2f}  p90 {result['p90']:.2f}  p99 {result['p99']:.2f}  max {result['max']:.2f}",
                      flush=True)
    finally:
        spark.sparkContext.setLogLevel("OFF")
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{args.seconds:.0f} s per run (first {args.warmup:.0f} s left out), {args.partitions} partition(s), "
          f"producer acks={args.acks} linger.ms={args.linger_ms} pacing={args.pacing}, sink acks={args.sink_acks} "
          f"linger.ms={args.sink_linger_ms}, batch {args.batch}; medians over {args.rounds} round(s)")
    print("| rate | p50 ms | p90 ms | p99 ms | max ms | p99 of each run | missing, duplicates |")
    print("|---|---|---|---|---|---|---|")
    for rate, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in ("p50", "p90", "p99", "max")}
        p99s = ", ".join(f"{r['p99']:.2f}" for r in runs)
        lost = sum(r["missing"] for r in runs)
        dups = sum(r["duplicates"] for r in runs)
        print(f"| {rate:,}/s | {med['p50']:.2f} | {med['p90']:.2f} | {med['p99']:.2f} | {med['max']:.2f} | {p99s} "
              f"| {lost:.0f}, {dups:.0f} |")


def one_run(spark: Any, cluster: str, work: str, run: int, rate: int, args: argparse.Namespace) -> dict[str, float]:
    source, target = f"in-{run}", f"out-{run}"
    with Admin({"cluster": cluster}) as admin:
        for name in (source, target):
            admin.create_topics([NewTopic(name, args.partitions, 1)])[name].result()
    seen_path = os.path.join(work, f"seen-{run}.txt")
    consumer = subprocess.Popen([sys.executable, "-c", CONSUMER, cluster, target, str(args.partitions), seen_path])
    frame = (spark.readStream.format("kstream").option("cluster", cluster).option("subscribe", source)
             .option("reader", "jvm").option("startingOffsets", "latest").load())
    query = write_real_time(with_source_position(frame).select("value", "source_topic", "source_partition",
                                                                 "source_offset"),
                            cluster=cluster, topic=target, checkpoint=os.path.join(work, f"ck-{run}"),
                            trigger=args.batch, acks=args.sink_acks, linger_ms=args.sink_linger_ms)
    producer = Producer({"cluster": cluster, "linger.ms": args.linger_ms, "acks": args.acks})
    produced: dict[int, int] = {}
    try:
        deadline = time.time() + 90
        probe = 0
        while not _seen(seen_path) and time.time() < deadline:  # the query reads from the log end
            if query.exception() is not None:
                raise SystemExit(f"the query failed: {query.exception()}")
            probe -= 1
            producer.produce(source, str(probe).encode())
            producer.poll(0)
            time.sleep(0.2)
        if not _seen(seen_path):
            raise SystemExit(f"no record reached {target} in 90 s: {query.exception()}")
        achieved = produce_paced(producer, source, rate, args.seconds, produced, args.pacing)
        producer.flush()
        settle = time.time() + 20
        while sum(1 for s in _seen(seen_path) if s >= 0) < len(produced) and time.time() < settle:
            time.sleep(0.5)
        time.sleep(1.0)  # a duplicate, if any, lands right behind its original
    finally:
        producer.close()
        spark.sparkContext.setLogLevel("OFF")
        query.stop()
        spark.sparkContext.setLogLevel("ERROR")
        consumer.kill()
        consumer.wait()
    seen = _seen(seen_path)
    counts = _counts(seen_path)
    warm = int(rate * args.warmup)
    latencies = sorted((seen[s] - t) / 1e6 for s, t in produced.items() if s >= warm and s in seen)
    if not latencies:
        raise SystemExit(f"no record produced after the warm-up was seen: {query.exception()}")
    return {"measured": len(latencies), "missing": sum(1 for s in produced if s not in seen),
            "duplicates": sum(c - 1 for s, c in counts.items() if s >= 0 and c > 1),
            "achieved": achieved, "p50": percentile(latencies, 0.5), "p90": percentile(latencies, 0.9),
            "p99": percentile(latencies, 0.99), "max": latencies[-1]}


def _seen(path: str) -> dict[int, int]:
    seen: dict[int, int] = {}
    if os.path.exists(path):
        with open(path, encoding="ascii") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2:
                    seen.setdefault(int(parts[0]), int(parts[1]))
    return seen


def _counts(path: str) -> dict[int, int]:
    counts: dict[int, int] = {}
    with open(path, encoding="ascii") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                counts[int(parts[0])] = counts.get(int(parts[0]), 0) + 1
    return counts


if __name__ == "__main__":
    main()

"""The Spark JVM batch read of two checkouts side by side: issue 27's speed goal for the Spark read.

    python -m bench.spark_read_pair --before /path/to/old --after /path/to/new \
        [--records 2000000] [--rounds 5] [--out bench-out/side_by_side.jsonl]

One topic (``--records`` records of 100 B, 6 partitions) is written once by the ``--after`` tree
(the on-disk format is the same in both). Then, for ``--rounds`` rounds, before then after, each
checkout reads it in a process of its OWN (a Spark JVM cannot swap jars) with
``PYTHONPATH=<tree>/src`` and ``spark.jars=<tree>/src/kstream/jars/kstream-spark.jar``:
``spark.read.format("kstream").option("reader", "jvm")`` into the noop sink, once to warm up (JIT,
page cache), then once timed. Each timed read is appended to ``--out`` as one JSON line in
bench/side_by_side.sh's shape (``{"tree", "round", "what", "r": {"records_per_s", ...}}``), so
that script's table gains the row; the medians and after ÷ before are also printed here.

A checkout without its jar stops the run before anything is written (build it inside the checkout
with ``bash jvm/build.sh /path/to/venv/bin/python``). Starts Spark: run under
``flock /tmp/kstream-spark.lock`` where other Spark jobs share the machine.

Nothing here imports kstream in the parent process: the writer and the readers are children, each
with its tree's ``src`` first on the path, and each child checks that the kstream it imported is
that tree's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

WHAT = "spark batch read (reader=jvm)"
TOPIC = "t"
PARTITIONS = 6
RECORD_SIZE = 100
JAR = os.path.join("src", "kstream", "jars", "kstream-spark.jar")


def _check_kstream(tree: str) -> None:
    """Stop when the imported kstream is not ``tree``'s (a .pth or cwd shadowing PYTHONPATH)."""
    import kstream

    src = os.path.realpath(os.path.join(tree, "src"))
    if not os.path.realpath(kstream.__file__).startswith(src + os.sep):
        raise SystemExit(f"spark_read_pair: imported kstream from {kstream.__file__}, not from {src}")


def _write(tree: str, cluster: str, records: int) -> None:
    """Child: the topic, written through ``tree``'s Producer.produce_batch (acks=1)."""
    _check_kstream(tree)
    from kstream import Admin, NewTopic, Producer

    try:
        from kstream.tools.perf.ceiling import make_batches
    except ImportError:  # the layout before issue 27
        from kstream.perf.ceiling import make_batches  # type: ignore[no-redef]
    with Admin({"cluster": cluster}) as admin:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS)])[TOPIC].result()
    with Producer({"cluster": cluster, "acks": "1"}) as producer:
        for batch in make_batches(records, RECORD_SIZE):
            producer.produce_batch(TOPIC, batch)
        producer.flush()


def _read(tree: str, cluster: str, records: int) -> None:
    """Child: one warm-up read and one timed read with the JVM reader; prints one JSON line."""
    import time

    _check_kstream(tree)
    jar = os.path.join(tree, JAR)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").config("spark.jars", jar).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        def frame():  # type: ignore[no-untyped-def]
            return (spark.read.format("kstream").option("cluster", cluster).option("reader", "jvm")
                    .option("subscribe", TOPIC).load())

        count = frame().count()  # also the warm-up's first pass: the right topic, the whole of it
        if count != records:
            raise SystemExit(f"spark_read_pair: {tree} read {count} records, expected {records}")
        frame().write.format("noop").mode("overwrite").save()  # warm-up, the timed read's own shape
        start = time.perf_counter()
        frame().write.format("noop").mode("overwrite").save()
        seconds = time.perf_counter() - start
    finally:
        spark.stop()
    print(json.dumps({"records": records, "seconds": seconds, "records_per_s": records / seconds, "jar": jar}))


def _child(mode: str, tree: str, cluster: str, records: int) -> dict | None:  # type: ignore[type-arg]
    env = dict(os.environ, PYTHONPATH=os.path.join(tree, "src"), PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable)
    # Run this file by path from the tree's root: no other checkout's bench/ or src/ on the path.
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), f"--{mode}", tree, cluster, str(records)],
                          cwd=tree, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"spark_read_pair: {mode} in {tree} failed (exit {proc.returncode})")
    if mode != "read":
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] in ("--write", "--read"):
        (_write if sys.argv[1] == "--write" else _read)(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the old checkout")
    parser.add_argument("--after", required=True, help="the new checkout (also writes the topic)")
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default="bench-out/side_by_side.jsonl", help="JSON lines, appended to")
    args = parser.parse_args()
    trees = {"before": os.path.abspath(args.before), "after": os.path.abspath(args.after)}
    missing = [f"{name}: {os.path.join(tree, JAR)} (build it: cd {tree} && bash jvm/build.sh {sys.executable})"
               for name, tree in trees.items() if not os.path.isfile(os.path.join(tree, JAR))]
    if missing:
        raise SystemExit("spark_read_pair: no JVM jar for\n  " + "\n  ".join(missing))
    root = tempfile.mkdtemp(prefix="kstream-spark-pair-", dir=os.environ.get("KSTREAM_BENCH_DIR", "/tmp"))
    cluster = os.path.join(root, "cluster")
    runs: dict[str, list[float]] = {name: [] for name in trees}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    try:
        _child("write", trees["after"], cluster, args.records)
        for round_ in range(1, args.rounds + 1):
            for name, tree in trees.items():
                result = _child("read", tree, cluster, args.records)
                assert result is not None
                runs[name].append(result["records_per_s"])
                with open(args.out, "a") as out:
                    out.write(json.dumps({"tree": name, "round": round_, "what": WHAT, "r": result}) + "\n")
                print(f"round {round_} {name}: {result['seconds']:.2f} s, {result['records_per_s'] / 1e6:.2f} M/s",
                      file=sys.stderr)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    before, after = statistics.median(runs["before"]), statistics.median(runs["after"])
    print(f"| {WHAT} | {before / 1e6:.2f} M | {after / 1e6:.2f} M | {after / before:.2f} |")


if __name__ == "__main__":
    main()

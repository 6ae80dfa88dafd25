"""The JVM stream writer's steps per micro-batch, timed one by one outside Spark (issue 22's profile,
docs/BENCHMARKS.md "Issue 22: where the JVM writer's time goes").

    python -m bench.sink_step_costs [--partitions 6] [--tasks 6] [--rows 167] [--batches 60] [--runs 2]

Makes a kstream cluster with one topic of ``--partitions`` partitions in a temporary folder, compiles
bench/java/SinkStepCosts.java against the kstream jar and pyspark's jars, and runs it ``--runs``
times with SQLite opened and closed per task attempt and per commit (``fresh``, the writer before
``MetadataDbPool``) and with pooled connections (``pooled``, the writer now), the two alternating.
Each run: ``--batches`` micro-batches of ``--tasks`` task attempts one after the other (one frame of
``--rows`` 100-byte records each, to partition (batch x tasks + task) mod partitions) and a commit.
Run under ``flock /tmp/kstream-bench.lock`` (it fsyncs: figures move with the disk's load).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import pyspark

from kstream import Admin, NewTopic
from kstream.jars import jar_path

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "java", "SinkStepCosts.java")
JAVA_OPTIONS = ["--add-opens=java.base/java.nio=ALL-UNNAMED"]  # Arrow's memory on Java 17
RUN_TIMEOUT_S = 600


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--tasks", type=int, default=6)
    parser.add_argument("--rows", type=int, default=167)
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--runs", type=int, default=2, help="of each side, alternating")
    args = parser.parse_args()
    jar = jar_path()
    if jar is None:
        raise SystemExit("bench.sink_step_costs: no kstream JVM jar: run `make jar` (jvm/build.sh)")
    classpath = os.pathsep.join([jar, os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")])
    work = tempfile.mkdtemp(prefix="kstream-sink-steps-", dir=os.environ.get("KSTREAM_BENCH_DIR", "/tmp"))
    try:
        cluster = os.path.join(work, "cluster")
        with Admin({"cluster": cluster}) as admin:
            admin.create_topics([NewTopic("out", args.partitions)])["out"].result()
        classes = os.path.join(work, "classes")
        subprocess.run(["javac", "-nowarn", "-d", classes, "-cp", classpath, SOURCE], check=True)
        for run in range(args.runs):
            for pooled in (False, True):
                print(f"== run {run + 1}, {'pooled' if pooled else 'fresh'}", flush=True)
                subprocess.run(["java", f"-Dpooled={str(pooled).lower()}", *JAVA_OPTIONS,
                                "-cp", os.pathsep.join([classes, classpath]), "io.kstream.spark.txn.SinkStepCosts",
                                cluster, "out", str(args.partitions), str(args.tasks), str(args.rows),
                                str(args.batches)], check=True, timeout=RUN_TIMEOUT_S, stderr=subprocess.DEVNULL)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

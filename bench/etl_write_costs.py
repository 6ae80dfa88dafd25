"""The JVM stream writer's micro-batch of the streaming ETL, timed outside Spark (issue 22,
docs/BENCHMARKS.md "Issue 22: streaming ETL through the JVM writer").

    python -m bench.etl_write_costs [--partitions 6] [--tasks 6] [--rows 33334] [--batches 20]
        [--threads 2] [--runs 1] [--jar JAR ...] [--jfr FILE] [--jfr-settings profile|FILE.jfc]

Makes a kstream cluster with one topic of ``--partitions`` partitions and a checkpoint folder with
Spark's ``metadata`` file in a temporary folder, compiles bench/java/EtlWriteCosts.java against the
kstream jar and pyspark's jars, and runs it ``--runs`` times: ``--batches`` micro-batches of
``--tasks`` task attempts (``--threads`` at a time, as Spark's ``local[2]``), each writing ``--rows``
rows (no key, a 100-byte value: ``bench.stream_writers``'s ETL at 200,000 records a trigger) through
``JvmStreamingWrite``'s writer factory, then the driver's ``JvmStreamingWrite.commit``. Prints each
step's p50 and mean in ms. ``--jfr FILE`` records the child JVM with Java Flight Recorder.
Run under ``flock /tmp/kstream-bench.lock`` (it fsyncs: figures move with the disk's load).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid

import pyspark

from kstream import Admin, NewTopic
from kstream.jars import jar_path

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "java", "EtlWriteCosts.java")
JAVA_OPTIONS = ["--add-opens=java.base/java.nio=ALL-UNNAMED", "-Xmx2g"]  # Arrow's memory on Java 17
RUN_TIMEOUT_S = 600


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--tasks", type=int, default=6)
    parser.add_argument("--rows", type=int, default=33_334)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--jfr", metavar="FILE", help="record the child JVM with Java Flight Recorder into FILE")
    parser.add_argument("--jfr-settings", default="profile", help="JFR settings: profile, default or a .jfc file")
    parser.add_argument("--jar", action="append", help="a kstream jar to time (repeatable: the jars alternate in "
                        "every run); default: the installed one")
    args = parser.parse_args()
    jars = args.jar or [jar_path()]
    if None in jars:
        raise SystemExit("bench.etl_write_costs: no kstream JVM jar: run `make jar` (jvm/build.sh)")
    spark_jars = os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")
    work = tempfile.mkdtemp(prefix="kstream-etl-write-", dir=os.environ.get("KSTREAM_BENCH_DIR", "/tmp"))
    try:
        classes = os.path.join(work, "classes")
        subprocess.run(["javac", "-nowarn", "-d", classes, "-cp", os.pathsep.join([str(jars[0]), spark_jars]), SOURCE],
                       check=True)
        for run, jar in ((r, j) for r in range(args.runs) for j in jars):
            classpath = os.pathsep.join([str(jar), spark_jars])
            name = f"{run}-{jars.index(jar)}"
            cluster = os.path.join(work, f"cluster{name}")
            with Admin({"cluster": cluster}) as admin:
                admin.create_topics([NewTopic("out", args.partitions)])["out"].result()
            checkpoint = os.path.join(work, f"checkpoint{name}")
            os.makedirs(checkpoint)
            with open(os.path.join(checkpoint, "metadata"), "w") as f:
                f.write(json.dumps({"id": str(uuid.uuid4())}) + "\n")
            jfr = []
            if args.jfr:
                jfr = [f"-XX:StartFlightRecording=filename={os.path.abspath(args.jfr)},settings={args.jfr_settings}"]
            print(f"== run {run + 1}, {jar}", flush=True)
            subprocess.run(["java", *JAVA_OPTIONS, *jfr, "-cp", os.pathsep.join([classes, classpath]),
                            "io.kstream.spark.write.EtlWriteCosts", cluster, "out", str(args.tasks), str(args.rows),
                            str(args.batches), str(args.threads), checkpoint],
                           check=True, timeout=RUN_TIMEOUT_S)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

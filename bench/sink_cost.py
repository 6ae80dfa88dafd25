"""The Spark sink's own work per micro-batch, without Spark (issue 21, BENCHMARKS.md "Issue 21", (d)).

    python -m bench.sink_cost [--batches 20] [--tasks 6] [--records 1000] [--partitions 6]

Per micro-batch: ``--tasks`` task writes (``KStreamStreamWriter.write``, as Spark's tasks call
it, each of ``--records / --tasks`` 100-byte values; with no key each lands in one partition, as
the ETL's tasks do) and the driver's commit (``KStreamStreamWriter.commit``, exactly once: a
checkpoint). Prints the medians, the first two micro-batches left out. Run it in two trees
alternately, under ``flock /tmp/kstream-bench.lock``, to compare them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid

import pyarrow as pa

from kstream import Admin, NewTopic
from kstream.sink.writer import KStreamStreamWriter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--tasks", type=int, default=6)
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=6)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="kstream-sink-cost-", dir=os.environ.get("KSTREAM_BENCH_DIR", "/tmp"))
    cluster = os.path.join(work, "cluster")
    with Admin({"cluster": cluster}) as admin:
        admin.create_topics([NewTopic("out", args.partitions)])["out"].result()
    checkpoint = os.path.join(work, "checkpoint")
    os.makedirs(checkpoint)
    with open(os.path.join(checkpoint, "metadata"), "w") as f:  # as Spark starts a query's checkpoint
        f.write(json.dumps({"id": str(uuid.uuid4())}) + "\n")
    options = {"cluster": cluster, "topic": "out", "checkpointLocation": checkpoint}
    writer = KStreamStreamWriter(options)
    rows = pa.RecordBatch.from_pydict({"value": [b"x" * 100] * (args.records // args.tasks)})
    tasks, commits = [], []
    for batch_id in range(args.batches + 2):
        started = time.perf_counter()
        messages = [writer.write(iter([rows])) for _ in range(args.tasks)]
        written = time.perf_counter()
        KStreamStreamWriter(options).commit(messages, batch_id)  # Spark makes a writer per commit
        if batch_id >= 2:
            tasks.append((written - started) * 1000)
            commits.append((time.perf_counter() - written) * 1000)
    print(f"{args.tasks} task writes {statistics.median(tasks):.1f} ms, commit {statistics.median(commits):.1f} ms "
          f"(medians of {args.batches} micro-batches of {args.records} records)")


if __name__ == "__main__":
    main()

"""What every benchmark script shares: a warmed scratch dir, clusters to measure, timing rows,
medians, output.

A *row* is one measurement: name, records, seconds, records/s, MB/s of values
(plus anything a script adds). Scripts run named *sections*, each a function
of the scratch dir returning rows; ``run_sections`` runs the ones asked for,
writes OUT/<name>.json and prints a Markdown table.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from kstream import Admin, NewTopic, Producer

Row = dict[str, Any]


def warm_memory(directory: str, gigabytes: float) -> None:
    """Touch fresh memory once: on this VM the first write into never-used page
    cache runs ~10x slower than later ones, which would penalise whoever runs first."""
    path = os.path.join(directory, "warmup")
    chunk = os.urandom(1 << 20)
    with open(path, "wb") as f:
        for _ in range(int(gigabytes * 1024)):
            f.write(chunk)
    os.unlink(path)


def timed_seconds(name: str, records: int, value_size: int, seconds: float) -> Row:
    return {"name": name, "records": records, "seconds": seconds,
            "records_per_s": records / seconds, "mb_per_s": records * value_size / seconds / 1e6}


def timed(name: str, records: int, value_size: int, action: Callable[[], Any]) -> Row:
    start = time.perf_counter()
    action()
    return timed_seconds(name, records, value_size, time.perf_counter() - start)


def median(rows: list[Row]) -> Row:
    """The first row with seconds, records/s and MB/s replaced by medians; runs listed."""
    best = dict(rows[0])
    for key in ("seconds", "records_per_s", "mb_per_s"):
        best[key] = statistics.median(r[key] for r in rows)
    best["runs"] = [round(r["records_per_s"]) for r in rows]
    return best


def medians(rows: Mapping[str, list[Row]]) -> list[Row]:
    """One median row per measurement name (see :func:`median`)."""
    return [dict(median(runs), name=name) for name, runs in rows.items()]


def new_cluster(root: str, name: str, topics: dict[str, int]) -> str:
    path = os.path.join(root, name)
    shutil.rmtree(path, ignore_errors=True)
    with Admin({"cluster": path}) as admin:
        for topic, partitions in topics.items():
            admin.create_topics([NewTopic(topic, partitions)])[topic].result()
    return path


def produce_batches(cluster: str, topic: str, batches: list[pa.RecordBatch], acks: str) -> float:
    """Seconds from opening a producer until every batch is written (acks=all: fsynced).

    Producer.close() fsyncs what it wrote (a clean shutdown, like a Kafka broker's)
    and runs after the clock stops, as the raw no-fsync baseline never fsyncs.
    """
    start = time.perf_counter()
    producer = Producer({"cluster": cluster, "acks": acks})
    for batch in batches:
        producer.produce_batch(topic, batch)
    producer.flush()
    seconds = time.perf_counter() - start
    producer.close()
    return seconds


def markdown(rows: list[Row]) -> str:
    lines = ["| measurement | records/s (median) | MB/s | runs (records/s) |", "|---|---|---|---|"]
    for row in rows:
        if "records_per_s" in row:
            lines.append(f"| {row['name']} | {row['records_per_s']:,.0f} | {row['mb_per_s']:,.1f} | "
                         f"{', '.join(f'{r:,}' for r in row.get('runs', []))} |")
    return "\n".join(lines)


def run_sections(name: str, out: str, only: list[str], sections: Mapping[str, Callable[[str], list[Row]]]
                 ) -> list[Row]:
    """Run the chosen sections in one warmed scratch dir; save and print their rows."""
    os.makedirs(out, exist_ok=True)
    root = tempfile.mkdtemp(prefix=f"kstream-{name}-", dir=os.environ.get("KSTREAM_BENCH_DIR", "/tmp"))
    results: list[Row] = []
    try:
        warm_memory(root, 3)
        for section, run in sections.items():
            if section in only:
                results += run(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(markdown(results))
    for row in results:
        if "records_per_s" not in row:
            print(json.dumps(row))
    return results

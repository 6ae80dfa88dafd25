"""Console page times (issue 12): every page of `kstream console` on a cluster of 1,000
partitions and 50 groups, through FastAPI's TestClient and through a real uvicorn server.

    python -m bench.console_pages [--repeats 9] [--topics 20] [--partitions 50] [--groups 50]
                                  [--cluster-dir DIR] [--only testclient,uvicorn] [--out bench-out]

The cluster (built once, or reused from ``--cluster-dir`` when it already holds one):
``--topics`` topics of ``--partitions`` partitions on 3 log dirs with replication factor
2 (the first topic typed), ``RECORDS_PER_PARTITION`` records in each partition,
``--groups`` groups each committing one topic's partitions ``COMMITS_PER_GROUP`` times
(so the Delta offsets table has history for Burrow's window), and a few sampler rounds
written to ``__kstream_metrics`` (so the lag evaluation finds high watermark samples, as
in a console that has been running). The console under test runs no sampler thread:
each page's own reads are what is timed.

Each page is asked once to warm up, then ``--repeats`` times; the table shows the median
and the slowest, in milliseconds, and whether the median meets the issue's 200 ms goal.
Writes OUT/console_pages.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Callable

import pyarrow as pa

GOAL_MS = 200.0
RECORDS_PER_PARTITION = 20
COMMITS_PER_GROUP = 3
SAMPLER_ROUNDS = 2
LOG_DIRS = "logs0,logs1,logs2"
REPLICATION_FACTOR = 2
CLUSTER_NAME = "bench"


def topic_name(i: int) -> str:
    return f"t{i:02d}"


def build_cluster(path: str, topics: int, partitions: int, groups: int) -> None:
    """The cluster described in the module docstring, at ``path`` (which must not exist)."""
    from kstream import ConsumerGroups, Producer
    from kstream.admin import Admin, NewTopic
    from kstream.log.cluster.cluster import Cluster
    from kstream.tools.monitor.sampler import Sampler

    typed = pa.schema([("id", pa.int64()), ("name", pa.string())])
    with Admin({"cluster": path, "log.dirs": LOG_DIRS}) as admin:
        for i in range(topics):
            new = NewTopic(topic_name(i), partitions, REPLICATION_FACTOR, schema=typed if i == 0 else None)
            admin.create_topics([new])[new.topic].result()
    with Producer({"cluster": path, "acks": "1", "linger.ms": 0}) as producer:
        for i in range(topics):
            if i == 0:
                batch = pa.table({"id": list(range(RECORDS_PER_PARTITION)),
                                  "name": [f"n{j}" for j in range(RECORDS_PER_PARTITION)]})
            else:
                batch = pa.table({"value": [b"x" * 100] * RECORDS_PER_PARTITION})
            for p in range(partitions):
                producer.produce_batch(topic_name(i), batch, partition=p)
    sampler = Sampler(path, 60.0, write=True)
    service = ConsumerGroups(Cluster.open(path))
    try:
        for round_number in range(COMMITS_PER_GROUP):
            if round_number < SAMPLER_ROUNDS:
                sampler.sample()
            for g in range(groups):
                offsets = {(topic_name(g % topics), p): min(RECORDS_PER_PARTITION, 5 * (round_number + 1) + g % 3)
                           for p in range(partitions)}
                service.commit(f"g{g:02d}", offsets)
    finally:
        service.close()
        service.cluster.close()
        sampler.stop()


def pages(topics: int, groups: int) -> dict[str, str]:
    """Page name -> URL (GET) on the bench cluster."""
    c = f"/c/{CLUSTER_NAME}"
    return {"clusters": "/", "overview": c, "topics": f"{c}/topics", "topic": f"{c}/topics/{topic_name(1)}",
            "topic (typed)": f"{c}/topics/{topic_name(0)}",
            "messages": f"{c}/topics/{topic_name(1)}/messages?partition=3",
            "groups": f"{c}/groups", "group": f"{c}/groups/g{groups // 2:02d}",
            "reset preview": f"{c}/groups/g01/reset?method=to-earliest&all_topics=true",
            "reassign": f"{c}/reassign", "reassign plan": f"{c}/reassign?topics={topic_name(2)}&log_dirs=1&log_dirs=2",
            "series": f"{c}/api/series?name=high_watermark&topic={topic_name(1)}&partition=0",
            "metrics": "/metrics"}


def time_pages(get: Callable[[str], tuple[int, int]], urls: dict[str, str], repeats: int, client: str
               ) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for page, url in urls.items():
        status, size = get(url)  # warm-up (imports, template compilation, page cache)
        if status != 200:
            raise SystemExit(f"{client}: GET {url} answered {status}")
        times_ms = []
        for _ in range(repeats):
            start = time.perf_counter()
            get(url)
            times_ms.append((time.perf_counter() - start) * 1000)
        median_ms = statistics.median(times_ms)
        rows.append({"client": client, "page": page, "url": url, "median_ms": round(median_ms, 1),
                     "max_ms": round(max(times_ms), 1), "bytes": size, "repeats": repeats,
                     "meets_goal": median_ms < GOAL_MS})
    return rows


def run_testclient(path: str, urls: dict[str, str], repeats: int) -> list[dict[str, object]]:
    from fastapi.testclient import TestClient

    from kstream.tools.web.app import create_app
    from kstream.tools.web.clusters import ClusterRef, check_clusters

    app = create_app(check_clusters([ClusterRef(CLUSTER_NAME, path)]))
    with TestClient(app) as client:
        def get(url: str) -> tuple[int, int]:
            response = client.get(url)
            return response.status_code, len(response.content)

        return time_pages(get, urls, repeats, "TestClient")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def run_uvicorn(path: str, urls: dict[str, str], repeats: int) -> list[dict[str, object]]:
    import httpx
    import uvicorn

    from kstream.tools.web.app import create_app
    from kstream.tools.web.clusters import ClusterRef, check_clusters

    port = free_port()
    app = create_app(check_clusters([ClusterRef(CLUSTER_NAME, path)]))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise SystemExit("uvicorn did not start within 30 s")
            time.sleep(0.05)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            def get(url: str) -> tuple[int, int]:
                response = client.get(url)
                return response.status_code, len(response.content)

            return time_pages(get, urls, repeats, "uvicorn+httpx")
    finally:
        server.should_exit = True
        thread.join(30)


def markdown(rows: list[dict[str, object]]) -> str:
    lines = ["| client | page | median ms | max ms | KiB | < 200 ms |", "|---|---|---|---|---|---|"]
    for row in rows:
        size_kib = int(row["bytes"]) / 1024  # type: ignore[call-overload]
        lines.append(f"| {row['client']} | {row['page']} | {row['median_ms']} | {row['max_ms']} | "
                     f"{size_kib:.0f} | {'yes' if row['meets_goal'] else 'NO'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, object]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=50)
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--cluster-dir", help="build the cluster here (or reuse the one already there)")
    parser.add_argument("--only", default="testclient,uvicorn")
    parser.add_argument("--out", default="bench-out")
    args = parser.parse_args(argv)
    if not 2 <= args.topics <= 100 or not 1 <= args.groups <= 1000 or not 1 <= args.repeats <= 1000:
        parser.error("--topics 2..100, --groups 1..1000, --repeats 1..1000")
    scratch = None
    path = args.cluster_dir
    if path is None:
        scratch = tempfile.mkdtemp(prefix="kstream-console-", dir=os.environ.get("KSTREAM_BENCH_DIR", "/tmp"))
        path = os.path.join(scratch, CLUSTER_NAME)
    try:
        if not os.path.isfile(os.path.join(path, "metadata.db")):
            started = time.perf_counter()
            build_cluster(path, args.topics, args.partitions, args.groups)
            print(f"built {args.topics} x {args.partitions} partitions, {args.groups} groups at {path} "
                  f"in {time.perf_counter() - started:.0f} s")
        urls = pages(args.topics, args.groups)
        rows: list[dict[str, object]] = []
        only = args.only.split(",")
        if "testclient" in only:
            rows += run_testclient(path, urls, args.repeats)
        if "uvicorn" in only:
            rows += run_uvicorn(path, urls, args.repeats)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "console_pages.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(markdown(rows))
    return rows


if __name__ == "__main__":
    main()

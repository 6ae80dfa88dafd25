"""kstream from 1 and 2 client processes, beside the machine's ceiling from 1 and 2 processes.

    python -m bench.process_scaling [--records 4000000] [--record-api-records 400000] [--repeats 3]
                                    [--apis produce:batch,consume:batch,produce:record,consume:record]

Issue 21's scaling goal (1 -> 2 processes >= 1.7x on every API) measured the way
``kstream perf produce --producers N`` / ``kstream perf consume --consumers N`` run it: a
cluster with three log dirs and a topic of 6 partitions; every client a spawned process
(1 included, so both counts pay the same start-up), started together behind a barrier. Each
repeat also runs the ceiling the same way: 1 and 2 processes each appending the same
record count of 100-byte values to its own Arrow IPC file (no fsync) in its own log dir
(:func:`kstream.tools.perf.ceiling.raw_ipc_write`). On a machine with few cores, the
ceiling's own 1 -> 2 factor says how much two processes can gain at all.

Producers write ``--records`` (batch API) or ``--record-api-records`` (per record) each,
acks=1, after a warm-up; consumers each read their share of the partitions (read_committed,
the default), which the run first fills with that many records per consumer. Prints, per
figure, the median records/s at 1 and 2 processes (repeats alternate which runs first),
their ratio and each repeat's ratio, and the CPU seconds per million records (summed over
the processes) at 1 and 2: a contended resource shows as CPU time or waiting that grows with the second process.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable

from kstream import Admin, NewTopic
from kstream.tools.perf import ceiling, parallel, runs
from kstream.tools.perf.result import PerfResult

RECORD_SIZE = 100
PARTITIONS = 6
LOG_DIRS = 3


def ceiling_write(path: str, num_records: int, start_gate: Callable[[], None]) -> PerfResult:
    """One process's raw IPC write of ``num_records`` values (a spawned client job)."""
    batches = ceiling.make_batches(num_records, RECORD_SIZE)
    start_gate()
    cpu = time.process_time()
    started = time.monotonic()
    result = ceiling.raw_ipc_write(path, batches, fsync_each_batch=False)
    result.started_at, result.ended_at = started, time.monotonic()
    result.config["cpu_s"] = time.process_time() - cpu
    os.unlink(path)
    return result


def _fresh_cluster(root: str) -> tuple[str, list[str]]:
    cluster = os.path.join(root, "cluster")
    dirs = [os.path.join(root, f"disk{i}") for i in range(LOG_DIRS)]
    for path in (cluster, *dirs):
        shutil.rmtree(path, ignore_errors=True)
    with Admin({"cluster": cluster, "log.dirs": ",".join(dirs)}) as admin:
        admin.create_topics([NewTopic("t", PARTITIONS)])["t"].result()
    return cluster, dirs


def _run(jobs: list[parallel.ClientJob]) -> PerfResult:
    return parallel.combine(parallel.run_clients(jobs))


def one_repeat(root: str, apis: list[str], records: int, record_api_records: int, order: tuple[int, ...]
               ) -> dict[str, PerfResult]:
    results: dict[str, PerfResult] = {}
    for processes in order:
        cluster, dirs = _fresh_cluster(root)
        results[f"raw IPC write (ceiling) x{processes}"] = _run(
            [(ceiling_write, {"path": os.path.join(dirs[i], "raw.arrow"), "num_records": records})
             for i in range(processes)])
        filled = 0  # records per process the topic holds for the consumers
        for api in apis:
            kind, client_api = api.split(":")
            count = records if client_api == "batch" else record_api_records
            if kind == "produce":
                job = {"topic": "t", "num_records": count, "record_size": RECORD_SIZE, "api": client_api,
                       "producer_config": {"cluster": cluster, "acks": "1"}, "warm_up": True}
                result = _run([(runs.produce, job)] * processes)
                filled = count if client_api == "batch" else 0
            else:
                if filled != count:
                    cluster, dirs = _fresh_cluster(root)
                    runs.produce("t", count * processes, RECORD_SIZE, {"cluster": cluster, "acks": "1"}, api="batch")
                    filled = count
                result = _run([(runs.consume, {"topic": "t", "num_records": None, "partitions": share,
                                               "consumer_config": {"cluster": cluster}, "api": client_api})
                               for share in parallel.split_partitions(PARTITIONS, processes)])
            results[f"{api} x{processes}"] = result
        for path in (cluster, *dirs):
            shutil.rmtree(path, ignore_errors=True)
    return results


def table(repeats: list[dict[str, PerfResult]]) -> str:
    lines = ["| figure | 1 process, records/s | 2 processes, records/s | 2 ÷ 1 | per repeat | "
             "CPU s per M records, 1 / 2 |", "|---|---|---|---|---|---|"]
    names = dict.fromkeys(name.rsplit(" x", 1)[0] for name in repeats[0])
    for name in names:
        one = [r[f"{name} x1"] for r in repeats]
        two = [r[f"{name} x2"] for r in repeats]
        rate1 = statistics.median(r.records_per_s for r in one)
        rate2 = statistics.median(r.records_per_s for r in two)
        cpu = [statistics.median(r.config.get("cpu_s", 0) / r.records * 1e6 for r in rs) for rs in (one, two)]
        lines.append(f"| {name} | {rate1:,.0f} | {rate2:,.0f} | **{rate2 / rate1:.2f}** | "
                     + ", ".join(f"{b.records_per_s / a.records_per_s:.2f}" for a, b in zip(one, two, strict=True))
                     + f" | {cpu[0]:.2f} / {cpu[1]:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=4_000_000, help="per process, batch API and ceiling")
    parser.add_argument("--record-api-records", type=int, default=400_000, help="per process, per-record API")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--apis", default="produce:batch,consume:batch,produce:record,consume:record")
    parser.add_argument("--json", help="also write every repeat's records/s and CPU seconds here")
    args = parser.parse_args(argv)
    apis = args.apis.split(",")
    repeats = []
    root = tempfile.mkdtemp(prefix="kstream-scaling-", dir=os.environ.get("KSTREAM_BENCH_DIR", "/tmp"))
    try:
        for i in range(args.repeats):
            order = (1, 2) if i % 2 == 0 else (2, 1)  # neither always runs first (fresh page cache)
            repeats.append(one_repeat(root, apis, args.records, args.record_api_records, order))
            print(f"repeat {i + 1}: " + ", ".join(f"{k} {v.records_per_s:,.0f}/s" for k, v in repeats[-1].items()),
                  flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(table(repeats))
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{k: {"records_per_s": v.records_per_s, "cpu_s": v.config.get("cpu_s"), "records": v.records}
                        for k, v in r.items()} for r in repeats], f, indent=1)


if __name__ == "__main__":
    main()

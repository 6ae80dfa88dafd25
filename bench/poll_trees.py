"""bench-check's poll() figure in several checkouts side by side: is a drop the code or the machine?

    python -m bench.poll_trees [--records 500000] [--repeats 3] [--rounds 4] [--confluent] TREE...
    (a checkout: git worktree add --detach ../before <rev>; all run with this venv)

``make bench-check`` divides kstream's ``poll()`` records/s by confluent-kafka's ``poll()`` from
librdkafka's mock cluster, in one process, right after that process produced the records
(``bench.issue2.per_record``). Its noise band is the spread of one run's repeats, which misses
how much a whole run moves with the machine's load. This script runs that same kstream side in
each TREE (its own ``src`` and ``bench``, in a process of its own, in the same order as
per_record: ``produce()`` acks=all, ``produce()`` acks=1 into a fresh 6-partition topic, then
``poll()`` of it from the beginning), the trees alternating round by round (order reversed every
other round) so all see the same load. Per tree it prints the median of every repeat's

- ``poll()`` records/s (wall clock, as the guard measures it);
- CPU microseconds per record polled (``time.process_time``, all threads of the process): less
  moved by other processes on the machine than wall time;
- with ``--confluent``, the guard's own ratio (kstream ÷ confluent ``poll()`` <- mock, repeat by
  repeat, the mock run right after kstream's as per_record does);

and each median over the first TREE's. Keep runs short on a shared machine (the defaults take
about 25 s per tree per round) and run it under ``flock /tmp/kstream-bench.lock``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

# Runs in each tree (cwd = the tree, PYTHONPATH = its src and itself), with only what every
# checkout since the guard was added has: bench.harness.new_cluster, bench.peers, kstream.tools.perf.
_CHILD = r"""
import json, os, shutil, sys, tempfile
import kstream
src = os.path.realpath(os.path.join(os.getcwd(), "src"))
if not os.path.realpath(kstream.__file__).startswith(src + os.sep):  # a .pth shadowing PYTHONPATH
    sys.exit(f"poll_trees: kstream from {kstream.__file__}, not from {src}")
from bench.harness import new_cluster
from kstream.tools import perf
records, repeats, confluent = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
out = {"records_per_s": [], "cpu_us": [], "ratio": []}
with tempfile.TemporaryDirectory() as root:
    for _ in range(repeats):
        for acks in ("all", "1"):
            cluster = new_cluster(root, "records", {"t": 6})
            perf.produce("t", records, 100, {"cluster": cluster, "acks": acks})
        result = perf.consume("t", records, {"cluster": cluster})
        if result.records != records:
            sys.exit(f"poll_trees: polled {result.records} of {records} records")
        out["records_per_s"].append(result.records_per_s)
        out["cpu_us"].append(result.config["cpu_s"] / records * 1e6)
        shutil.rmtree(cluster, ignore_errors=True)
        if confluent:
            from bench import peers
            with peers.mock_broker("bench", 128) as bootstrap:
                peers.confluent_produce(bootstrap, "bench", records, 100, acks=1, config=peers.MOCK_PRODUCER_CONFIG)
                kept = peers.topic_record_count(bootstrap, "bench")
                row = peers.confluent_consume(bootstrap, "bench", kept, config=peers.MOCK_CONSUMER_CONFIG)
            out["ratio"].append(result.records_per_s / row["records_per_s"])
print(json.dumps(out))
"""

FIGURES = (("records_per_s", "poll() records/s", "{:,.0f}"), ("cpu_us", "CPU µs per record", "{:.3f}"),
           ("ratio", "÷ confluent poll() <- mock", "{:.2f}"))


def run_tree(tree: str, records: int, repeats: int, confluent: bool) -> dict[str, list[float]]:
    """One process of ``tree``: ``repeats`` measurements (see the module docstring)."""
    done = subprocess.run([sys.executable, "-c", _CHILD, str(records), str(repeats), "1" if confluent else "0"],
                          cwd=tree, capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(tree, "src"), tree])})
    if done.returncode != 0:
        raise SystemExit(f"bench.poll_trees: the run in {tree} failed: {done.stderr.strip()[-1500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="+", help="checkouts to compare; ratios are to the first")
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--repeats", type=int, default=3, help="measurements per process, as bench-check's")
    parser.add_argument("--rounds", type=int, default=4, help="processes per tree, trees alternating")
    parser.add_argument("--confluent", action="store_true",
                        help="also the guard's ratio to confluent poll() <- mock (about 2x the time)")
    args = parser.parse_args(argv)
    if args.records < 1 or args.repeats < 1 or args.rounds < 1:
        parser.error("--records, --repeats and --rounds must be at least 1")
    trees = [os.path.abspath(tree) for tree in args.trees]
    for tree in trees:
        if not os.path.isdir(os.path.join(tree, "src", "kstream")):
            parser.error(f"{tree} is not a kstream checkout (no src/kstream)")
    results: dict[str, dict[str, list[float]]] = {tree: {key: [] for key, _, _ in FIGURES} for tree in trees}
    for round_number in range(args.rounds):
        for tree in trees if round_number % 2 == 0 else trees[::-1]:
            run = run_tree(tree, args.records, args.repeats, args.confluent)
            for key, values in run.items():
                results[tree][key] += values
            print(f"round {round_number} {tree}: " + ", ".join(
                f"{key} {[round(v, 3) for v in values]}" for key, values in run.items() if values), flush=True)
    print(f"\nmedians of {args.rounds * args.repeats} repeats per tree ({args.records:,} records), "
          f"÷ the first tree's in brackets")
    header = [label for key, label, _ in FIGURES if results[trees[0]][key]]
    print("| tree | " + " | ".join(header) + " |\n|---|" + "---|" * len(header))
    for tree in trees:
        cells = []
        for key, _, style in FIGURES:
            if not results[tree][key]:
                continue
            value = statistics.median(results[tree][key])
            cells.append(f"{style.format(value)} ({value / statistics.median(results[trees[0]][key]):.2f})")
        print(f"| {tree} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The regression guard: kstream's headline ratios now, beside the last recorded run.

    python -m bench.check [--records 500000] [--repeats 3] [--band 0.10] [--record]
    make bench-check            (not part of make test)

Runs the headline measurements of bench.issue2 at a smaller size, side by side in one run
(each repeat alternates kstream and its baseline, so both see the same machine load), turns
them into ratios that do not depend on how fast this machine is today, and compares each
with ``docs/bench-check/baseline.json``, the last recorded run:

- ``produce()`` / ``poll()`` per record vs confluent-kafka against librdkafka's mock cluster;
- ``produce_batch()`` vs the raw Arrow IPC file write at the same durability (no fsync / one
  fsync per batch), ``poll_batch()`` vs the raw copying IPC read;
- end-to-end latency p50 and p99 at 1,000 records/s, acks=all (fsynced): milliseconds, the
  one figure that is not a ratio.

The noise band of a figure is measured, not assumed: the spread (max - min) / median of its
per-repeat values (each repeat's kstream figure over the same repeat's peer figure), in this
run or in the baseline, whichever is wider, and never less than ``--band`` (default 10%).
A figure that moved by more than its band is named, better or worse; the exit status is 1
when one got worse. ``--record`` writes this run as the new baseline (do that on purpose,
after a change whose figures you have written down in docs/BENCHMARKS.md).

The band measures one run's repeats, not how far a whole run moves with the machine's load
(a third, for ``poll()``, on the shared 2-core VM): before bisecting a figure named worse, run
it side by side with the baseline's commit (``python -m bench.poll_trees`` for ``poll()``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Mapping

from bench import issue2
from bench.harness import Row, run_sections

# The recorded run, kept with the docs that cite it (docs/BENCHMARKS.md, "The regression guard").
BASELINE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "bench-check",
                        "baseline.json")

# name -> (numerator row, denominator row or None for an absolute figure, key, higher is better)
RATIOS: dict[str, tuple[str, str | None, str, bool]] = {
    "produce() acks=1 ÷ confluent produce() -> mock": (
        "kstream produce() acks=1, 6 partitions", "confluent produce() -> mock, 128 partitions",
        "records_per_s", True),
    "poll() ÷ confluent poll() <- mock": (
        "kstream poll(), 6 partitions", "confluent poll() <- mock", "records_per_s", True),
    "produce_batch() acks=1 ÷ raw IPC write, no fsync": (
        "kstream produce_batch() acks=1 (no fsync)", "raw IPC write, no fsync", "records_per_s", True),
    "produce_batch() acks=all ÷ raw IPC write, fsync per batch": (
        "kstream produce_batch() acks=all (fsync per batch)", "raw IPC write, fsync per batch",
        "records_per_s", True),
    "poll_batch() unchecked ÷ raw copying IPC read": (
        "kstream poll_batch() check.crcs=false", "raw IPC read, OSFile (every byte copied)", "records_per_s", True),
    "poll_batch() checked ÷ raw copying IPC read": (
        "kstream poll_batch() check.crcs=true", "raw IPC read, OSFile (every byte copied)", "records_per_s", True),
    "end-to-end latency p50 ms, acks=all, 1,000 records/s": (
        "end-to-end latency ms, acks=all (fsync), 1,000 records/s", None, "p50", False),
    "end-to-end latency p99 ms, acks=all, 1,000 records/s": (
        "end-to-end latency ms, acks=all (fsync), 1,000 records/s", None, "p99", False),
}


def _per_repeat(row: Row, key: str) -> list[float]:
    runs = row.get("runs", [])
    return [float(r[key]) if isinstance(r, dict) else float(r) for r in runs]


def ratios(rows: list[Row]) -> dict[str, dict]:
    """The headline figures of one run's rows: each figure's median value and its per-repeat
    values (repeat i of kstream over repeat i of its peer: they ran back to back). A figure
    whose rows are missing is left out."""
    by_name = {row["name"]: row for row in rows}
    figures: dict[str, dict] = {}
    for name, (top, bottom, key, _) in RATIOS.items():
        if top not in by_name or (bottom is not None and bottom not in by_name):
            continue
        value = float(by_name[top][key])
        repeats = _per_repeat(by_name[top], key if bottom is None else "records_per_s")
        if bottom is not None:
            value /= float(by_name[bottom][key])
            below = _per_repeat(by_name[bottom], "records_per_s")
            repeats = [a / b for a, b in zip(repeats, below, strict=False) if b]
        figures[name] = {"value": value, "repeats": repeats}
    return figures


def spread(repeats: list[float]) -> float:
    """(max - min) / median of a figure's per-repeat values; 0 with fewer than two."""
    if len(repeats) < 2:
        return 0.0
    return (max(repeats) - min(repeats)) / statistics.median(repeats)


def compare(baseline: Mapping[str, dict], now: Mapping[str, dict], band: float) -> list[dict]:
    """One line per figure: its baseline, now, the relative change, the band and a verdict."""
    lines = []
    for name, (_, _, _, higher_is_better) in RATIOS.items():
        if name not in now:
            continue
        before = baseline.get(name)
        if isinstance(before, (int, float)):  # a baseline recorded before per-repeat values were kept
            before = {"value": float(before), "repeats": []}
        line = {"name": name, "now": now[name]["value"], "baseline": before["value"] if before else None,
                "change": None, "band": None, "verdict": "new"}
        if before:
            change = line["now"] / line["baseline"] - 1.0
            allowed = max(band, spread(now[name]["repeats"]), spread(before.get("repeats", [])))
            better = change > 0 if higher_is_better else change < 0
            line.update(change=change, band=allowed,
                        verdict="within noise" if abs(change) <= allowed else "better" if better else "WORSE")
        lines.append(line)
    return lines


def table(lines: list[dict]) -> str:
    out = ["| figure | baseline | now | change | noise band | verdict |", "|---|---|---|---|---|---|"]
    for line in lines:
        baseline = f"{line['baseline']:.3g}" if line["baseline"] else "-"
        change = f"{line['change']:+.0%}" if line["change"] is not None else "-"
        band = f"±{line['band']:.0%}" if line["band"] is not None else "-"
        out.append(f"| {line['name']} | {baseline} | {line['now']:.3g} | {change} | {band} | {line['verdict']} |")
    return "\n".join(out)


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True, cwd=os.path.dirname(BASELINE)).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latency-records", type=int, default=5_000)
    parser.add_argument("--band", type=float, default=0.10,
                        help="the least noise band, relative (0.10 = ±10%%); a wider measured spread wins")
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--out", default="bench/results")
    parser.add_argument("--record", action="store_true", help="write this run as the new baseline")
    args = parser.parse_args(argv)
    if not 0 < args.band < 1:
        parser.error("--band is a fraction between 0 and 1 (0.10 is ±10%)")
    rows = run_sections("bench-check", args.out, ["records", "batches", "latency"], {
        "records": lambda root: issue2.per_record(root, args.records, args.value_size, args.repeats),
        "batches": lambda root: issue2.arrow_batches(root, args.records, args.value_size, args.repeats),
        "latency": lambda root: issue2.latency(root, args.repeats, args.latency_records),
    })
    now = ratios(rows)
    baseline: dict = {}
    if os.path.exists(args.baseline):
        with open(args.baseline) as f:
            baseline = json.load(f)
    lines = compare(baseline.get("figures", {}), now, args.band)
    print()
    if baseline:
        print(f"Against {os.path.relpath(args.baseline)}: commit {baseline.get('commit')}, "
              f"{baseline.get('date')}, `{baseline.get('command')}`")
    else:
        print(f"No baseline at {args.baseline}: run with --record to make one.")
    print(table(lines))
    if args.record:
        record = {"commit": _commit(), "date": datetime.date.today().isoformat(),
                  "command": "python -m bench.check " + " ".join(argv if argv is not None else sys.argv[1:]),
                  "records": args.records, "repeats": args.repeats, "figures": now}
        with open(args.baseline, "w") as f:
            json.dump(record, f, indent=1, ensure_ascii=False)
            f.write("\n")
        print(f"Recorded as the new baseline: {args.baseline}")
    worse = [line["name"] for line in lines if line["verdict"] == "WORSE"]
    if worse:
        print(f"\nWorse beyond the noise band: {', '.join(worse)}")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())

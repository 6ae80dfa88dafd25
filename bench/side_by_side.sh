#!/usr/bin/env bash
# Hot-path check of a change: two checkouts side by side, alternating, 5 rounds, each on a fresh
# cluster (perf produce acks=1/all and produce_batch, perf consume record/batch), then the Spark
# JVM batch read (bench/spark_read_pair.py: each checkout in its own Spark process with its own
# jar); one JSON line a run to $OUT, then one table row a measurement (medians, after ÷ before).
# Usage: BEFORE=/path/to/old/checkout AFTER=/path/to/new bench/side_by_side.sh   (or make bench-side-by-side)
# (a checkout: e.g. `git worktree add --detach ../before <rev>`; both run with this venv; the Spark
# read needs each checkout's jar: `bash jvm/build.sh $PY` inside it.) Either layout's CLI works
# (kstream.tools.cli since issue 27, kstream.cli before).
# Knobs (defaults: the full run): ROUNDS=5 N=1000000 (perf records; produce_batch writes 2N)
# SPARK_RECORDS=2000000 (SPARK_RECORDS=0: no Spark read) SPARK_LOCK=/tmp/kstream-spark.lock
# (the Spark read runs under flock on it, when flock is there).
set -u
: "${BEFORE:?BEFORE=/path/to/old/checkout}" "${AFTER:?AFTER=/path/to/new/checkout}"
OUT=${OUT:-bench-out/side_by_side.jsonl}
PY=${PY:-.venv/bin/python}
ROUNDS=${ROUNDS:-5}
N=${N:-1000000}
SPARK_RECORDS=${SPARK_RECORDS:-2000000}
SPARK_LOCK=${SPARK_LOCK:-/tmp/kstream-spark.lock}
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$(dirname "$OUT")"
: > "$OUT"; : > "$OUT.err"
run() {
  PYTHONPATH=$tree/src TREE=$tree $PY -c '
import os, sys
import kstream
src = os.path.realpath(os.path.join(os.environ["TREE"], "src"))
if not os.path.realpath(kstream.__file__).startswith(src + os.sep):  # a .pth shadowing PYTHONPATH
    sys.exit(f"side_by_side: kstream from {kstream.__file__}, not from {src}")
sys.argv[0] = "kstream"
try:
    from kstream.tools.cli import main
except ModuleNotFoundError:  # the layout before issue 27
    from kstream.cli import main
main()' "$@" --json 2>>"$OUT.err" | tail -1
}
record() {  # what, result (empty when the run failed: then null, and a line on stderr)
  [ -n "$2" ] || echo "side_by_side: $name round $round: $1 failed (stderr in $OUT.err)" >&2
  echo "{\"tree\":\"$name\",\"round\":$round,\"what\":\"$1\",\"r\":${2:-null}}" >> "$OUT"
}
for round in $(seq 1 "$ROUNDS"); do
  for tree in "$BEFORE" "$AFTER"; do
    name=$([ "$tree" = "$BEFORE" ] && echo before || echo after)
    C=$(mktemp -d)/c
    export KSTREAM_CLUSTER=$C
    for acks in 1 all; do
      record "produce acks=$acks" "$(run perf produce --topic t$acks --num-records "$N" --record-size 100 --partitions 6 --acks $acks)"
    done
    for api in record batch; do
      record "consume $api" "$(run perf consume --topic t1 --messages "$N" --api $api)"
    done
    record "produce_batch acks=1" "$(run perf produce --topic tb --num-records $((2 * N)) --record-size 100 --partitions 6 --acks 1 --api batch)"
    rm -rf "$(dirname "$C")"
  done
done
unset KSTREAM_CLUSTER
if [ "$SPARK_RECORDS" -gt 0 ]; then
  lock=(); command -v flock >/dev/null && lock=(flock "$SPARK_LOCK")
  PYTHONPATH="$(dirname "$here")" "${lock[@]}" "$PY" -m bench.spark_read_pair --before "$BEFORE" --after "$AFTER" \
    --records "$SPARK_RECORDS" --rounds "$ROUNDS" --out "$OUT" >/dev/null \
    || echo "side_by_side: the Spark read failed (above); its rows are missing" >&2
fi
# Medians (records/s) and after ÷ before, one row a measurement.
"$PY" - "$OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
runs = {}
for row in rows:
    trees = runs.setdefault(row["what"], {})
    if row["r"] is not None:
        trees.setdefault(row["tree"], []).append(row["r"]["records_per_s"])
print("| measurement | before | after | after ÷ before |\n|---|---|---|---|")
for what, trees in runs.items():
    median = {tree: statistics.median(trees[tree]) for tree in ("before", "after") if tree in trees}
    cells = [f"{median[tree] / 1e6:.2f} M" if tree in median else "no runs" for tree in ("before", "after")]
    ratio = f"{median['after'] / median['before']:.2f}" if len(median) == 2 else ""
    print(f"| {what} | {cells[0]} | {cells[1]} | {ratio} |")
PY

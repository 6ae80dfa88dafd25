#!/usr/bin/env bash
# Hot-path check of a change: two checkouts side by side, alternating, 5 rounds, each on a fresh
# cluster (perf produce acks=1/all and produce_batch, perf consume record/batch); one JSON line a
# run to $OUT. Usage: BEFORE=/path/to/old/checkout AFTER=/path/to/new bench/side_by_side.sh
# (a checkout: e.g. `git worktree add --detach ../before <rev>`; both run with this venv).
set -u
OUT=${OUT:-bench-out/side_by_side.jsonl}
PY=${PY:-.venv/bin/python}
mkdir -p "$(dirname "$OUT")"
: > "$OUT"
for round in 1 2 3 4 5; do
  for tree in "$BEFORE" "$AFTER"; do
    name=$([ "$tree" = "$BEFORE" ] && echo before || echo after)
    C=$(mktemp -d)/c
    export KSTREAM_CLUSTER=$C
    run() { PYTHONPATH=$tree/src $PY -c 'import sys; sys.argv[0]="kstream"; from kstream.tools.cli import main; main()' "$@" --json 2>/dev/null | tail -1; }
    for acks in 1 all; do
      r=$(run perf produce --topic t$acks --num-records 1000000 --record-size 100 --partitions 6 --acks $acks)
      echo "{\"tree\":\"$name\",\"round\":$round,\"what\":\"produce acks=$acks\",\"r\":$r}" >> "$OUT"
    done
    for api in record batch; do
      r=$(run perf consume --topic t1 --messages 1000000 --api $api)
      echo "{\"tree\":\"$name\",\"round\":$round,\"what\":\"consume $api\",\"r\":$r}" >> "$OUT"
    done
    r=$(run perf produce --topic tb --num-records 2000000 --record-size 100 --partitions 6 --acks 1 --api batch)
    echo "{\"tree\":\"$name\",\"round\":$round,\"what\":\"produce_batch acks=1\",\"r\":$r}" >> "$OUT"
    rm -rf "$(dirname $C)"
  done
done
# Medians (records/s) and after ÷ before, one row a measurement.
"$PY" - "$OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
runs = {}
for row in rows:
    runs.setdefault(row["what"], {}).setdefault(row["tree"], []).append(row["r"]["records_per_s"])
for what, trees in runs.items():
    before, after = statistics.median(trees["before"]), statistics.median(trees["after"])
    print(f"| {what} | {before / 1e6:.2f} M | {after / 1e6:.2f} M | {after / before:.2f} |")
PY

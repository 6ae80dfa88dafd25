#!/usr/bin/env bash
# Quick start through the CLI on the embedded default cluster (./data):
# create a topic, produce keyed records, read them back, show the topic.
set -euo pipefail
export KSTREAM_CLUSTER="${KSTREAM_CLUSTER:-./data}"
topic=quickstart

kstream topics create "$topic" --partitions 3 --if-not-exists
start=$(date +%s%3N)
for i in $(seq 1 10); do echo "user-$((i % 3)):event $i at $start"; done \
  | kstream produce "$topic" --key-separator ":"
echo "--- the records just produced (key, partition/offset, value):"
kstream consume "$topic" --from-beginning --print-key --print-offset --timeout-ms 500 \
  | grep "at $start" || true
echo "--- the topic:"
kstream topics describe "$topic"

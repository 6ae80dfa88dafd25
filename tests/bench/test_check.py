"""bench.check's arithmetic: ratios from a run's rows, and what counts as moved (no benchmark runs)."""

from __future__ import annotations

import json

from bench import check

ROWS = [
    {"name": "kstream produce() acks=1, 6 partitions", "records_per_s": 900_000.0},
    {"name": "confluent produce() -> mock, 128 partitions", "records_per_s": 1_000_000.0},
    {"name": "kstream poll(), 6 partitions", "records_per_s": 3_000_000.0},
    {"name": "confluent poll() <- mock", "records_per_s": 2_000_000.0},
    {"name": "end-to-end latency ms, acks=all (fsync), 1,000 records/s", "p50": 5.0, "p99": 10.0},
]


def test_ratios_divide_kstream_by_its_peer_and_keep_latency_absolute():
    figures = check.ratios(ROWS)
    assert figures == {
        "produce() acks=1 ÷ confluent produce() -> mock": 0.9,
        "poll() ÷ confluent poll() <- mock": 1.5,
        "end-to-end latency p50 ms, acks=all, 1,000 records/s": 5.0,
        "end-to-end latency p99 ms, acks=all, 1,000 records/s": 10.0,
    }  # figures whose rows are missing (the batch section did not run) are left out


def test_a_figure_is_worse_better_or_within_the_band():
    produce, poll = "produce() acks=1 ÷ confluent produce() -> mock", "poll() ÷ confluent poll() <- mock"
    p50, p99 = ("end-to-end latency p50 ms, acks=all, 1,000 records/s",
                "end-to-end latency p99 ms, acks=all, 1,000 records/s")
    baseline = {produce: 1.0, poll: 1.0, p50: 4.0, p99: 10.0}
    now = {produce: 0.80, poll: 1.10, p50: 5.6, p99: 7.5}
    verdicts = {line["name"]: line["verdict"] for line in check.compare(baseline, now, band=0.15)}
    assert verdicts == {produce: "WORSE",   # -20% > 15%
                        poll: "within noise",  # +10%
                        p50: "WORSE",       # +40% ms > 30% (latency band is twice as wide), lower is better
                        p99: "within noise"}  # -25% ms: better, but inside the latency band
    assert check.compare({p99: 10.0}, {p99: 6.0}, band=0.15)[0]["verdict"] == "better"
    assert check.compare({}, {poll: 1.0}, band=0.15)[0]["verdict"] == "new"


def test_the_recorded_baseline_holds_every_headline_figure():
    with open(check.BASELINE) as f:
        baseline = json.load(f)
    assert set(baseline["figures"]) == set(check.RATIOS), "the baseline is missing figures: run --record"
    assert baseline["command"].startswith("python -m bench.check")

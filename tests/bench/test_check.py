"""bench.check's arithmetic: ratios from a run's rows, the measured noise band, and what counts
as moved (no benchmark runs)."""

from __future__ import annotations

import json

import pytest

from bench import check

PRODUCE = "produce() acks=1 ÷ confluent produce() -> mock"
POLL = "poll() ÷ confluent poll() <- mock"
P50 = "end-to-end latency p50 ms, acks=all, 1,000 records/s"
P99 = "end-to-end latency p99 ms, acks=all, 1,000 records/s"

ROWS = [
    {"name": "kstream produce() acks=1, 6 partitions", "records_per_s": 900_000.0,
     "runs": [800_000, 900_000, 1_000_000]},
    {"name": "confluent produce() -> mock, 128 partitions", "records_per_s": 1_000_000.0,
     "runs": [1_000_000, 1_000_000, 1_000_000]},
    {"name": "kstream poll(), 6 partitions", "records_per_s": 3_000_000.0, "runs": [3_000_000, 3_000_000]},
    {"name": "confluent poll() <- mock", "records_per_s": 2_000_000.0, "runs": [2_000_000, 2_000_000]},
    {"name": "end-to-end latency ms, acks=all (fsync), 1,000 records/s", "p50": 5.0, "p99": 10.0,
     "runs": [{"p50": 4.0, "p99": 9.0}, {"p50": 5.0, "p99": 10.0}, {"p50": 6.0, "p99": 12.0}]},
]


def test_ratios_pair_each_repeat_with_its_peer_and_keep_latency_absolute():
    figures = check.ratios(ROWS)
    assert set(figures) == {PRODUCE, POLL, P50, P99}  # the batch section did not run: left out
    assert figures[PRODUCE] == {"value": 0.9, "repeats": [0.8, 0.9, 1.0]}
    assert figures[POLL] == {"value": 1.5, "repeats": [1.5, 1.5]}
    assert figures[P50] == {"value": 5.0, "repeats": [4.0, 5.0, 6.0]}
    assert check.spread([0.8, 0.9, 1.0]) == pytest.approx(0.2 / 0.9)
    assert check.spread([1.0]) == 0.0


def figure(value, *repeats):
    return {"value": value, "repeats": list(repeats)}


def test_the_band_is_the_wider_measured_spread_or_the_least_band():
    baseline = {PRODUCE: figure(1.0, 1.0, 1.0, 1.0), POLL: figure(1.0, 0.8, 1.0, 1.2), P50: figure(4.0, 4.0, 4.0)}
    now = {PRODUCE: figure(0.85, 0.85, 0.85), POLL: figure(0.7, 0.7, 0.7), P50: figure(4.3, 4.3, 4.3)}
    lines = {line["name"]: line for line in check.compare(baseline, now, band=0.10)}
    assert lines[PRODUCE]["band"] == 0.10 and lines[PRODUCE]["verdict"] == "WORSE"  # -15%, no spread: 10%
    assert lines[POLL]["band"] == pytest.approx(0.4) and lines[POLL]["verdict"] == "within noise"  # -30% < 40%
    assert lines[P50]["verdict"] == "within noise"  # +7.5% ms


def test_lower_is_better_for_latency_and_a_new_figure_has_no_verdict():
    assert check.compare({P99: figure(10.0)}, {P99: figure(6.0)}, band=0.10)[0]["verdict"] == "better"
    assert check.compare({P99: figure(10.0)}, {P99: figure(14.0)}, band=0.10)[0]["verdict"] == "WORSE"
    assert check.compare({}, {POLL: figure(1.0)}, band=0.10)[0]["verdict"] == "new"


def test_the_recorded_baseline_holds_every_headline_figure():
    with open(check.BASELINE) as f:
        baseline = json.load(f)
    assert set(baseline["figures"]) == set(check.RATIOS), "the baseline is missing figures: run --record"
    assert all(len(f["repeats"]) >= 2 for f in baseline["figures"].values())
    assert baseline["command"].startswith("python -m bench.check")

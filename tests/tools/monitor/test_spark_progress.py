"""Progress → samples without Spark (the listener's Spark run is tests/spark/test_monitor_listener.py)."""

import json

from kstream.tools.monitor.spark_listener import progress_samples

PROGRESS = {
    "id": "q-1", "runId": "r-1", "name": "etl", "timestamp": "2026-11-23T01:00:00.500Z",
    "inputRowsPerSecond": 12.5, "processedRowsPerSecond": float("nan"),
    "durationMs": {"triggerExecution": 250},
    "sources": [{"description": "kstream[events]", "endOffset": json.dumps({"events": {"0": 4, "1": 9}}),
                 "latestOffset": json.dumps({"events": {"0": 10, "1": 9}})}],
}


def test_progress_becomes_rates_duration_and_lag_per_partition():
    samples = progress_samples(PROGRESS)
    got = {(s.name, s.topic, s.partition): s.value for s in samples}
    assert got == {("spark_input_rows_per_s", None, None): 12.5,
                   ("spark_batch_duration_ms", None, None): 250.0,
                   ("lag", "events", 0): 6.0, ("lag", "events", 1): 0.0}
    assert {s.ts_ms for s in samples} == {1795395600500}
    assert all(s.source == "spark" and s.labels["query_name"] == "etl" for s in samples)

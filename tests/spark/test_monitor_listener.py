"""KStreamQueryListener on a real streaming query: its progress lands in __kstream_metrics."""

from __future__ import annotations

import time

import pytest

from kstream import Producer
from kstream.admin import Admin, NewTopic
from kstream.tools.monitor.history import series
from kstream.tools.monitor.spark_listener import KStreamQueryListener

pytestmark = pytest.mark.spark


def test_listener_writes_progress_of_a_kstream_query(spark, tmp_path):
    cluster_path = str(tmp_path / "cluster")
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("t", 2, 1)])["t"].result()
    with Producer({"cluster": cluster_path}) as producer:
        for i in range(100):
            producer.produce("t", f"v{i}".encode(), partition=i % 2)
    listener = KStreamQueryListener(cluster_path)
    spark.streams.addListener(listener)
    try:
        query = (spark.readStream.format("kstream").option("cluster", cluster_path)
                 .option("subscribe", "t").option("startingOffsets", "earliest")
                 .option("maxOffsetsPerTrigger", 60).load()
                 .writeStream.format("noop").queryName("monitored")
                 .option("checkpointLocation", str(tmp_path / "checkpoint"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        batches = len([p for p in query.recentProgress if p["numInputRows"]])
        deadline = time.monotonic() + 30  # the listener bus delivers events asynchronously
        while listener.written == 0 or len(_durations(cluster_path)) < batches:
            assert time.monotonic() < deadline, "no progress reached the listener in 30 s"
            time.sleep(0.1)
    finally:
        spark.streams.removeListener(listener)
    assert batches >= 2
    labels = {"query_id": str(query.id), "query_name": "monitored", "run_id": str(query.runId)}
    lags = series(cluster_path, "lag", topic="t", partition=0, labels=labels, since_ms=0, limit=100)
    assert lags and lags[-1][1] == 0.0  # availableNow read everything


def _durations(cluster_path):
    return series(cluster_path, "spark_batch_duration_ms", since_ms=0, limit=100)

"""A Spark ``StreamingQueryListener`` that writes each query progress into the metrics topic.

``spark.streams.addListener(KStreamQueryListener(cluster_path))``: on every
progress event (once per micro-batch, on the driver's listener thread) it writes

- ``spark_input_rows_per_s``, ``spark_processed_rows_per_s``,
  ``spark_batch_duration_ms`` (``durationMs.triggerExecution``), and
- ``lag`` per topic-partition of each kstream source (latest offset - end
  offset of the batch, :func:`kstream.source.query_lag.query_lag`), with source ``spark``

labelled ``query_id``, ``query_name`` and ``run_id``, timed by the progress's
``timestamp``. The cluster the figures go to is the one given (usually the one
the query reads). Only the configuration (the path) is held; the metrics
writer is opened on the first event, in the driver, and closed when the query
terminates.

A failed write raises out of ``onQueryProgress``: Spark logs listener errors
and goes on with the query (a query never stops for its monitoring).
"""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

from kstream.source.query_lag import query_lag
from kstream.tools.monitor.metrics_topic import MetricsWriter, Sample


def progress_samples(progress: Any) -> list[Sample]:
    """The samples of one ``StreamingQueryProgress`` (or its dict form)."""

    def get(name: str) -> Any:
        return progress[name] if isinstance(progress, dict) else getattr(progress, name, None)

    ts_ms = _epoch_ms(get("timestamp"))
    labels = {"query_id": str(get("id")), "query_name": str(get("name") or ""),
              "run_id": str(get("runId"))}
    samples = []
    for name, value in (("spark_input_rows_per_s", get("inputRowsPerSecond")),
                        ("spark_processed_rows_per_s", get("processedRowsPerSecond")),
                        ("spark_batch_duration_ms", (get("durationMs") or {}).get("triggerExecution"))):
        if isinstance(value, int | float) and value == value:  # NaN: Spark's "no rate yet"
            samples.append(Sample(ts_ms, "spark", name, float(value), labels=labels))
    for lag in query_lag(progress):
        samples.append(Sample(ts_ms, "spark", "lag", float(lag.lag), topic=lag.topic,
                              partition=lag.partition, labels=labels))
    return samples


def _epoch_ms(timestamp: Any) -> int:
    """Spark's progress timestamp (ISO 8601, UTC ``Z``) as ms since the epoch."""
    parsed = dt.datetime.fromisoformat(str(timestamp).replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return int(parsed.timestamp() * 1000)


class KStreamQueryListener(StreamingQueryListener):
    """Writes query progress into ``cluster_path``'s ``__kstream_metrics`` (see module doc)."""

    def __init__(self, cluster_path: str):
        self.cluster_path = cluster_path
        self._writer: MetricsWriter | None = None
        self._lock = threading.Lock()
        self.written = 0

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802 - Spark's method names
        pass

    def onQueryProgress(self, event: Any) -> None:  # noqa: N802
        samples = progress_samples(event.progress)
        with self._lock:
            if self._writer is None:
                self._writer = MetricsWriter(self.cluster_path)
            self.written += self._writer.write(samples)

    def onQueryIdle(self, event: Any) -> None:  # noqa: N802
        pass

    def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
        with self._lock:
            writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()

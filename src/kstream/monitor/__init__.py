"""Monitoring figures for the console: lag and Burrow status, metrics samples, history.

Nothing here serves HTTP (that is :mod:`kstream.web`). Imports are lazy: importing
``kstream.monitor`` loads neither deltalake, prometheus_client nor pyspark.
"""

from kstream._lazy import lazy_exports

_NAMES = {
    "Commit": "kstream.monitor.burrow",
    "Evaluation": "kstream.monitor.burrow",
    "PartitionStatus": "kstream.monitor.burrow",
    "evaluate": "kstream.monitor.burrow",
    "group_status": "kstream.monitor.burrow",
    "GroupLag": "kstream.monitor.lag",
    "GroupSummary": "kstream.monitor.lag",
    "PartitionLagStatus": "kstream.monitor.lag",
    "group_lag": "kstream.monitor.lag",
    "groups_summary": "kstream.monitor.lag",
    "Sample": "kstream.monitor.metrics_topic",
    "MetricsWriter": "kstream.monitor.metrics_topic",
    "series": "kstream.monitor.history",
    "Sampler": "kstream.monitor.sampler",
    "registry": "kstream.monitor.prometheus",
    "CsvReporter": "kstream.monitor.csv_reporter",
    "metrics_stats_cb": "kstream.monitor.client_stats",
    "KStreamQueryListener": "kstream.monitor.spark_listener",
}

__all__ = sorted(_NAMES)

__getattr__, __dir__ = lazy_exports(__name__, _NAMES, __all__)

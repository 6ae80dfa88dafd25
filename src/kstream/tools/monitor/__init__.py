"""Monitoring figures for the console: lag and Burrow status, metrics samples, history.

Nothing here serves HTTP (that is :mod:`kstream.tools.web`). Imports are lazy: importing
``kstream.tools.monitor`` loads neither deltalake, prometheus_client nor pyspark.
"""

from kstream._lazy import lazy_exports

_NAMES = {
    "Commit": "kstream.tools.monitor.burrow",
    "Evaluation": "kstream.tools.monitor.burrow",
    "PartitionStatus": "kstream.tools.monitor.burrow",
    "evaluate": "kstream.tools.monitor.burrow",
    "group_status": "kstream.tools.monitor.burrow",
    "GroupLag": "kstream.tools.monitor.lag",
    "GroupSummary": "kstream.tools.monitor.lag",
    "PartitionLagStatus": "kstream.tools.monitor.lag",
    "group_lag": "kstream.tools.monitor.lag",
    "groups_summary": "kstream.tools.monitor.lag",
    "Sample": "kstream.tools.monitor.metrics_topic",
    "MetricsWriter": "kstream.tools.monitor.metrics_topic",
    "series": "kstream.tools.monitor.history",
    "Sampler": "kstream.tools.monitor.sampler",
    "registry": "kstream.tools.monitor.prometheus",
    "CsvReporter": "kstream.tools.monitor.csv_reporter",
    "metrics_stats_cb": "kstream.tools.monitor.stats_writer",
    "KStreamQueryListener": "kstream.tools.monitor.spark_listener",
}

__all__ = sorted(_NAMES)

__getattr__, __dir__ = lazy_exports(__name__, _NAMES, __all__)

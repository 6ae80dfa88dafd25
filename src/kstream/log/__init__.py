"""kstream's storage engine: record batches, segments, indexes, partition logs, log dirs,
replication, recovery and retention (see docs/ARCHITECTURE.md).

It never imports the client API, consumer groups (deltalake) or pyspark. The
names below are imported on first use (module ``__getattr__``), so importing one
leaf module (``kstream.log.storage.segment``) loads only what that module needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kstream._lazy import lazy_exports

if TYPE_CHECKING:  # what the lazy names are, for type checkers and editors
    from kstream.log.cluster.cluster import Cluster
    from kstream.log.cluster.metadata import Metadata, PartitionInfo, TopicInfo
    from kstream.log.cluster.partition import Partition
    from kstream.log.storage.log_config import LogConfig
    from kstream.log.storage.log_reader import LogReader
    from kstream.log.storage.partition_log import PartitionLog
    from kstream.log.timestamps import TimestampOffset, offset_for_timestamp

# Public name -> the module that defines it (imported on first use).
_LAZY = {
    "Cluster": "kstream.log.cluster.cluster",
    "LogConfig": "kstream.log.storage.log_config",
    "LogReader": "kstream.log.storage.log_reader",
    "Metadata": "kstream.log.cluster.metadata",
    "Partition": "kstream.log.cluster.partition",
    "PartitionInfo": "kstream.log.cluster.metadata",
    "PartitionLog": "kstream.log.storage.partition_log",
    "TimestampOffset": "kstream.log.timestamps",
    "TopicInfo": "kstream.log.cluster.metadata",
    "offset_for_timestamp": "kstream.log.timestamps",
}


__all__ = [
    "Cluster",
    "LogConfig",
    "LogReader",
    "Metadata",
    "Partition",
    "PartitionInfo",
    "PartitionLog",
    "TimestampOffset",
    "TopicInfo",
    "offset_for_timestamp",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)

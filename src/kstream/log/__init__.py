"""kstream's storage engine: record batches, segments, indexes, partition logs, log dirs,
replication, recovery and retention (see docs/ARCHITECTURE.md).

Its narrow face for readers: :func:`bounds` (a partition's log start, LEO, HW, LSO and the
transaction holding it) and :func:`read_visible` / :func:`visible_batches` (what a reader
at an isolation level may see of a range); every reader above goes through them.
:class:`KeyIndex` is derived from the latter: a compacted partition's keys and the offsets of
their latest visible records (what ``kstream.Table`` looks keys up in).

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
    from kstream.log.key_index import KeyIndex
    from kstream.log.partition_bounds import PartitionBounds, bounds
    from kstream.log.storage.log_config import LogConfig
    from kstream.log.storage.log_reader import LogReader
    from kstream.log.storage.partition_log import PartitionLog
    from kstream.log.timestamps import TimestampOffset, max_timestamp_offset, offset_for_timestamp
    from kstream.log.visible_reads import read_visible, visible_batches

# Public name -> the module that defines it (imported on first use).
_LAZY = {
    "Cluster": "kstream.log.cluster.cluster",
    "KeyIndex": "kstream.log.key_index",
    "LogConfig": "kstream.log.storage.log_config",
    "LogReader": "kstream.log.storage.log_reader",
    "Metadata": "kstream.log.cluster.metadata",
    "Partition": "kstream.log.cluster.partition",
    "PartitionBounds": "kstream.log.partition_bounds",
    "PartitionInfo": "kstream.log.cluster.metadata",
    "PartitionLog": "kstream.log.storage.partition_log",
    "TimestampOffset": "kstream.log.timestamps",
    "TopicInfo": "kstream.log.cluster.metadata",
    "max_timestamp_offset": "kstream.log.timestamps",
    "offset_for_timestamp": "kstream.log.timestamps",
    "bounds": "kstream.log.partition_bounds",
    "read_visible": "kstream.log.visible_reads",
    "visible_batches": "kstream.log.visible_reads",
}


__all__ = [
    "Cluster",
    "KeyIndex",
    "LogConfig",
    "LogReader",
    "Metadata",
    "Partition",
    "PartitionBounds",
    "PartitionInfo",
    "PartitionLog",
    "TimestampOffset",
    "TopicInfo",
    "max_timestamp_offset",
    "offset_for_timestamp",
    "bounds",
    "read_visible",
    "visible_batches",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)

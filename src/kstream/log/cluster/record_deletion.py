"""Delete records before an offset (Kafka's DeleteRecords), a whole segment at a time.

Kafka moves a partition's log start offset to exactly the offset asked for and
keeps the rest of that segment hidden. kstream's log start offset is the base
offset of the first segment file (the log is the truth: there is no separate
checkpoint to trust), so deletion works as retention does: every sealed
segment whose records all lie below the offset is deleted, on every replica,
under the partition lock. The new log start offset (the *low watermark*
returned) is therefore at most the offset asked for: the start of the segment
holding it. The active segment is never deleted.

``offset`` follows Kafka's tool: ``-1`` means the high watermark; an offset
above the high watermark is refused (OFFSET_OUT_OF_RANGE), nothing deleted.
"""

from __future__ import annotations

import itertools
import logging
import os

from kstream.errors import OffsetOutOfRangeError
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage.disk import fsync_dir
from kstream.log.storage.retention import list_segment_bases
from kstream.log.storage.segment import Segment

log = logging.getLogger(__name__)

HIGH_WATERMARK = -1
"""The ``offset`` that means "everything below the high watermark" (Kafka's -1)."""


def _delete_below(directory: str, offset: int, index_interval_bytes: int) -> int:
    """Delete the sealed segments of one replica that end at or below ``offset``; returns how
    many. Caller holds the partition lock."""
    bases = list_segment_bases(directory)
    deleted = 0
    for base, next_base in itertools.pairwise(bases):
        if next_base > offset:
            break
        Segment(directory, base, index_interval_bytes).delete()
        deleted += 1
    if deleted:
        fsync_dir(directory)
    return deleted


def delete_records(cluster: Cluster, topic: str, partition: int, offset: int) -> int:
    """Delete ``topic``-``partition``'s records below ``offset`` (whole segments); returns the
    new low watermark (log start offset of the leader). Raises TopicNotFoundError,
    PartitionNotFoundError or OffsetOutOfRangeError; on a refusal nothing is deleted."""
    info = cluster.topic(topic)
    handle = cluster.partition(info, partition)
    try:
        high_watermark = handle.high_watermark() or 0
        target = high_watermark if offset == HIGH_WATERMARK else offset
        if not 0 <= target <= high_watermark:
            raise OffsetOutOfRangeError(
                f"cannot delete records of {topic}-{partition} before offset {offset}: it must be "
                f"between 0 and the high watermark {high_watermark} (or -1 for the high watermark)")
        online = {log_dir for log_dir, _, up in cluster.metadata.log_dirs() if up}
        with handle.lock:
            deleted = 0
            for replica, directory in handle.replica_dirs.items():
                if replica in online and os.path.isdir(directory):
                    deleted += _delete_below(directory, target, handle.config.index_interval_bytes)
            if deleted:
                handle.lock.bump_generation()  # other processes re-list the segment files
        leader_bases = list_segment_bases(handle.leader_dir)
        low_watermark = leader_bases[0] if leader_bases else 0
        log.info("delete-records %s-%d before %d: %d segment file(s) deleted, low watermark %d",
                 topic, partition, target, deleted, low_watermark)
        return low_watermark
    finally:
        handle.close()

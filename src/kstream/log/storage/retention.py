"""Retention: delete a replica's oldest sealed segments by time and by size.

Whole segments only, oldest first, never the active (last) one, as Kafka does,
and only when cleanup.policy has ``delete`` (``delete`` or ``compact,delete``).
``retention.ms``: a segment goes once its newest record is older.
``retention.bytes``: segments go while the replica would stay at or above the
limit without them. Readers that have a deleted segment mapped keep their view;
the log start offset moves to the first remaining segment.
A tiered topic (``tier.delta.path``) passes ``keep_from``, the lake end offset its
tierer recorded: a segment goes only when it lies wholly below it (its successor's
base offset is at most ``keep_from``), so nothing the Delta table lacks is deleted. The
crash point ``retention.tiered-delete`` (tests: ``KSTREAM_CRASH_AT``) is before each such
deletion: after the tierer recorded the lake end retention trusts, before a segment goes.
"""

from __future__ import annotations

import logging
import os

from kstream.log.storage import format as fmt
from kstream.log.storage.disk import fsync_dir
from kstream.log.storage.faults import crash_point
from kstream.log.storage.format import list_segment_bases  # here too: its long-standing home
from kstream.log.storage.log_config import LogConfig
from kstream.log.storage.segment import NO_TIMESTAMP, Segment

log = logging.getLogger(__name__)


def delete_expired_segments(directory: str, config: LogConfig, now_ms: int,
                            keep_from: int | None = None) -> int:
    """Apply retention to one replica; returns how many segments were deleted.

    ``keep_from``: nothing at or past this offset may go (a tiered topic's lake end offset);
    a segment is deleted only when every offset it holds is below it.

    Caller holds the partition lock. A corrupt sealed segment raises
    CorruptBatchError (and nothing is deleted from it on). A topic whose cleanup.policy lacks
    ``delete`` (``compact`` alone) keeps every segment: the cleaner shrinks it instead.
    """
    if not config.delete:
        return 0
    bases = list_segment_bases(directory)
    if len(bases) < 2:
        return 0
    sizes = {base: os.path.getsize(os.path.join(directory, fmt.segment_file_name(base))) for base in bases}
    total = sum(sizes.values())
    deleted = 0
    for index, base in enumerate(bases[:-1]):
        if keep_from is not None and bases[index + 1] > keep_from:
            break  # the lake does not hold all of it yet
        segment = Segment(directory, base, config.index_interval_bytes)
        try:
            over_size = config.retention_bytes >= 0 and total - sizes[base] >= config.retention_bytes
            expired = False
            if not over_size and config.retention_ms >= 0:
                segment.open_existing(verify_tail_from=None)
                expired = (segment.max_timestamp != NO_TIMESTAMP
                           and now_ms - segment.max_timestamp > config.retention_ms)
        finally:
            segment.close()
        if not (over_size or expired):
            break
        if keep_from is not None:
            crash_point("retention.tiered-delete")
        segment.delete()
        total -= sizes[base]
        deleted += 1
    if deleted:
        fsync_dir(directory)
        log.info("retention deleted %d segment(s) of %s", deleted, directory)
    return deleted

"""The lake end offset of each tiered partition, kept in the cluster's metadata (SQLite).

A topic with ``tier.delta.path`` has its sealed segments copied into a Delta table by the
tierer (:mod:`kstream.tiering`). The table is the truth for what the lake holds: each of the
tierer's commits carries a Delta app transaction whose version is the partition's new lake
end offset. The row kept here is a cache of that number, written only after the Delta commit
is durable, so it is never ahead of the table; the tierer reconciles it from the Delta log
whenever the two disagree (docs/TIERING.md). Retention of a tiered topic reads it: a segment
is deleted only when it lies wholly below it.

The table ``lake_offsets`` is made by the first write (:meth:`LakeOffsets.record`); a reader
(``kstream topics describe``, retention) creates nothing and reads a missing table as "nothing
tiered yet". Rows carry the topic's id: a topic deleted and created again under the same name
starts with nothing tiered.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from kstream.log.cluster.metadata import Metadata

_SCHEMA = """
CREATE TABLE IF NOT EXISTS lake_offsets (
    topic TEXT NOT NULL, partition INTEGER NOT NULL, topic_id TEXT NOT NULL,
    end_offset INTEGER NOT NULL, delta_version INTEGER NOT NULL, updated_ms INTEGER NOT NULL,
    PRIMARY KEY (topic, partition));
"""


@dataclass(frozen=True)
class LakeEnd:
    """What the lake holds of one partition: every committed record below ``end_offset``
    (as of Delta table version ``delta_version``, recorded at ``updated_ms``)."""

    partition: int
    end_offset: int
    delta_version: int
    updated_ms: int


class LakeOffsets:
    """Reads and writes the ``lake_offsets`` rows of one cluster. Thread-safe as
    :class:`Metadata` is (one connection per thread)."""

    def __init__(self, metadata: Metadata):
        self.metadata = metadata

    def ends(self, topic: str, topic_id: str) -> dict[int, LakeEnd]:
        """partition -> its recorded lake end, for this incarnation of ``topic`` (partitions
        never tiered are absent). Writes nothing."""
        rows = self.metadata.read_rows(
            "SELECT partition, end_offset, delta_version, updated_ms FROM lake_offsets "
            "WHERE topic = ? AND topic_id = ?", (topic, topic_id))
        return {row[0]: LakeEnd(*row) for row in rows}

    def end_offset(self, topic: str, topic_id: str, partition: int) -> int:
        """The recorded lake end of one partition; 0 when nothing is recorded."""
        rows = self.metadata.read_rows(
            "SELECT end_offset FROM lake_offsets WHERE topic = ? AND topic_id = ? AND partition = ?",
            (topic, topic_id, partition))
        return int(rows[0][0]) if rows else 0

    def record(self, topic: str, topic_id: str, ends: Mapping[int, int], delta_version: int) -> None:
        """Set lake ends (partition -> end offset) in one transaction, after the Delta commit
        that holds them is durable; ``delta_version`` -1: the table does not exist (a lost
        table, reconciled to 0)."""
        assert delta_version >= -1 and all(end >= 0 for end in ends.values()), (ends, delta_version)
        self.metadata.ensure_schema("lake_offsets", _SCHEMA)
        now = int(time.time() * 1000)
        with self.metadata.transaction() as tx:
            for partition, end in sorted(ends.items()):
                tx.execute(
                    "INSERT INTO lake_offsets (topic, partition, topic_id, end_offset, delta_version, updated_ms) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (topic, partition) DO UPDATE SET "
                    "topic_id = excluded.topic_id, end_offset = excluded.end_offset, "
                    "delta_version = excluded.delta_version, updated_ms = excluded.updated_ms",
                    (topic, partition, topic_id, end, delta_version, now))

    def forget(self, topic: str) -> None:
        """Drop a deleted topic's rows (a new topic of the same name starts untiered)."""
        if self.metadata.has_schema("lake_offsets", _SCHEMA):
            with self.metadata.transaction() as tx:
                tx.execute("DELETE FROM lake_offsets WHERE topic = ?", (topic,))

"""What a reader sees of a group's current offsets: the table, with decided commits applied.

Readers never write (docs/TRANSACTIONS.md, "Readers never write"). A
transaction decided to commit (PrepareCommit) that carries offsets for a
group has its offsets applied to the group offsets table only when someone
finishes it (:func:`kstream.log.transactions.writer.finish`: markers, then one Delta
commit per group with an app transaction, then Complete). Until then a
reader applies them *in its own view*, as :mod:`kstream.log.transactions.view` does
for the transaction's records, so output and offsets read as committed
together and nothing is written:

- the pending offsets of every decided commit for the group are read first
  (SQLite, one query: :func:`kstream.log.transactions.pending_offsets.decided_of_group`), the
  table's newest version after. A transaction completed before the first read
  had its offsets written before that (apply precedes Complete), so the
  second read has them; one decided at the first read is overlaid unless
  the version read already holds its app transaction (version >= its
  sequence: applied by a finisher meanwhile, maybe with later commits on
  top, which must not be covered);
- an overlaid offset is what the finisher would write: the pending row for
  (topic, partition), in transactional id order (the order
  :func:`kstream.groups.transactional_offsets.roll_forward` finishes them), for topics
  that exist (the finisher drops a deleted topic's offsets), tied to the
  topic as it exists now.

A decision stands once taken (nobody turns PrepareCommit back), so what a
reader sees here is what the table holds after the finisher ran. Writers
(a group commit, a reset, the producer, the expiry) roll such transactions
forward for real before they write (:func:`kstream.groups.transactional_offsets.roll_forward`),
so a later commit is never covered by an older transaction's offsets.
"""

from __future__ import annotations

from collections.abc import Callable

from kstream.groups.offsets_table import CommittedOffset, Offsets, OffsetsTable
from kstream.log.cluster.metadata import Metadata
from kstream.log.transactions import pending_offsets


def current_offsets(table: OffsetsTable, metadata: Metadata, group: str,
                    topic_id: Callable[[str], str | None]) -> Offsets:
    """``group``'s offsets in the table's newest version with the offsets of decided, not yet
    applied commits laid over them (the module docstring). ``topic_id`` gives a topic's
    current id, None when it does not exist. Writes nothing."""
    pending = decided_offsets(metadata, group)
    snapshot = table.snapshot()  # after the SQLite read: see the module docstring
    rows: Offsets = {}
    if snapshot is not None:
        for row in table.rows(group, snapshot=snapshot).to_pylist():
            committed = CommittedOffset(**row)
            rows[(committed.topic, committed.partition)] = committed
    for offsets in pending:
        applied = None if snapshot is None else snapshot.transaction_version(offsets.app_id)
        if applied is not None and applied >= offsets.sequence:
            continue
        for topic, partition, offset, metadata_string, leader_epoch in offsets.offsets:
            current_id = topic_id(topic)
            if current_id is None:
                continue
            rows[(topic, partition)] = CommittedOffset(
                topic, partition, offset, leader_epoch, metadata_string, offsets.generation, offsets.member_id,
                f"transaction {offsets.transactional_id}", None, current_id)
    return rows


def decided_offsets(metadata: Metadata, group: str) -> list[pending_offsets.PendingOffsets]:
    """The pending offsets of decided commits for ``group``; none on a cluster whose
    transaction tables were never made (no transaction ever ran: readers create nothing)."""
    return pending_offsets.decided_of_group(metadata, group)

"""Transaction state in the metadata store: the coordinator's tables and queries.

A transactional id has one producer id and an epoch; :meth:`init` bumps the
epoch (fencing every older instance) and aborts a transaction the previous
instance left open. While a transaction is open, each partition it wrote
remembers the transaction's first offset there: the partition's last stable
offset (LSO) is the smallest such offset (or the high watermark when none).
Ending a transaction writes a COMMIT or ABORT marker frame to each partition
(see :mod:`kstream.log.partition`) and removes these rows; an aborted one
leaves (producer id, first offset, marker offset) behind so read_committed
readers skip its frames.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from kstream.errors import FencedError, KStreamError
from kstream.log.metadata import Metadata

_SCHEMA = """
CREATE TABLE IF NOT EXISTS transactions (
    transactional_id TEXT PRIMARY KEY, producer_id INTEGER NOT NULL, epoch INTEGER NOT NULL,
    state TEXT NOT NULL, partitions TEXT NOT NULL, updated_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS open_transaction_partitions (
    topic TEXT NOT NULL, partition INTEGER NOT NULL, producer_id INTEGER NOT NULL,
    first_offset INTEGER NOT NULL, PRIMARY KEY (topic, partition, producer_id));
CREATE TABLE IF NOT EXISTS aborted_transactions (
    topic TEXT NOT NULL, partition INTEGER NOT NULL, producer_id INTEGER NOT NULL,
    first_offset INTEGER NOT NULL, last_offset INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS aborted_by_partition ON aborted_transactions (topic, partition, last_offset);
"""

EMPTY, ONGOING, COMMITTED, ABORTED = "Empty", "Ongoing", "CompleteCommit", "CompleteAbort"

TRANSACTIONAL_PRODUCER_IDS = 1 << 40
"""Transactional ids get producer ids above this, one more each; idempotent producers and
sink tasks count up from 1 below it (a metadata counter), so the two never meet."""
MAX_PRODUCER_ID = (1 << 63) - 1  # the frame header's producer_id is an i64


@dataclass(frozen=True)
class TransactionState:
    transactional_id: str
    producer_id: int
    epoch: int
    state: str
    partitions: tuple[tuple[str, int], ...]


class TransactionStore:
    """Transaction rows in one cluster's metadata database (same connection, same rules)."""

    def __init__(self, metadata: Metadata):
        self.metadata = metadata
        metadata.ensure_schema("transactions", _SCHEMA)

    def init(self, transactional_id: str) -> tuple[TransactionState, TransactionState | None]:
        """Register (or re-register) a transactional id with a bumped epoch.

        Returns the new state and, if the previous instance left a transaction
        open, its state (the caller aborts it, writing the markers)."""
        with self.metadata.transaction() as tx:
            row = tx.execute("SELECT producer_id, epoch, state, partitions FROM transactions "
                             "WHERE transactional_id = ?", (transactional_id,)).fetchone()
            if row is None:
                # One more than the highest so far; the first is TRANSACTIONAL_PRODUCER_IDS + 1.
                producer_id = int(tx.execute("SELECT COALESCE(MAX(producer_id), ?) + 1 FROM transactions",
                                             (TRANSACTIONAL_PRODUCER_IDS,)).fetchone()[0])
                if producer_id > MAX_PRODUCER_ID:
                    raise KStreamError(f"transactional producer ids are used up (the next would be "
                                       f"{producer_id}, past the frame header's i64 maximum)")
                epoch, left_open = 0, None
            else:
                producer_id, epoch = row[0], row[1] + 1
                left_open = (TransactionState(transactional_id, row[0], row[1], row[2],
                                              tuple(tuple(p) for p in json.loads(row[3])))
                             if row[2] == ONGOING else None)
            tx.execute("INSERT OR REPLACE INTO transactions VALUES (?, ?, ?, ?, ?, ?)",
                       (transactional_id, producer_id, epoch, EMPTY if left_open is None else ONGOING,
                        row[3] if left_open else "[]", _now()))
        return self.get(transactional_id), left_open

    def get(self, transactional_id: str) -> TransactionState:
        row = self.metadata.connection.execute(
            "SELECT producer_id, epoch, state, partitions FROM transactions WHERE transactional_id = ?",
            (transactional_id,)).fetchone()
        if row is None:
            raise KStreamError(f"transactional id {transactional_id!r} is unknown; call init_transactions()")
        return TransactionState(transactional_id, row[0], row[1], row[2],
                                tuple(tuple(p) for p in json.loads(row[3])))

    def check_epoch(self, transactional_id: str, epoch: int) -> TransactionState:
        """FencedError when a newer instance of this transactional id took over."""
        state = self.get(transactional_id)
        if state.epoch != epoch:
            raise FencedError(
                f"producer with transactional.id {transactional_id!r} and epoch {epoch} was fenced by a newer "
                f"instance (epoch {state.epoch}); this one must stop (close it and create a new producer)")
        return state

    def begin(self, transactional_id: str, epoch: int) -> None:
        self._set_state(transactional_id, epoch, ONGOING, [])

    def add_partition(self, transactional_id: str, epoch: int, producer_id: int, topic: str, partition: int,
                      first_offset: int) -> None:
        """Record that the open transaction writes ``topic``-``partition`` from ``first_offset``
        (call under the partition lock, before the first frame is appended)."""
        with self.metadata.transaction() as tx:
            row = tx.execute("SELECT epoch, state, partitions FROM transactions WHERE transactional_id = ?",
                             (transactional_id,)).fetchone()
            if row is None or row[0] != epoch or row[1] != ONGOING:
                raise FencedError(f"transaction of {transactional_id!r} epoch {epoch} is not open (fenced or "
                                  "ended); begin_transaction() again with a fresh producer")
            partitions = json.loads(row[2])
            if [topic, partition] not in partitions:
                partitions.append([topic, partition])
                tx.execute("UPDATE transactions SET partitions = ?, updated_ms = ? WHERE transactional_id = ?",
                           (json.dumps(partitions), _now(), transactional_id))
                tx.execute("INSERT OR IGNORE INTO open_transaction_partitions VALUES (?, ?, ?, ?)",
                           (topic, partition, producer_id, first_offset))

    def end_partition(self, topic: str, partition: int, producer_id: int, marker_offset: int,
                      aborted: bool) -> None:
        """The marker is written: the partition no longer holds the transaction open."""
        with self.metadata.transaction() as tx:
            row = tx.execute("SELECT first_offset FROM open_transaction_partitions WHERE topic = ? AND "
                             "partition = ? AND producer_id = ?", (topic, partition, producer_id)).fetchone()
            tx.execute("DELETE FROM open_transaction_partitions WHERE topic = ? AND partition = ? AND "
                       "producer_id = ?", (topic, partition, producer_id))
            if aborted and row is not None:
                tx.execute("INSERT INTO aborted_transactions VALUES (?, ?, ?, ?, ?)",
                           (topic, partition, producer_id, row[0], marker_offset))

    def complete(self, transactional_id: str, epoch: int, committed: bool) -> None:
        self._set_state(transactional_id, epoch, COMMITTED if committed else ABORTED, [])

    def _set_state(self, transactional_id: str, epoch: int, state: str, partitions: list[list]) -> None:
        with self.metadata.transaction() as tx:
            changed = tx.execute(
                "UPDATE transactions SET state = ?, partitions = ?, updated_ms = ? "
                "WHERE transactional_id = ? AND epoch = ?",
                (state, json.dumps(partitions), _now(), transactional_id, epoch)).rowcount
        if not changed:
            self.check_epoch(transactional_id, epoch)

    def expired(self, timeout_ms: int) -> list[TransactionState]:
        """Open transactions not touched for ``timeout_ms`` (their producer is gone)."""
        rows = self.metadata.connection.execute(
            "SELECT transactional_id FROM transactions WHERE state = ? AND updated_ms < ?",
            (ONGOING, _now() - timeout_ms)).fetchall()
        return [self.get(r[0]) for r in rows]

    def first_open_offset(self, topic: str, partition: int) -> int | None:
        """The smallest first offset of an open transaction in the partition (LSO), if any."""
        row = self.metadata.connection.execute(
            "SELECT MIN(first_offset) FROM open_transaction_partitions WHERE topic = ? AND partition = ?",
            (topic, partition)).fetchone()
        return row[0]

    def aborted(self, topic: str, partition: int, from_offset: int) -> list[tuple[int, int, int]]:
        """(producer id, first offset, marker offset) of aborted transactions ending at or after
        ``from_offset``."""
        return [tuple(r) for r in self.metadata.connection.execute(
            "SELECT producer_id, first_offset, last_offset FROM aborted_transactions WHERE topic = ? AND "
            "partition = ? AND last_offset >= ? ORDER BY first_offset", (topic, partition, from_offset))]


def _now() -> int:
    return int(time.time() * 1000)

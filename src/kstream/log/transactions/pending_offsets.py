"""Consumer group offsets a transaction carries, in the transaction store, until it ends.

``Producer.send_offsets_to_transaction(offsets, group_metadata)`` records the
offsets as *pending* offsets of the producer's open transaction: one row of
``transaction_offsets`` (schema in :mod:`kstream.log.transactions.store`, same
SQLite database as the transaction rows) per (transactional id, group), with
the member and generation that sent them and the transaction's *offsets
sequence*. Contract:

- a row is written only while its transaction is Ongoing at the writer's
  epoch (checked in the same SQLite transaction), so the decision
  (PrepareCommit, one SQLite transaction) fixes the rows of a commit;
- the rows stay until the SQLite transaction that completes the transaction
  (commit or abort, :meth:`TransactionStore.complete`) deletes them; an abort
  never applies them;
- the sequence grows by one for each transaction of a transactional id that
  carries offsets (``transaction_offset_sequences``), whatever its producer id
  or epoch: it is the Delta app-transaction version with which the offsets are
  applied to the group offsets table, so applying them twice writes once
  (:mod:`kstream.groups.transactional_offsets` applies them; this module is SQL only).

Only readers and writers of this cluster's metadata use it; it opens nothing.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from dataclasses import dataclass

from kstream.log.cluster.metadata import Metadata
from kstream.log.transactions.store import LIVE, PREPARE_COMMIT, TransactionState, TransactionStore

OffsetRow = tuple[str, int, int, "str | None", "int | None"]  # topic, partition, offset, metadata, leader epoch


@dataclass(frozen=True)
class PendingOffsets:
    """What one transaction will commit for one group, if it commits."""

    transactional_id: str
    group: str
    member_id: str | None  # None: sent by a consumer outside the group (assign())
    generation: int
    sequence: int
    offsets: tuple[OffsetRow, ...]
    host: str = ""  # the sending process: only it can still decide to commit an Ongoing transaction
    pid: int = 0
    process_start: int = 0  # its start time (clock ticks since boot; 0: unknown), so a reused pid is no match

    @property
    def sender_alive(self) -> bool:
        """False when the sending process is known to be gone (same host, and no process with
        that pid, or one that started at another time)."""
        if self.host != socket.gethostname():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return not self.process_start or process_start(self.pid) in (0, self.process_start)

    @property
    def app_id(self) -> str:
        """The Delta app-transaction id the offsets are applied under (one per id and group:
        a transaction may carry offsets for several groups, each its own Delta commit)."""
        return f"kstream.transactional.id={self.transactional_id}/group={self.group}"


def process_start(pid: int) -> int:
    """A process's start time in clock ticks since boot (Linux's /proc/PID/stat field 22);
    0 when it cannot be told (no /proc, or no such process)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return int(stat[stat.rindex(b")") + 2:].split()[19])  # fields after "(comm) ", from field 3
    except (OSError, ValueError, IndexError):
        return 0


def record(tx: sqlite3.Connection, transactional_id: str, group: str, member_id: str | None, generation: int,
           offsets: list[OffsetRow]) -> PendingOffsets:
    """Add ``offsets`` to the open transaction's pending offsets for ``group`` (later ones win
    per partition). Call inside the write transaction that checked the transaction is Ongoing."""
    rows = tx.execute("SELECT group_id, sequence, offsets FROM transaction_offsets WHERE transactional_id = ?",
                      (transactional_id,)).fetchall()
    if rows:
        sequence = int(rows[0][1])
    else:  # the transaction's first offsets: its sequence
        row = tx.execute("SELECT sequence FROM transaction_offset_sequences WHERE transactional_id = ?",
                         (transactional_id,)).fetchone()
        sequence = (0 if row is None else int(row[0])) + 1
        tx.execute("INSERT OR REPLACE INTO transaction_offset_sequences VALUES (?, ?)",
                   (transactional_id, sequence))
    merged: dict[tuple[str, int], OffsetRow] = {}
    for row_group, _, stored in rows:
        if row_group == group:
            merged.update(((r[0], r[1]), tuple(r)) for r in json.loads(stored))
    merged.update(((r[0], r[1]), r) for r in offsets)
    chosen = tuple(merged[k] for k in sorted(merged))
    host, pid = socket.gethostname(), os.getpid()
    started = process_start(pid)
    tx.execute("INSERT OR REPLACE INTO transaction_offsets VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
               (transactional_id, group, member_id, generation, sequence, json.dumps(chosen), host, pid, started))
    return PendingOffsets(transactional_id, group, member_id, generation, sequence, chosen, host, pid, started)


def of_transaction(connection: sqlite3.Connection, transactional_id: str) -> list[PendingOffsets]:
    return [_pending(transactional_id, *r) for r in connection.execute(
        "SELECT group_id, member_id, generation, sequence, offsets, host, pid, process_start FROM transaction_offsets "
        "WHERE transactional_id = ? ORDER BY group_id", (transactional_id,))]


def of_decided(store: TransactionStore, decided: TransactionState) -> list[PendingOffsets] | None:
    """The pending offsets of ``decided`` (a PrepareCommit state), read in one snapshot with
    its row: None when the decision no longer stands as given (someone completed it, or a new
    instance took it over with a new epoch), since rows read then could belong to a later
    transaction of the id."""
    connection = store.metadata.connection
    connection.execute("BEGIN")  # a read transaction: the row and the offsets of one moment
    try:
        if not store.decision_stands(decided):
            return None
        return of_transaction(connection, decided.transactional_id)
    finally:
        connection.execute("COMMIT")


def of_group(store: TransactionStore, group: str) -> list[tuple[PendingOffsets, TransactionState]]:
    """Pending offsets for ``group`` of live (Ongoing or decided) transactions, with their rows.
    One indexed read: the usual answer is none (also when no transaction ever ran)."""
    live = ", ".join("?" * len(LIVE))
    rows = store.metadata.read_rows(
        "SELECT p.transactional_id, p.group_id, p.member_id, p.generation, p.sequence, p.offsets, p.host, p.pid, "
        "p.process_start "
        "FROM transaction_offsets p JOIN transactions t ON t.transactional_id = p.transactional_id "
        f"WHERE p.group_id = ? AND t.state IN ({live}) ORDER BY p.transactional_id",
        (group, *LIVE))
    return [(_pending(r[0], *r[1:]), store.get(r[0])) for r in rows]


def decided_of_group(metadata: Metadata, group: str) -> list[PendingOffsets]:
    """Pending offsets for ``group`` of transactions decided to commit (PrepareCommit), their
    markers or offsets not written yet, in transactional id order (the order
    :func:`kstream.groups.transactional_offsets.roll_forward` applies them). One indexed read, one
    snapshot: the row and its decision together. Writes nothing (none when no transaction ever
    ran: the tables are made by the first writer)."""
    rows = metadata.read_rows(
        "SELECT p.transactional_id, p.group_id, p.member_id, p.generation, p.sequence, p.offsets, p.host, p.pid, "
        "p.process_start "
        "FROM transaction_offsets p JOIN transactions t ON t.transactional_id = p.transactional_id "
        "WHERE p.group_id = ? AND t.state = ? ORDER BY p.transactional_id", (group, PREPARE_COMMIT))
    return [_pending(r[0], *r[1:]) for r in rows]


def has_pending(metadata: Metadata, transactional_id: str) -> bool:
    return bool(metadata.read_rows("SELECT 1 FROM transaction_offsets WHERE transactional_id = ? LIMIT 1",
                                   (transactional_id,)))


def _pending(transactional_id: str, group: str, member_id: str | None, generation: int, sequence: int,
             offsets: str, host: str, pid: int, started: int) -> PendingOffsets:
    return PendingOffsets(transactional_id, group, member_id, int(generation), int(sequence),
                          tuple(tuple(r) for r in json.loads(offsets)), host, int(pid), int(started))

"""What a reader sees of a partition's transactions: the files, with the outcomes already fixed.

Readers never write (docs/TRANSACTIONS.md, "Readers never write"). The files
(:class:`kstream.log.storage.txn_index_reader.TxnIndexReader`) say which transactions are
open below the high watermark; some of those have an outcome that only the
markers are missing for, and a reader applies it *virtually* — in its own view,
with no SQLite write and no marker:

* a transaction decided in the metadata (PrepareCommit / PrepareAbort, or a
  Spark sink task write named by a batch's "Committing" decision) reads as its
  decision: a commit's frames are visible, an abort's hidden;
* an undecided one past its deadline (an Ongoing transaction its own
  ``transaction.timeout.ms`` after it began, a sink task write the cluster's
  ``transaction.max.timeout.ms`` after it began; an orphan row nobody holds,
  whose deadline is 0) reads as aborted: its frames are hidden and the LSO
  moves past it.

This is exactly what the expiry (:mod:`kstream.log.transactions.expiry`) would write
when a writer passes by, so a read-only reader sees what a writing one sees
after the expiry ran. It holds because an outcome, once a reader can see it,
never changes: a decision stands (nobody turns a Prepare state or a Committing
batch back), and nothing past its deadline can be decided any more (the
producer's decision, :meth:`TransactionStore.prepare`, and the sink's,
:meth:`kstream.log.transactions.sink.SinkStore.commit`, refuse it in the SQLite
transaction that would record it; its appends are refused too).

An outcome is applied only to the transaction the files show: the metadata's
open row must name the same first offset (a producer id's earlier transaction,
whose marker is not below the high watermark yet, keeps holding the LSO until
it is), or an earlier one: retention deleted the segments holding the
transaction's first frames (the LSO had passed it: it read as aborted, or the
tierer copied past it), so the files show it open from a later frame. The
metadata is asked only when the files show an open transaction.

"Past its deadline, so aborted" needs one more care: a decision that checked
its deadline in time may still be on its way (its SQLite write transaction not
committed yet, its process stopped). So an undecided holder counts as aborted
only when a read *ordered after every write in flight* found it undecided at
or after its deadline: :meth:`Holds.query` with ``confirm`` takes SQLite's write
lock for that one read (:meth:`Metadata.locked_read`; nothing is written) and
waits at most :data:`CONFIRM_WAIT_MS`. Until a confirmation succeeds (the lock
busy, the database file read-only) the transaction keeps holding the LSO.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from dataclasses import dataclass

from kstream.log.storage.txn_index_reader import TxnIndexReader, TxnState
from kstream.log.transactions.store import PREPARE_ABORT, PREPARE_COMMIT, Holder, TransactionStore

log = logging.getLogger(__name__)

CONFIRM_WAIT_MS = 50  # how long a confirming read waits for SQLite's write lock


@dataclass(frozen=True)
class Holds:
    """The metadata's view of a partition's open transactions, as one query found it: the
    holders, the sink task producer ids a Committing decision names, and, for a confirming
    query, the time (ms) at which no decision could still be on its way."""

    holders: tuple[Holder, ...]
    committing: frozenset[int]
    confirmed_ms: float | None = None

    @classmethod
    def query(cls, store: TransactionStore, topic: str, partition: int, confirm: bool = False) -> Holds:
        """The holders; with ``confirm``, read under the write lock (sqlite3.OperationalError
        when it was not had within :data:`CONFIRM_WAIT_MS`)."""
        if not confirm:
            return cls._read(store, topic, partition, None)
        with store.metadata.locked_read(CONFIRM_WAIT_MS):
            # Any decision not in this read starts after it, at a later clock: past the deadline.
            return cls._read(store, topic, partition, time.time() * 1000)

    @classmethod
    def _read(cls, store: TransactionStore, topic: str, partition: int, confirmed_ms: float | None) -> Holds:
        holders = tuple(store.holders(topic, partition))
        sink_producers = [h.producer_id for h in holders if h.owner is not None and h.owner.startswith("sink=")]
        committing = store.committing_sink_producers(sink_producers) if sink_producers else frozenset()
        return cls(holders, committing, confirmed_ms)

    def _decision(self, h: Holder) -> bool | None:
        if h.state == PREPARE_COMMIT or h.producer_id in self.committing:
            return True
        return False if h.state == PREPARE_ABORT else None

    def outcomes(self) -> dict[int, tuple[int, bool]]:
        """producer id -> (first offset, committed) of the holders whose outcome is fixed (the
        rule in the module docstring); the others are left out."""
        fixed: dict[int, tuple[int, bool]] = {}
        for h in self.holders:
            decision = self._decision(h)
            if decision is None and self.confirmed_ms is not None and h.deadline_ms is not None \
                    and self.confirmed_ms >= h.deadline_ms:
                decision = False
            if decision is not None:
                fixed[h.producer_id] = (h.first_offset, decision)
        return fixed

    def needs_confirmation(self, now_ms: float) -> bool:
        """True when an undecided holder is past its deadline at ``now_ms`` but this query
        cannot tell it aborted (not confirmed at or after the deadline)."""
        return any(self._decision(h) is None and h.deadline_ms is not None and now_ms >= h.deadline_ms
                   and (self.confirmed_ms is None or self.confirmed_ms < h.deadline_ms) for h in self.holders)


def current_holds(store: TransactionStore, topic: str, partition: int, holds: Holds | None = None) -> Holds:
    """``holds`` (or a fresh query), confirmed when a deadline passed that it cannot tell
    about. A confirmation that fails (the lock busy, a read-only file) leaves them as they
    were: the transaction then holds the LSO, as it would for a reader without SQLite."""
    holds = holds or Holds.query(store, topic, partition)
    if not holds.needs_confirmation(time.time() * 1000):
        return holds
    try:
        return Holds.query(store, topic, partition, confirm=True)
    except sqlite3.OperationalError as err:  # not a failure of the read: its view stays the safe one
        log.debug("could not confirm the expired transactions of %s-%s (%s); they hold the LSO", topic, partition,
                  err)
        return holds


def apply_outcomes(state: TxnState, outcomes: dict[int, tuple[int, bool]]) -> TxnState:
    """``state`` with the fixed outcomes applied: such a transaction is no longer open; an
    aborted one covers its frames up to the high watermark (no marker lies below it yet)."""
    resolved = {pid: committed for pid, (first, committed) in outcomes.items()
                if pid in state.open and state.open[pid] >= first}
    if not resolved:
        return state
    open_ = {pid: first for pid, first in state.open.items() if pid not in resolved}
    virtual = tuple((pid, state.open[pid], state.high_watermark) for pid, committed in sorted(resolved.items())
                    if not committed)
    return TxnState(state.high_watermark, open_, state.aborted + virtual)


def visible_state(directory: str, high_watermark: int, store: TransactionStore, topic: str,
                  partition: int) -> TxnState:
    """What a read_committed reader of the replica in ``directory`` sees below the high
    watermark (one look; :class:`kstream.log.transactions.isolation.Isolation` caches the same steps).
    Writes nothing."""
    state = TxnIndexReader(directory).state(high_watermark)
    if state.first_open is None:
        return state
    return apply_outcomes(state, current_holds(store, topic, partition).outcomes())


def last_stable_offset(directory: str, high_watermark: int, store: TransactionStore, topic: str,
                       partition: int) -> int:
    """The LSO a read_committed reader reads up to (what describe and list_offsets show)."""
    return visible_state(directory, high_watermark, store, topic, partition).last_stable_offset

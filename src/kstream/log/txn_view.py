"""What a reader sees of a partition's transactions: the files, with the outcomes already fixed.

Readers never write (docs/TRANSACTIONS.md, "Readers never write"). The files
(:class:`kstream.log.txn_index_reader.TxnIndexReader`) say which transactions are
open below the high watermark; some of those have an outcome that only the
markers are missing for, and a reader applies it *virtually* — in its own view,
with no SQLite write and no marker:

* a transaction decided in the metadata (PrepareCommit / PrepareAbort, or a
  Spark sink task write named by a batch's "Committing" decision) reads as its
  decision: a commit's frames are visible, an abort's hidden;
* an undecided one past its deadline (an Ongoing transaction or a sink task
  write ``transaction.timeout.ms`` after it began; an orphan row nobody holds,
  whose deadline is 0) reads as aborted: its frames are hidden and the LSO
  moves past it.

This is exactly what the expiry (:mod:`kstream.log.txn_expiry`) would write
when a writer passes by, so a read-only reader sees what a writing one sees
after the expiry ran. It holds because an outcome, once a reader can see it,
never changes: a decision stands (nobody turns a Prepare state or a Committing
batch back), and nothing past its deadline can be decided any more (the
producer's decision, :meth:`TransactionStore.prepare`, and the sink's,
:meth:`kstream.log.sink_transactions.SinkStore.commit`, refuse it in the SQLite
transaction that would record it; its appends are refused too).

An outcome is applied only to the transaction the files show: the metadata's
open row must name the same first offset (a producer id's earlier transaction,
whose marker is not below the high watermark yet, keeps holding the LSO until
it is). The metadata is asked only when the files show an open transaction.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kstream.log.transactions import PREPARE_ABORT, PREPARE_COMMIT, Holder, TransactionStore
from kstream.log.txn_index_reader import TxnIndexReader, TxnState


@dataclass(frozen=True)
class Holds:
    """The metadata's view of a partition's open transactions, as one query found it: the
    holders and the sink task producer ids a Committing decision names."""

    holders: tuple[Holder, ...]
    committing: frozenset[int]

    @classmethod
    def query(cls, store: TransactionStore, topic: str, partition: int) -> Holds:
        holders = tuple(store.holders(topic, partition))
        sink_producers = [h.producer_id for h in holders if h.owner is not None and h.owner.startswith("sink=")]
        committing = store.committing_sink_producers(sink_producers) if sink_producers else frozenset()
        return cls(holders, committing)

    def outcomes(self, now_ms: float) -> dict[int, tuple[int, bool]]:
        """producer id -> (first offset, committed) of the holders whose outcome is fixed at
        ``now_ms`` (the rule in the module docstring); the others are left out."""
        fixed: dict[int, tuple[int, bool]] = {}
        for h in self.holders:
            if h.state == PREPARE_COMMIT or h.producer_id in self.committing:
                fixed[h.producer_id] = (h.first_offset, True)
            elif h.state == PREPARE_ABORT or (h.deadline_ms is not None and now_ms >= h.deadline_ms):
                fixed[h.producer_id] = (h.first_offset, False)
        return fixed


def apply_outcomes(state: TxnState, outcomes: dict[int, tuple[int, bool]]) -> TxnState:
    """``state`` with the fixed outcomes applied: such a transaction is no longer open; an
    aborted one covers its frames up to the high watermark (no marker lies below it yet)."""
    resolved = {pid: committed for pid, (first, committed) in outcomes.items() if state.open.get(pid) == first}
    if not resolved:
        return state
    open_ = {pid: first for pid, first in state.open.items() if pid not in resolved}
    virtual = tuple((pid, state.open[pid], state.high_watermark) for pid, committed in sorted(resolved.items())
                    if not committed)
    return TxnState(state.high_watermark, open_, state.aborted + virtual)


def visible_state(directory: str, high_watermark: int, store: TransactionStore, topic: str,
                  partition: int) -> TxnState:
    """What a read_committed reader of the replica in ``directory`` sees below the high
    watermark (one look; :class:`kstream.log.isolation.Isolation` caches the same steps).
    Writes nothing."""
    state = TxnIndexReader(directory).state(high_watermark)
    if state.first_open is None:
        return state
    return apply_outcomes(state, Holds.query(store, topic, partition).outcomes(time.time() * 1000))


def last_stable_offset(directory: str, high_watermark: int, store: TransactionStore, topic: str,
                       partition: int) -> int:
    """The LSO a read_committed reader reads up to (what describe and list_offsets show)."""
    return visible_state(directory, high_watermark, store, topic, partition).last_stable_offset

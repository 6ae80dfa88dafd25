"""The transactional half of the Producer: confluent-kafka's init/begin/commit/abort_transaction.

Kept apart from the producer's hot path: :class:`Producer` delegates here when
``transactional.id`` is set. A transaction spans any partitions of any topics;
its frames carry the transactional producer id and epoch, and it ends with a
COMMIT or ABORT marker on each partition it wrote (:mod:`kstream.log.txn_writer`).
"""

from __future__ import annotations

from kstream.errors import KStreamError
from kstream.log.cluster import Cluster
from kstream.log.transactions import TransactionStore
from kstream.log.txn_writer import TxnWriter, write_markers


class ProducerTransactions:
    """Transaction state of one transactional Producer."""

    def __init__(self, cluster: Cluster, transactional_id: str):
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.writer: TxnWriter | None = None
        self.open = False

    def init(self) -> None:
        """Register with a new epoch (fencing older instances) and abort what they left open."""
        store = TransactionStore(self.cluster.metadata)
        abort_expired(self.cluster, store)
        state, left_open = store.init(self.transactional_id)
        if left_open is not None:
            write_markers(self.cluster, store, sorted(left_open.partitions), left_open.producer_id,
                          left_open.epoch, commit=False)
            store.complete(self.transactional_id, state.epoch, committed=False)
        self.writer = TxnWriter(store, self.transactional_id, state.producer_id, state.epoch)

    def begin(self) -> None:
        writer = self._writer()
        if self.open:
            raise KStreamError("a transaction is already open; commit_transaction() or abort_transaction() it")
        writer.store.begin(self.transactional_id, writer.epoch)
        self.open = True

    def current(self) -> TxnWriter:
        """The open transaction, for a write; raises if there is none."""
        writer = self._writer()
        if not self.open:
            raise KStreamError(f"producer {self.transactional_id!r} is transactional: call begin_transaction() "
                               "before producing")
        return writer

    def end(self, commit: bool) -> None:
        writer = self.current()
        try:
            writer.end(self.cluster, commit)
        finally:
            self.open = False

    def _writer(self) -> TxnWriter:
        if self.writer is None:
            raise KStreamError(f"call init_transactions() first (transactional.id={self.transactional_id!r})")
        return self.writer


def abort_expired(cluster: Cluster, store: TransactionStore) -> int:
    """Abort transactions whose producer went quiet for transaction.timeout.ms (it died
    without ending them), so they stop holding the LSO back. Returns how many."""
    timeout_ms = cluster.config["transaction.timeout.ms"]
    expired = store.expired(timeout_ms)
    for state in expired:
        write_markers(cluster, store, sorted(state.partitions), state.producer_id, state.epoch, commit=False)
        store.complete(state.transactional_id, state.epoch, committed=False)
    return len(expired)

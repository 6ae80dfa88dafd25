"""The transactional half of the Producer: confluent-kafka's init/begin/commit/abort_transaction.

Kept apart from the producer's hot path: :class:`Producer` delegates here when
``transactional.id`` is set. A transaction spans any partitions of any topics;
its frames carry the transactional producer id and epoch, and it ends with a
COMMIT or ABORT marker on each partition it wrote (:mod:`kstream.log.txn_writer`).

``init_transactions()`` and ``begin_transaction()`` also run the expiry
(:mod:`kstream.log.txn_expiry`): transactions of any id past
``transaction.timeout.ms`` are aborted and their producers fenced.
"""

from __future__ import annotations

from kstream.errors import FencedError, KStreamError
from kstream.log.cluster import Cluster
from kstream.log.transactions import TransactionStore
from kstream.log.txn_expiry import try_expire
from kstream.log.txn_writer import TxnWriter, finish

_INIT_ATTEMPTS = 10  # another instance of the same id keeps starting transactions meanwhile


class ProducerTransactions:
    """Transaction state of one transactional Producer."""

    def __init__(self, cluster: Cluster, transactional_id: str):
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.writer: TxnWriter | None = None
        self.open = False

    def init(self) -> None:
        """Register with a new epoch (fencing older instances) and finish what they left
        decided or open (an open transaction is aborted, a decided commit completed)."""
        store = TransactionStore.for_cluster(self.cluster)
        try_expire(store)  # other ids' expired transactions: their failure is not ours
        for _ in range(_INIT_ATTEMPTS):
            left = store.fence(self.transactional_id)
            if left is not None:
                finish(self.cluster, store, left)
            state = store.init(self.transactional_id)
            if state is not None:
                break
        else:
            raise KStreamError(f"init_transactions(): another instance of transactional.id "
                               f"{self.transactional_id!r} keeps opening transactions; stop it first")
        self.writer = TxnWriter(store, self.transactional_id, state.producer_id, state.epoch)
        self.open = False

    def begin(self) -> None:
        writer = self._writer()
        if self.open:
            raise KStreamError("a transaction is already open; commit_transaction() or abort_transaction() it")
        try_expire(writer.store)
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
        """Commit or abort. A failure other than fencing (a marker could not be written) leaves
        the transaction decided: call the same again."""
        writer = self.current()
        try:
            writer.end(self.cluster, commit)
        except FencedError:
            self.open = False
            raise
        self.open = False

    def _writer(self) -> TxnWriter:
        if self.writer is None:
            raise KStreamError(f"call init_transactions() first (transactional.id={self.transactional_id!r})")
        return self.writer

"""The transactional half of the Producer: confluent-kafka's init/begin/commit/abort_transaction.

Kept apart from the producer's hot path: :class:`Producer` delegates here when
``transactional.id`` is set. A transaction spans any partitions of any topics;
its frames carry the transactional producer id and epoch, and it ends with a
COMMIT or ABORT marker on each partition it wrote (:mod:`kstream.log.transactions.writer`).

The producer's ``transaction.timeout.ms`` is its transactions' own timeout, as in
Kafka: ``init_transactions()`` refuses one above the cluster's
``transaction.max.timeout.ms`` (INVALID_TRANSACTION_TIMEOUT) and each
``begin_transaction()`` records it with the transaction. ``init_transactions()``
and ``begin_transaction()`` also run the expiry
(:mod:`kstream.log.transactions.expiry`): transactions of any id past their own
timeout are aborted and their producers fenced.

``send_offsets_to_transaction()`` makes consumer group offsets part of the
open transaction: they are committed with it or not at all
(:mod:`kstream.groups.transactional_offsets`; docs/TRANSACTIONS.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kstream import groups as groups_face
from kstream.errors import FencedError, IllegalGenerationError, InvalidTransactionTimeoutError, KStreamError
from kstream.groups.transactional_offsets import send_offsets, senders_check
from kstream.log.cluster.cluster import Cluster
from kstream.log.transactions.expiry import try_expire
from kstream.log.transactions.store import TransactionStore
from kstream.log.transactions.writer import TxnWriter, finish

if TYPE_CHECKING:
    from kstream.groups.service import ConsumerGroups

_INIT_ATTEMPTS = 10  # another instance of the same id keeps starting transactions meanwhile


class ProducerTransactions:
    """Transaction state of one transactional Producer."""

    def __init__(self, cluster: Cluster, transactional_id: str, timeout_ms: int):
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.timeout_ms = timeout_ms  # transaction.timeout.ms
        self.writer: TxnWriter | None = None
        self.open = False
        self.sent_offsets = False  # the open transaction carries group offsets
        self._groups: ConsumerGroups | None = None
        self._fatal: KStreamError | None = None  # librdkafka: after a fatal error, every call raises it

    def init(self) -> None:
        """Register with a new epoch (fencing older instances) and finish what they left
        decided or open (an open transaction is aborted, a decided commit completed)."""
        self._raise_fatal()
        store = TransactionStore.for_cluster(self.cluster)
        try:
            store.check_timeout(self.transactional_id, self.timeout_ms)  # Kafka refuses it before fencing anyone
        except InvalidTransactionTimeoutError as err:
            self._fatal = err
            raise
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
        writer.store.begin(self.transactional_id, writer.epoch, self.timeout_ms)
        self.open = True
        self.sent_offsets = False

    def send_offsets(self, positions: Any, group_metadata: Any) -> None:
        """Make the consumer's ``positions`` (next offsets to read) for its group part of the
        open transaction: committed with it, or not at all."""
        writer = self.current()
        if self._groups is None:  # the face loads the groups service (deltalake) now: EOS users only
            self._groups = groups_face.ConsumerGroups(self.cluster)
        if send_offsets(self._groups, writer.store, self.transactional_id, writer.epoch, list(positions),
                        group_metadata):
            self.sent_offsets = True
            writer.groups = self._groups

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
        check = None
        if commit and self.sent_offsets:
            assert self._groups is not None
            check = senders_check(self._groups.coordinator, self.transactional_id)
        try:
            writer.end(self.cluster, commit, check)
        except IllegalGenerationError:
            raise  # not fenced: the transaction stays open, for abort_transaction()
        except FencedError:
            self.open = False
            raise
        self.open = False

    def close(self) -> None:
        if self._groups is not None:
            self._groups.close()
            self._groups = None

    def _raise_fatal(self) -> None:
        if self._fatal is not None:
            raise self._fatal

    def _writer(self) -> TxnWriter:
        self._raise_fatal()
        if self.writer is None:
            raise KStreamError(f"call init_transactions() first (transactional.id={self.transactional_id!r})")
        return self.writer

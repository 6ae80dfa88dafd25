"""Which frames a reader may hand out: isolation levels over transactional data.

Both levels hide control frames (transaction markers): they hold an offset but
no user record. ``read_uncommitted`` reads up to the high watermark;
``read_committed`` reads up to the last stable offset (the first offset of the
oldest open transaction, else the high watermark) and skips the frames of
aborted transactions.

The open transactions (so the LSO) and the aborted ones come from the
replica's transaction index files (:class:`kstream.log.storage.txn_index_reader.TxnIndexReader`,
the rule in docs/FORMAT.md), the same files the JVM reader uses; what did not
change since the last call is not read again.

A reader never writes (docs/TRANSACTIONS.md, "Readers never write"): when the
files show a transaction holding the partition, it asks the transaction tables
for the partition's holders (:class:`kstream.log.transactions.view.Holds`), cached
against the metadata's data version (:meth:`Metadata.data_version`) and the
high watermark, and applies the outcomes already fixed — a decided transaction
reads as its decision, one past ``transaction.timeout.ms`` as aborted once a
read ordered after every write in flight confirmed it — in its own view
(:func:`kstream.log.transactions.view.apply_outcomes`). The expiry that writes
them (markers, fencing) is run by writers. SQLite stays the coordinator's truth
(decisions, deadlines, fencing); the reader's view of the log comes from the
files, and SQLite is asked only while they show an open transaction.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from kstream.log.cluster.metadata import DataVersion
from kstream.log.storage import format as fmt
from kstream.log.storage.txn_index_reader import TxnIndexReader, TxnState
from kstream.log.transactions.store import TransactionStore
from kstream.log.transactions.view import Holds, apply_outcomes, current_holds

_CONFIRM_RETRY_SECONDS = 0.2  # after a confirming read did not get SQLite's write lock

READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"


class Isolation:
    """A reader's view of one partition's transactions. Not thread-safe.

    ``directory`` is the replica dir the reader reads (or a callable giving it: the
    leader's, which may move); needed for read_committed. ``generation`` reads the partition
    lock's generation (:meth:`PartitionLock.read_generation`): with it, a round whose HW and
    files did not change reuses the last state read (:meth:`TxnIndexReader.state`). ``store``
    should be built with :meth:`TransactionStore.for_cluster`: without the cluster's timeouts
    it applies decisions only, and an expired transaction holds the LSO. Writes nothing, ever."""

    def __init__(self, level: str, store: TransactionStore | None, topic: str, partition: int,
                 directory: str | Callable[[], str] | None = None,
                 generation: Callable[[], int | None] | None = None):
        self.committed_only = level == READ_COMMITTED
        self.store = store
        self.topic = topic
        self.partition = partition
        self._directory = directory
        self._generation = generation  # the partition lock's generation (lets the files' state be kept)
        self._files: TxnIndexReader | None = None
        self._aborted: tuple[tuple[int, int, int], ...] = ()
        # (data version, the holders, the HW read before the lookup)
        self._holds: tuple[DataVersion, Holds, int] | None = None
        self._confirm_retry_at = 0.0
        self._confirmed_ms: float | None = None  # when a read after every write in flight last looked
        self._last_high_watermark: int | None = None
        self._last_state: TxnState | None = None  # what end_offset() read, for prepare() at that HW
        # The first offset of a transaction open in the last prepare()'s view (read_committed).
        self.first_open: int | None = None

    def _state(self, high_watermark: int, version: DataVersion | None = None) -> TxnState:
        """What this reader sees below the HW: the files' state with the fixed outcomes applied
        (the holders asked of SQLite only while the files show an open transaction)."""
        directory = self._directory() if callable(self._directory) else self._directory
        assert directory is not None, "a read_committed Isolation needs the replica dir it reads"
        if self._files is None or self._files.directory != directory:
            self._files = TxnIndexReader(directory)
        state = self._files.state(high_watermark, None if self._generation is None else self._generation())
        if state.first_open is None or self.store is None:
            return state
        return apply_outcomes(state, self._holders(high_watermark, version).outcomes())

    def end_offset(self, high_watermark: int, version: DataVersion | None = None) -> int:
        """How far this reader may read now: the HW, or under read_committed the LSO it sees
        (a transaction whose outcome is fixed no longer holds it). With ``version``, the
        metadata's data version, SQLite is asked again only when it changed. Writes nothing."""
        if not self.committed_only:
            return high_watermark
        self._last_high_watermark = high_watermark
        state = self._last_state = self._state(high_watermark, version)
        return state.last_stable_offset

    def _holders(self, high_watermark: int, version: DataVersion | None) -> Holds:
        """The partition's holders (SQLite). The cached ones serve while the data version is the
        same and the HW has not grown past the one read before the lookup (a transaction that
        began since may have a frame below a newer HW)."""
        assert self.store is not None
        cached = self._holds
        if version is None or cached is None or cached[0] != version or high_watermark > cached[2]:
            holds = Holds.query(self.store, self.topic, self.partition)
            if self._confirmed_ms is not None:
                # A confirmation stays true: a holder undecided now with a deadline before it was
                # undecided then too (decisions are never taken back; a newer one began later).
                holds = dataclasses.replace(holds, confirmed_ms=self._confirmed_ms)
            self._holds = None if version is None else (version, holds, high_watermark)
        else:
            holds = cached[1]
        if holds.needs_confirmation(time.time() * 1000) and time.monotonic() >= self._confirm_retry_at:
            confirmed = current_holds(self.store, self.topic, self.partition, holds)
            if confirmed is holds:  # not confirmed (the lock busy): try again a little later
                self._confirm_retry_at = time.monotonic() + _CONFIRM_RETRY_SECONDS
            else:
                self._confirmed_ms = confirmed.confirmed_ms
                if self._holds is not None:
                    self._holds = (self._holds[0], confirmed, self._holds[2])
            holds = confirmed
        return holds

    def prepare(self, from_offset: int, version: DataVersion | None = None, high_watermark: int | None = None
                ) -> None:
        """Load the aborted transactions that may cover frames from ``from_offset`` on, as the
        files show them below ``high_watermark`` (default: the one the last :meth:`end_offset`
        read). It must be at least the HW the read's end was planned with: a transaction
        below that end may have its marker between the end and that HW. ``version`` serves as
        in :meth:`end_offset` (for the holders, when the files show an open transaction)."""
        if not self.committed_only:
            return
        if high_watermark is None:
            high_watermark = self._last_high_watermark
        assert high_watermark is not None, "prepare() needs a high watermark (or an end_offset() first)"
        state = self._last_state  # the fetch round's end_offset() just read the files at this HW
        if state is None or state.high_watermark != high_watermark:
            state = self._state(high_watermark, version)
        self._last_state = None  # once: the next round reads the files again
        self._aborted = tuple(a for a in state.aborted if a[2] >= from_offset)
        self.first_open = state.first_open

    def visible(self, header: fmt.FrameHeader) -> bool:
        if header.attributes & fmt.CONTROL:
            return False
        if self.committed_only and header.attributes & fmt.TRANSACTIONAL:
            for producer_id, first, last in self._aborted:
                if producer_id == header.producer_id and first <= header.base_offset < last:
                    return False
        return True

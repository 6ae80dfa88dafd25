"""Which frames a reader may hand out: isolation levels over transactional data.

Both levels hide control frames (transaction markers): they hold an offset but
no user record. ``read_uncommitted`` reads up to the high watermark;
``read_committed`` reads up to the last stable offset (the first offset of the
oldest open transaction, else the high watermark) and skips the frames of
aborted transactions.

The open transactions (so the LSO) and the aborted ones come from the
replica's transaction index files (:class:`kstream.log.txn_index_reader.TxnIndexReader`,
the rule in docs/FORMAT.md), the same files the JVM reader uses; what did not
change since the last call is not read again.

A read_committed reader enforces ``transaction.timeout.ms`` (DESIGN §9): when
the files show a transaction holding the partition, it asks the transaction
tables for the earliest deadline of the partition's holders (an orphan row's is
0), cached against the metadata's data version (:meth:`Metadata.data_version`)
and the high watermark; past it, it runs the expiry
(:meth:`TransactionStore.expire`), which aborts the transaction and fences its
producer. A round writes nothing to SQLite unless a deadline passed; a failed
expiry (say, a marker that cannot reach min.insync.replicas) is retried at most
once a second. SQLite stays the coordinator's truth (decisions, deadlines,
fencing); only the reader's view of the log comes from the files.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kstream.log import format as fmt
from kstream.log.metadata import DataVersion
from kstream.log.transactions import TransactionStore
from kstream.log.txn_index_reader import TxnIndexReader, TxnState

_EXPIRY_RETRY_SECONDS = 1.0

READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"


class Isolation:
    """A reader's view of one partition's transactions. Not thread-safe.

    ``directory`` is the replica dir the reader reads (or a callable giving it: the
    leader's, which may move); needed for read_committed."""

    def __init__(self, level: str, store: TransactionStore | None, topic: str, partition: int,
                 directory: str | Callable[[], str] | None = None):
        self.committed_only = level == READ_COMMITTED
        self.store = store
        self.topic = topic
        self.partition = partition
        self._directory = directory
        self._files: TxnIndexReader | None = None
        self._aborted: tuple[tuple[int, int, int], ...] = ()
        # (data version, earliest deadline, the HW read before the lookup)
        self._deadline: tuple[DataVersion, int | None, int] | None = None
        self._expiry_retry_at = 0.0
        self._last_high_watermark: int | None = None
        self._last_state: TxnState | None = None  # what end_offset() read, for prepare() at that HW

    def _state(self, high_watermark: int) -> TxnState:
        directory = self._directory() if callable(self._directory) else self._directory
        assert directory is not None, "a read_committed Isolation needs the replica dir it reads"
        if self._files is None or self._files.directory != directory:
            self._files = TxnIndexReader(directory)
        return self._files.state(high_watermark)

    def end_offset(self, high_watermark: int, version: DataVersion | None = None) -> int:
        """How far this reader may read now: the HW, or under read_committed the LSO the files
        show. Expires the transaction holding the partition when its deadline passed (asked of
        SQLite only then; with ``version``, the metadata's data version, only when it changed)."""
        if not self.committed_only:
            return high_watermark
        self._last_high_watermark = high_watermark
        state = self._state(high_watermark)
        if state.first_open is not None and self.store is not None:
            deadline = self._earliest_deadline(high_watermark, version)
            if deadline is not None and time.time() * 1000 >= deadline and self._expire():
                state = self._state(high_watermark)
        self._last_state = state
        return state.last_stable_offset

    def _earliest_deadline(self, high_watermark: int, version: DataVersion | None) -> int | None:
        """The earliest deadline of the partition's open transactions (SQLite). The cached one
        serves while the data version is the same and the HW has not grown past the one read
        before the lookup (a transaction that began since may have a frame below a newer HW)."""
        assert self.store is not None
        cached = self._deadline
        if version is None or cached is None or cached[0] != version or high_watermark > cached[2]:
            _, deadline = self.store.lso_hold(self.topic, self.partition)
            self._deadline = None if version is None else (version, deadline, high_watermark)
            return deadline
        return cached[1]

    def _expire(self) -> bool:
        """Run the expiry (a reader does not fail for a writer's marker: a failure is retried at
        most once a second); True if it ran."""
        from kstream.log.txn_expiry import try_expire  # writes markers: partition code, loaded late

        assert self.store is not None
        if self.store.cluster is None or time.monotonic() < self._expiry_retry_at:
            return False
        self._deadline = None
        if not try_expire(self.store):
            self._expiry_retry_at = time.monotonic() + _EXPIRY_RETRY_SECONDS
        return True

    def prepare(self, from_offset: int, version: DataVersion | None = None, high_watermark: int | None = None
                ) -> None:
        """Load the aborted transactions that may cover frames from ``from_offset`` on, as the
        files show them below ``high_watermark`` (default: the one the last :meth:`end_offset`
        read). It must be at least the HW the read's end was planned with: a transaction
        below that end may have its marker between the end and that HW. ``version`` is not
        needed any more (the files tell what changed) and kept for the callers."""
        if not self.committed_only:
            return
        if high_watermark is None:
            high_watermark = self._last_high_watermark
        assert high_watermark is not None, "prepare() needs a high watermark (or an end_offset() first)"
        state = self._last_state  # the fetch round's end_offset() just read the files at this HW
        if state is None or state.high_watermark != high_watermark:
            state = self._state(high_watermark)
        self._last_state = None  # once: the next round reads the files again
        self._aborted = tuple(a for a in state.aborted if a[2] >= from_offset)

    def visible(self, header: fmt.FrameHeader) -> bool:
        if header.attributes & fmt.CONTROL:
            return False
        if self.committed_only and header.attributes & fmt.TRANSACTIONAL:
            for producer_id, first, last in self._aborted:
                if producer_id == header.producer_id and first <= header.base_offset < last:
                    return False
        return True

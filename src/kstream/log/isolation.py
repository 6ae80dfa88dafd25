"""Which frames a reader may hand out: isolation levels over transactional data.

Both levels hide control frames (transaction markers): they hold an offset but
no user record. ``read_uncommitted`` reads up to the high watermark;
``read_committed`` reads up to the last stable offset (the first offset of the
oldest open transaction, else the high watermark) and skips the frames of
aborted transactions.

What a reader asks the transaction tables is cached against the metadata's
data version (:meth:`Metadata.data_version`), which a fetch round reads once,
and the high watermark read before the lookup: while nobody commits and no new
frame arrives, a round asks SQLite nothing per partition. (A transaction that
began after the round read the version has no frame below the HW seen at the
lookup, since it joins the partition before its first frame; a newer HW may
hold one, so a grown HW means a fresh lookup.)

A read_committed reader enforces ``transaction.timeout.ms`` (DESIGN §9): when
the partition is held by a transaction whose deadline passed, or by an orphan
row, it runs the expiry (:meth:`TransactionStore.expire`), which aborts it and
fences its producer. It can tell from the cached rows, so a round writes
nothing to SQLite unless a deadline passed; a failed expiry (say, a marker that
cannot reach min.insync.replicas) is retried at most once a second.
"""

from __future__ import annotations

import time

from kstream.log import format as fmt
from kstream.log.metadata import DataVersion
from kstream.log.transactions import TransactionStore

_EXPIRY_RETRY_SECONDS = 1.0

READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"


class Isolation:
    """A reader's view of one partition's transactions. Not thread-safe."""

    def __init__(self, level: str, store: TransactionStore | None, topic: str, partition: int):
        self.committed_only = level == READ_COMMITTED
        self.store = store
        self.topic = topic
        self.partition = partition
        self._aborted: list[tuple[int, int, int]] = []
        # (data version, first open offset, earliest deadline, the HW read before the lookup)
        self._hold: tuple[DataVersion, int | None, int | None, int] | None = None
        self._aborted_from: tuple[DataVersion, int] | None = None
        self._expiry_retry_at = 0.0

    def end_offset(self, high_watermark: int, version: DataVersion | None = None) -> int:
        """How far this reader may read now. With ``version`` (the metadata's data version),
        the open transactions are looked up only when it changed. Expires the transaction
        holding the partition when its deadline passed (see the module docstring)."""
        if not self.committed_only or self.store is None:
            return high_watermark
        first_open, deadline = self._lso_hold(high_watermark, version)
        if deadline is not None and time.time() * 1000 >= deadline and self._expire():
            first_open, deadline = self._lso_hold(high_watermark, None)
        return high_watermark if first_open is None else min(high_watermark, first_open)

    def _lso_hold(self, high_watermark: int, version: DataVersion | None) -> tuple[int | None, int | None]:
        """The cached lookup serves while the data version is the same and the HW has not
        grown past the one read before the lookup: a transaction that began after the round
        read the version has no frame below that HW (it joins the partition before its first
        frame), but may have one below a newer HW."""
        assert self.store is not None
        hold = self._hold
        if version is None or hold is None or hold[0] != version or high_watermark > hold[3]:
            first_open, deadline = self.store.lso_hold(self.topic, self.partition)
            self._hold = None if version is None else (version, first_open, deadline, high_watermark)
            return first_open, deadline
        return hold[1], hold[2]

    def _expire(self) -> bool:
        """Run the expiry (a reader does not fail for a writer's marker: a failure is retried at
        most once a second); True if it ran."""
        from kstream.log.txn_expiry import try_expire  # writes markers: partition code, loaded late

        assert self.store is not None
        if self.store.cluster is None or time.monotonic() < self._expiry_retry_at:
            return False
        self._hold = None
        if not try_expire(self.store):
            self._expiry_retry_at = time.monotonic() + _EXPIRY_RETRY_SECONDS
        return True

    def prepare(self, from_offset: int, version: DataVersion | None = None) -> None:
        """Load the aborted transactions that may cover frames from ``from_offset`` on
        (kept while ``version`` is unchanged: a list loaded from an earlier offset covers more)."""
        if not self.committed_only or self.store is None:
            return
        cached = self._aborted_from
        if version is not None and cached is not None and cached[0] == version and cached[1] <= from_offset:
            return
        self._aborted = self.store.aborted(self.topic, self.partition, from_offset)
        self._aborted_from = None if version is None else (version, from_offset)

    def visible(self, header: fmt.FrameHeader) -> bool:
        if header.attributes & fmt.CONTROL:
            return False
        if self.committed_only and header.attributes & fmt.TRANSACTIONAL:
            for producer_id, first, last in self._aborted:
                if producer_id == header.producer_id and first <= header.base_offset < last:
                    return False
        return True

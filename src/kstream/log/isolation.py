"""Which frames a reader may hand out: isolation levels over transactional data.

Both levels hide control frames (transaction markers): they hold an offset but
no user record. ``read_uncommitted`` reads up to the high watermark;
``read_committed`` reads up to the last stable offset (the first offset of the
oldest open transaction, else the high watermark) and skips the frames of
aborted transactions.

What a reader asks the transaction tables is cached against the metadata's
data version (:meth:`Metadata.data_version`), which a fetch round reads once:
while nobody commits, a round asks SQLite nothing per partition.
"""

from __future__ import annotations

from kstream.log import format as fmt
from kstream.log.metadata import DataVersion
from kstream.log.transactions import TransactionStore

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
        self._first_open: tuple[DataVersion, int | None] | None = None
        self._aborted_from: tuple[DataVersion, int] | None = None

    def end_offset(self, high_watermark: int, version: DataVersion | None = None) -> int:
        """How far this reader may read now. With ``version`` (the metadata's data version),
        the open transactions are looked up only when it changed."""
        if not self.committed_only or self.store is None:
            return high_watermark
        if version is None or self._first_open is None or self._first_open[0] != version:
            first_open = self.store.first_open_offset(self.topic, self.partition)
            self._first_open = None if version is None else (version, first_open)
        else:
            first_open = self._first_open[1]
        return high_watermark if first_open is None else min(high_watermark, first_open)

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

"""Which frames a reader may hand out: isolation levels over transactional data.

Both levels hide control frames (transaction markers): they hold an offset but
no user record. ``read_uncommitted`` reads up to the high watermark;
``read_committed`` reads up to the last stable offset (the first offset of the
oldest open transaction, else the high watermark) and skips the frames of
aborted transactions.
"""

from __future__ import annotations

from kstream.log import format as fmt
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

    def end_offset(self, high_watermark: int) -> int:
        """How far this reader may read now (and refresh what was aborted below it)."""
        if not self.committed_only or self.store is None:
            return high_watermark
        first_open = self.store.first_open_offset(self.topic, self.partition)
        end = high_watermark if first_open is None else min(high_watermark, first_open)
        return end

    def prepare(self, from_offset: int) -> None:
        """Load the aborted transactions that may cover frames from ``from_offset`` on."""
        if self.committed_only and self.store is not None:
            self._aborted = self.store.aborted(self.topic, self.partition, from_offset)

    def visible(self, header: fmt.FrameHeader) -> bool:
        if header.attributes & fmt.CONTROL:
            return False
        if self.committed_only and header.attributes & fmt.TRANSACTIONAL:
            for producer_id, first, last in self._aborted:
                if producer_id == header.producer_id and first <= header.base_offset < last:
                    return False
        return True

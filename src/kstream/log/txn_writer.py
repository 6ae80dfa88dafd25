"""One transactional producer's view of its open transaction: fencing and markers.

Used by the Producer (and later the Spark sink). It checks the producer's epoch
under each partition's lock before a transactional frame is appended, records
the partitions the transaction writes, and ends the transaction by writing a
COMMIT or ABORT control frame to each of them, then completing it in the
metadata. Markers are always fsynced before the transaction counts as ended.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kstream.log import format as fmt
from kstream.log.partition_log import EncodedBatch
from kstream.log.records import PayloadCodec, batch_from_records
from kstream.log.transactions import TransactionStore

if TYPE_CHECKING:
    from kstream.log.cluster import Cluster
    from kstream.log.partition import Partition

COMMIT_MARKER = b"COMMIT"
ABORT_MARKER = b"ABORT"


class TxnWriter:
    """The open transaction of one transactional id in this process. Not thread-safe."""

    def __init__(self, store: TransactionStore, transactional_id: str, producer_id: int, epoch: int):
        self.store = store
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.epoch = epoch
        self.partitions: set[tuple[str, int]] = set()

    def before_append_locked(self, partition: Partition) -> None:
        """Fence a stale producer; join the partition before the transaction's first frame there."""
        self.store.check_epoch(self.transactional_id, self.epoch)
        key = (partition.topic, partition.partition)
        if key not in self.partitions:
            self.store.add_partition(self.transactional_id, self.epoch, self.producer_id, partition.topic,
                                     partition.partition, partition.log_end_offset_locked())
            self.partitions.add(key)

    def end(self, cluster: Cluster, commit: bool) -> None:
        """Write the markers, then complete the transaction (commit or abort)."""
        self.store.check_epoch(self.transactional_id, self.epoch)
        write_markers(cluster, self.store, sorted(self.partitions), self.producer_id, self.epoch, commit)
        self.store.complete(self.transactional_id, self.epoch, commit)
        self.partitions.clear()


def write_markers(cluster: Cluster, store: TransactionStore, partitions: list[tuple[str, int]],
                  producer_id: int, epoch: int, commit: bool) -> None:
    """A COMMIT/ABORT control frame on each partition, fsynced, then the partition is released."""
    marker = batch_from_records([COMMIT_MARKER if commit else ABORT_MARKER], None, None, None)
    frame = EncodedBatch(PayloadCodec().encode(marker), 1, 0, 0, fmt.CONTROL | fmt.TRANSACTIONAL,
                         producer_id, epoch)  # the same bytes on every partition
    for topic, number in partitions:
        handle = cluster.partition(topic, number)
        try:
            result = handle.append(frame, acks="all")
            store.end_partition(topic, number, producer_id, result.base_offset, aborted=not commit)
        finally:
            handle.close()


"""What a partition asks of a transactional writer before it appends a transactional frame.

:meth:`kstream.log.cluster.partition.Partition.append` takes an optional guard and calls it under
the partition lock, before the frame is written: the transaction layer (above this one) passes
its writer (:class:`kstream.log.transactions.writer.TxnWriter`: fencing, joining the partition)
or its marker guard. The partition knows only this shape, never the transaction code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kstream.log.cluster.partition import Partition


class AppendGuard(Protocol):
    """What Partition.append calls under the partition lock before a transactional frame."""

    def before_append_locked(self, partition: Partition) -> None: ...

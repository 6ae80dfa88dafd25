"""One replica dir's segment files, for its writer (:class:`~kstream.log.storage.partition_log.PartitionLog`):
opening them hooked to the partition lock and the recovery point, keeping their
transaction indexes derivable, and cutting the log back.

* Every segment opened here is *hooked*: a change to its files first bumps the
  lock's generation (other writers then re-check), and its recovery asks the
  recovery point how far the segment is known fsynced (a bad frame below that
  is corruption, never a torn tail).
* Transaction indexes are derived data: a sealed segment without one (lost, or
  written by an older version) gets it rebuilt from its frames on open; the
  active one's entries past the recovery point are derived again; a missing
  active index is rebuilt from the frames when next used
  (:func:`kstream.log.storage.txn_index.recover`).
* :meth:`SegmentFiles.cut` removes whole segments, or cuts the last one kept at
  a frame boundary, moving the cleaner's checkpoint and the recovery point back
  first (files are replaced or deleted, never shrunk in place).

Not thread-safe: the caller holds the partition lock. ``OSError`` is raised as
is (the writer turns it into LogDirOfflineError).
"""

from __future__ import annotations

import errno
import os

from kstream.errors import InvalidRecordError
from kstream.log.storage import format as fmt
from kstream.log.storage import txn_index
from kstream.log.storage.cleaner_checkpoint import lower_checkpoint
from kstream.log.storage.disk import fsync_dir
from kstream.log.storage.leader_epochs import LeaderEpochCache
from kstream.log.storage.lock import PartitionLock
from kstream.log.storage.log_config import LogConfig
from kstream.log.storage.records import Payload
from kstream.log.storage.recovery_point import RecoveryPointFile, Unreadable
from kstream.log.storage.retention import list_segment_bases
from kstream.log.storage.segment import Segment


class SegmentFiles:
    """The segments of the replica in ``directory``, hooked to its ``lock`` and ``points``."""

    __slots__ = ("_lock", "_points", "config", "directory")

    def __init__(self, directory: str, config: LogConfig, lock: PartitionLock, points: RecoveryPointFile):
        self.directory = directory
        self.config = config
        self._lock = lock
        self._points = points

    def open(self, base_offset: int) -> Segment:
        """The existing segment at ``base_offset`` (not recovered yet)."""
        return self._hooked(Segment(self.directory, base_offset, self.config.index_interval_bytes))

    def create(self, base_offset: int, sync_dir: bool = True) -> Segment:
        """A new, empty segment at ``base_offset`` (``sync_dir``: its name made durable now)."""
        return self._hooked(Segment.create(self.directory, base_offset, self.config.index_interval_bytes,
                                           sync_dir=sync_dir))

    def _hooked(self, segment: Segment) -> Segment:
        segment.before_change = self._lock.bump_generation
        segment.durable_position = self._durable_position
        return segment

    def _durable_position(self, segment_base: int) -> int | None:
        """Bytes of the segment known fsynced: a bad frame below this is corruption.
        None when the recovery point is unreadable (nothing is known)."""
        point = self._points.read()
        if isinstance(point, Unreadable):
            return None
        if point is None or point.segment_base < segment_base:
            return 0
        return point.position if point.segment_base == segment_base else 1 << 62

    # -- transaction indexes (derived from the frames) ------------------------------

    def recover_txn_indexes(self, bases: list[int], active: Segment,
                            point: fmt.RecoveryPoint | Unreadable | None) -> None:
        """On open: a sealed segment without a transaction index (lost, or written by an older
        version) gets one rebuilt from its frames; the active one's entries past the recovery
        point are derived again from its frames (see txn_index.recover)."""
        for base in bases[:-1]:
            if not os.path.exists(txn_index.txn_index_path(self.directory, base)):
                sealed = self.open(base)
                try:
                    txn_index.recover(sealed.txn_index, sealed.fd, sealed.file_size(), -1, None,
                                      self._lock.bump_generation)
                finally:
                    sealed.close()
        trusted = None
        if isinstance(point, fmt.RecoveryPoint) and point.segment_base == active.base_offset:
            trusted = (point.position, point.next_offset)
        txn_index.recover(active.txn_index, active.fd, active.size, active.next_offset, trusted,
                          self._lock.bump_generation)

    def rebuild_txn_index(self, active: Segment) -> None:
        """The active segment's transaction index, gone under us, rebuilt (durably) from its frames."""
        txn_index.recover(active.txn_index, active.fd, active.size, active.next_offset, None,
                          self._lock.bump_generation)

    # -- cutting back --------------------------------------------------------------------

    def cut(self, offset: int, restart: bool) -> None:
        """Make ``offset`` (a frame boundary) the log's end: delete the segments past it and cut
        the last one kept; ``restart``: delete every segment and start empty at ``offset``.
        The caller closed its active segment and bumped the lock's generation."""
        # First, durably: the cleaner's end comes down to the new log end, so the offsets
        # written again past it never count as cleaned (cleaner_checkpoint; a crash right after
        # leaves it merely lower than it could be).
        lower_checkpoint(self.directory, offset, "the log is cut back" if not restart else "the log restarts")
        bases = list_segment_bases(self.directory)
        keep = [] if restart else [b for b in bases if b < offset]
        if not keep:
            for base in bases:
                self.open(base).delete()
            Segment.create(self.directory, offset, self.config.index_interval_bytes).close()
            self._points.write((offset, 0, offset))
            LeaderEpochCache.load(self.directory, rebuild=False).truncate_from_end(offset)
            return
        last = keep[-1]
        point = self._points.read()
        if not isinstance(point, fmt.RecoveryPoint) or point.next_offset > offset:
            # Moves back, before anything is cut: what is left is re-checked at the next open,
            # and no reader trusts a transaction index entry of the frames being cut.
            self._points.write((last, 0, last))
        for base in bases:
            if base not in keep:
                self.open(base).delete()
        segment = self.open(last)
        segment.cut_at_offset(offset)
        segment.close()
        fsync_dir(self.directory)
        LeaderEpochCache.load(self.directory).truncate_from_end(offset)


def txn_entry(header: bytes, payload: Payload) -> fmt.TxnIndexEntry | None:
    """The transaction index entry of a frame about to be written (None: not transactional).
    A control frame must be a COMMIT or ABORT marker: anything else is refused unwritten."""
    fields = fmt.unpack_header(header)
    kind = fmt.txn_entry_kind(fields.attributes)
    if kind is None:
        return None
    if kind == 0:
        kind = fmt.marker_kind(payload.to_bytes(), payload.schema_length)
        if kind is None:
            raise InvalidRecordError("a transactional control frame must be a COMMIT or ABORT marker "
                                     "(one record whose value is b'COMMIT' or b'ABORT'); nothing was written")
    return fmt.TxnIndexEntry(kind, fields.producer_id, fields.base_offset)


def missing(directory: str) -> OSError:
    """The error of a replica dir or segment file gone: a failed disk."""
    return OSError(errno.ENOENT, "replica directory or segment file is missing (a failed disk?)",
                   directory)

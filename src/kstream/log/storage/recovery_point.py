"""One replica's recovery point file: the last position of its log known fsynced.

The file holds two checksummed slots (layout in :mod:`kstream.log.storage.format`).
It is created whole like Kafka's checkpoints (.tmp, fsync, rename, fsync the
directory); after that a new point overwrites the older slot in place and is
fdatasynced, so a torn write leaves the other slot, the previous point. It is
durable before a flush returns, so after a power loss it never names less than
what was acknowledged: a bad frame below it is corruption, never a torn tail.

:meth:`RecoveryPointFile.read` tells three cases apart: no file (nothing was ever
flushed: None), a damaged file (no valid slot: :data:`UNREADABLE`, nothing is
known), and a point. Writes are made by the replica's :class:`PartitionLog`
under the partition lock; reads take no lock. ``OSError`` is raised as is (the
caller turns it into LogDirOfflineError).
"""

from __future__ import annotations

import logging
import os

from kstream.log.storage import disk
from kstream.log.storage import format as fmt
from kstream.log.storage.disk import fsync_dir

log = logging.getLogger(__name__)


class Unreadable:
    """A recovery point file that is there but torn or garbage."""


UNREADABLE = Unreadable()

Point = tuple[int, int, int]  # (segment base offset, position in it, next offset)


class RecoveryPointFile:
    """The recovery point file of the replica in ``directory``."""

    __slots__ = ("directory", "path")

    def __init__(self, directory: str):
        self.directory = directory
        self.path = os.path.join(directory, fmt.RECOVERY_POINT_FILE)

    def read(self) -> fmt.RecoveryPoint | Unreadable | None:
        """The recovery point; None when there is none (nothing was ever flushed);
        ``UNREADABLE`` when the file is damaged (no valid slot)."""
        try:
            with open(self.path, "rb") as f:
                raw = f.read(fmt.RECOVERY_POINT_FILE_BYTES + 1)
        except FileNotFoundError:
            return None
        found = fmt.unpack_recovery_point_file(raw)
        if found is None:
            log.warning("%s is damaged or not a recovery point (%d bytes); treating every frame of "
                        "the active segment as possibly fsynced", self.path, len(raw))
            return UNREADABLE
        return found[1]

    def advance(self, point: Point) -> None:
        """Record that the log is fsynced up to ``point``; it only ever moves forward.

        Caller holds the lock (so two flushes cannot move it backwards) and has
        fsynced up to ``point``. Durable on return, so it covers every frame the
        caller then acknowledges; a bad frame below it is corruption, not a torn tail.
        """
        self.write(point, only_forward=True)

    def write(self, point: Point, only_forward: bool = False) -> None:
        """Make ``point`` the durable recovery point now. Caller holds the lock."""
        fd = self.stage(point, only_forward)
        if fd is not None:
            try:
                disk.fdatasync(fd)
            finally:
                os.close(fd)

    def stage(self, point: Point, only_forward: bool) -> int | None:
        """Write ``point`` as the recovery point (layout in format.py); caller holds the lock.

        An intact file gets ``point`` in its older slot, written in place: the returned
        descriptor must then be fdatasynced (it may be, outside the lock) and closed
        before the point counts; should that write tear, the other slot keeps the
        previous point. With ``only_forward`` and the file already at or past ``point``
        nothing is written, but the descriptor is returned all the same: what the file
        holds may be another writer's point not yet fdatasynced (it stages under the
        lock and syncs outside it, and may die in between), so it must be synced before
        ``point`` counts. A missing or damaged file is replaced whole (.tmp, fsync,
        rename over, fsync the directory) and None is returned.
        """
        new = fmt.RecoveryPoint(*point)
        path = self.path
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            fd = -1
        if fd >= 0:
            keep_open = False
            try:
                found = fmt.unpack_recovery_point_file(os.pread(fd, fmt.RECOVERY_POINT_FILE_BYTES + 1, 0))
                if found is not None:
                    sequence, current = found
                    if only_forward and current[:2] >= new[:2]:
                        # Already at or past ``point``, but perhaps only in the page cache:
                        # another writer stages under the lock and fdatasyncs outside it, and
                        # may be killed in between. The caller syncs it before ``point`` counts
                        # (nothing to write to the disk when that writer did sync it).
                        keep_open = True
                        return fd
                    sequence += 1
                    slot = fmt.pack_recovery_slot(sequence, new)
                    if os.pwrite(fd, slot, (sequence % 2) * fmt.RECOVERY_POINT_SLOT_BYTES) != len(slot):
                        raise OSError(f"short write to {path}")
                    keep_open = True
                    return fd
            finally:
                if not keep_open:
                    os.close(fd)
        tmp = path + fmt.TMP_SUFFIX
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            raw = fmt.pack_recovery_point_file(new)
            if os.write(fd, raw) != len(raw):
                raise OSError(f"short write to {tmp}")
            disk.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, path)
        fsync_dir(self.directory)
        return None

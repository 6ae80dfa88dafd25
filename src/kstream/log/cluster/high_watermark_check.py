"""The high watermark readers see: the published one, checked once per handle after a possible
power loss.

The HW is published in the partition's lock file, which is never fsynced:
after a power loss it may be gone, zeroed, or older than the acknowledged
data. :class:`HighWatermarkCheck` checks it, on a handle's first read,
against the in-sync replicas' log ends and recovery points (fsynced, so
never an acks=all record a power loss may still take away) and uses the
least durable end instead when it does not fit, until a writer publishes a
new one. Before it trusts the recovery points it fdatasyncs them (a writer
killed between overwriting one and syncing it leaves a point only the page
cache holds). The rule for a lost HW lives here and nowhere else.

Takes no lock and writes nothing to the log; not thread-safe alone (one per
Partition handle, whose readers may race it harmlessly: both compute the same).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from kstream.errors import KStreamError
from kstream.log.storage import disk
from kstream.log.storage import format as fmt
from kstream.log.storage.log_reader import LogReader

if TYPE_CHECKING:
    from kstream.log.cluster.partition import Partition

log = logging.getLogger(__name__)


class HighWatermarkCheck:
    """One partition handle's check of the published HW (see the module docstring)."""

    __slots__ = ("_checked",)

    def __init__(self) -> None:
        self._checked: tuple[int | None, int | None] | None = None  # (stored, rebuilt) at first read

    def read(self, partition: Partition) -> int | None:
        """Offset below which every in-sync replica has the data (None: nothing written yet).

        The HW is published in the lock file, which is never fsynced: after a power loss
        it may be gone, zeroed, or older than the acknowledged data. So the first call
        on this handle checks it against the in-sync replicas' log ends (each of them
        fsynced every acks=all batch) and, if it is missing, below their minimum, or past
        the leader's log end, uses that minimum instead until a writer publishes a new one.
        Takes no lock and writes nothing.
        """
        stored = partition.lock.read_high_watermark()
        if self._checked is None:
            self._checked = (stored, self._rebuilt(partition, stored))
        seen, rebuilt = self._checked
        if stored == seen or stored is None:
            return rebuilt
        # A writer published since. A rebuilt value above it (durable, not yet published by a
        # writer between its fsync and its publish) was handed out already: never go back.
        return stored if rebuilt is None else max(stored, rebuilt)

    def _rebuilt(self, partition: Partition, stored: int | None, synced: bool = False) -> int | None:
        """``stored`` when the replicas' logs agree with it, else the least durable end (the
        recovery point, which is fsynced: never an acks=all record a power loss may still
        take away) of the in-sync replicas whose dirs are there (read without a lock).

        Before it uses the recovery points it fdatasyncs them and reads them again: a writer
        killed between overwriting a slot and fdatasyncing it leaves a point that only the
        page cache holds, over frames it did fsync. Once synced, a power loss can no longer
        take back what a reader is about to see (docs/RELIABILITY.md)."""
        ends = {}
        durable = {}
        for replica in partition.info.isr:
            directory = partition.replica_dirs.get(replica)
            if directory is None or not os.path.isdir(directory):
                continue  # a missing dir is a failed disk: it holds nothing to count
            try:
                point = partition.logs[replica].recovery_point()
            except OSError as err:
                log.warning("cannot read the recovery point of %s to check the high watermark: %s",
                            directory, err)
                continue
            fsynced = point.next_offset if isinstance(point, fmt.RecoveryPoint) else None
            reader = LogReader(directory, check_crcs=False)
            try:
                end = reader.log_end_offset()
            except (KStreamError, OSError) as err:
                if fsynced is None:
                    log.warning("cannot read the log end of %s to check the high watermark: %s",
                                directory, err)
                    continue
                # A bad frame in the tail, as a power loss leaves one in what was not fsynced (the
                # next writer cuts it there). Below the recovery point every frame was fsynced.
                log.warning("%s: %s; readers go up to the recovery point %d", directory, err, fsynced)
                end = fsynced
            finally:
                reader.close()
            ends[replica] = end
            if point is None:
                durable[replica] = 0
            else:
                durable[replica] = min(fsynced, end) if fsynced is not None else end
        leader_end = ends.get(partition.info.leader)
        if leader_end is None:
            return stored
        floor = min(durable.values())
        if stored is not None and floor <= stored <= leader_end:
            return stored
        if not synced:
            if _sync_recovery_points(partition, list(durable)):
                return self._rebuilt(partition, stored, synced=True)
            if stored is not None and stored <= leader_end:
                return stored  # the points could not be made durable: do not raise the HW on them
        if floor and (stored is None or stored > leader_end):  # (below: a writer between fsync and publish)
            log.warning("%s-%d: stored high watermark %s does not fit the in-sync replicas' log "
                           "ends %s (lost in a power loss?); using %d", partition.topic, partition.partition,
                           stored, ends, floor)
        return floor if floor or stored is not None else None


def _sync_recovery_points(partition: Partition, replicas: list[int]) -> bool:
    """fdatasync the in-sync replicas' recovery-point files (read-only descriptors: it flushes
    what is there, it writes nothing). False when one could not be synced."""
    for replica in replicas:
        path = os.path.join(partition.replica_dirs[replica], fmt.RECOVERY_POINT_FILE)
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        except OSError as err:
            log.warning("cannot open %s to make it durable: %s", path, err)
            return False
        try:
            disk.fdatasync(fd)
        except OSError as err:
            log.warning("cannot fdatasync %s: %s; the high watermark is not raised on it", path, err)
            return False
        finally:
            os.close(fd)
    return True

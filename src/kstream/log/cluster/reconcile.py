"""A writer's reconcile: every in-sync replica ends where the leader ends, and the HW says so.

Run under the partition lock before each append (:meth:`Partition.append`):

* Frames that a writer killed mid-replication left only on the leader are
  copied to the in-sync followers (never acknowledged; now committed, as a
  Kafka leader's unreplicated tail is once followers fetch it), up to
  ``_CATCH_UP_BYTES``; a follower further behind leaves the ISR and is caught
  up later (:mod:`kstream.log.cluster.replica_sync`).
* A follower whose tail differs from the leader's (a power loss left each
  replica its own part of an unsynced tail) is cut back to where they agree.
* A leader that ends below the HW lost acknowledged records (a lost or emptied
  disk): it leaves the ISR and the next in-sync replica leads; with only one
  in-sync replica, LogDirOfflineError unless unclean.leader.election.enable.
* A lost or stale HW (the lock file is never fsynced) is set to what every
  in-sync replica made durable (their recovery points).

:class:`Reconciler` keeps the one piece of state: whether this handle compared
its followers by content yet (the first reconcile of a new writer does).
Caller holds the partition lock throughout; nothing here is thread-safe alone.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kstream.errors import LogDirOfflineError, ReplicaDivergedError
from kstream.log.cluster.replica_sync import agreed_offset
from kstream.log.storage import format as fmt
from kstream.log.storage.log_reader import LogReader
from kstream.log.storage.partition_log import EncodedBatch
from kstream.log.storage.records import Payload

if TYPE_CHECKING:
    from kstream.log.cluster.partition import Partition

log = logging.getLogger(__name__)
_CATCH_UP_BYTES = 64 << 20  # bound on what one reconcile copies to a lagging ISR follower


class Reconciler:
    """One partition handle's reconcile (see the module docstring)."""

    __slots__ = ("_content_checked",)

    def __init__(self) -> None:
        self._content_checked = False

    def reconcile_locked(self, partition: Partition) -> None:
        """Make every ISR replica end where the leader ends, and the HW say so.

        Frames that a writer killed mid-replication left only on the leader are
        copied to the in-sync followers (it was never acknowledged; now it is
        committed, as a Kafka leader's unreplicated tail is once followers fetch it).
        A leader that ends below the HW lost acknowledged records: it leaves the ISR
        and the next in-sync replica leads (the caller sees ``info.leader`` change).
        """
        leader_end = partition.on_replica(partition.info.leader, lambda log: log.log_end_offset_locked())
        high_watermark = partition.lock.read_high_watermark()
        if high_watermark is not None and leader_end < high_watermark:
            if partition.on_replica(partition.info.leader, lambda log: log.lost_durable_data_locked()):
                _distrust_leader_locked(partition, leader_end, high_watermark)
                return
            # Not a lost disk: a power loss dropped frames that were never fsynced (so never
            # acknowledged with acks=all) and kept a newer page of the unfsynced lock file.
            # The leader's log is the truth: followers that kept more are cut back below (they
            # leave the ISR and rejoin by leader epoch), and the HW is lowered to the log end.
            log.warning("%s-%s: high watermark %d is past the leader's log end %d (a power loss "
                        "dropped unfsynced frames); lowering it", partition.topic, partition.partition,
                        high_watermark, leader_end)
        behind = {}
        for replica in partition.info.isr:
            if replica != partition.info.leader:
                try:
                    end = partition.on_replica(replica, lambda log: log.log_end_offset_locked())
                except LogDirOfflineError:
                    continue  # now offline and out of the ISR
                if end != leader_end or not self._content_checked:
                    behind[replica] = end
        # A follower with the leader's end may still hold other frames (a power loss left each
        # replica its own part of an unsynced tail): the first reconcile of this handle (a
        # new writer, as after a crash) compares every in-sync follower by content.
        self._content_checked = True
        if behind:
            failed = set()
            for replica, end in behind.items():
                try:
                    start = _agreed_start_locked(partition, replica, end, leader_end)
                    if copy_frames_locked(partition, replica, start, leader_end, _CATCH_UP_BYTES) != leader_end:
                        failed.add(replica)  # too far behind to fix inline: out of the ISR, caught up later
                except (LogDirOfflineError, ReplicaDivergedError):
                    failed.add(replica)
            if failed:
                partition.remove_from_isr_locked(failed)
        if high_watermark is None or high_watermark > leader_end:
            # Lost (or stale after a power loss): what every in-sync replica has fsynced is safe
            # to show. A stored HW at or below the log end stays: it moves only forward, by
            # the writers that publish it (acks=all after the fsync). So frames past it
            # (another writer's unfsynced batch, a killed writer's tail) stay invisible until
            # a writer publishes past them.
            partition.lock.write_high_watermark(_durable_end_locked(partition, leader_end))


def _durable_end_locked(partition: Partition, leader_end: int) -> int:
    """The least offset the in-sync replicas made durable (each one's recovery point; its
    log end when that is unreadable), at most ``leader_end``. Caller holds the lock."""
    durable = leader_end
    for replica in partition.info.isr:
        try:
            point = partition.on_replica(replica, lambda replica_log: replica_log.durable_offset_locked())
        except LogDirOfflineError:
            continue  # now offline and out of the ISR
        durable = min(durable, point)
    return durable


def _agreed_start_locked(partition: Partition, replica: int, end: int, leader_end: int) -> int:
    """Where an in-sync follower that ends at ``end`` still agrees with the leader, its
    tail after that cut (the frames a power loss left it and the leader lost: never
    fsynced on the leader, so never acknowledged). Caller holds the lock."""
    start = agreed_offset(partition.leader_dir, partition.replica_dirs[replica], min(end, leader_end))
    if start < end:
        log.warning("replica %s of %s-%s: frames %d..%d differ from the leader's (an unsynced tail "
                    "kept through a power loss); cut back to %d", replica, partition.topic, partition.partition,
                    start, end, start)
        partition.on_replica(replica, lambda replica_log: replica_log.truncate_to_locked(start))
    return start


def _distrust_leader_locked(partition: Partition, leader_end: int, high_watermark: int) -> None:
    leader = partition.info.leader
    log.error("leader %s of %s-%s ends at %d, below the high watermark %d: it lost acknowledged "
              "records (a lost or emptied disk); it leaves the ISR", leader, partition.topic,
              partition.partition, leader_end, high_watermark)
    if len(partition.info.isr) > 1:
        partition.remove_from_isr_locked({leader})
        return
    if not partition.config.unclean_leader_election_enable:
        raise LogDirOfflineError(
            f"{partition.topic}-{partition.partition}: its only in-sync replica (log dir {leader}) ends at "
            f"offset {leader_end}, below the high watermark {high_watermark}: acknowledged records "
            "were lost with its disk. Restore that disk's data, or set "
            "unclean.leader.election.enable=true on the topic to go on with what is left")
    log.warning("unclean.leader.election.enable: %s-%s goes on from offset %d; records up to %d are "
                "lost", partition.topic, partition.partition, leader_end, high_watermark)
    partition.lock.write_high_watermark(leader_end)


def copy_frames_locked(partition: Partition, replica: int, start: int, end: int, max_bytes: int) -> int:
    """Copy the leader's frames [start, end) to ``replica`` byte for byte, up to about
    ``max_bytes``; returns the offset reached. Caller holds the lock."""
    if start > end:
        raise ReplicaDivergedError(f"replica {replica} of {partition.topic}-{partition.partition} is ahead "
                                   f"of the leader ({start} > {end})")
    reader = LogReader(partition.leader_dir)
    copied = 0
    offset = start
    try:
        while offset < end and copied < max_bytes:
            frames = reader.read(offset, min(8 << 20, max_bytes - copied), end_offset=end)
            if not frames or frames[0].header.base_offset != offset:
                raise ReplicaDivergedError(f"no frame starts at offset {offset} on the leader")
            for frame in frames:
                h = frame.header
                copy = EncodedBatch(Payload((frame.payload,), h.payload_size, h.payload_crc,
                                            h.schema_length), h.record_count, h.min_timestamp, h.max_timestamp)
                _copy_frame_locked(partition, replica, fmt.repack_header(h), copy)
                offset = h.next_offset
                copied += h.frame_size
    finally:
        reader.close()
    return offset


def _copy_frame_locked(partition: Partition, replica: int, header: bytes, copy: EncodedBatch) -> None:
    partition.on_replica(replica, lambda log: log.append_copy_locked(header, copy))


"""Bring an out-of-sync follower back: truncate its divergent tail, copy, rejoin the ISR.

A follower leaves the ISR when its log dir fails (or its write does). Once the
dir is back (repaired, or replaced by an empty disk) its replicas are caught
up from their leaders here, by whoever calls :func:`sync_followers` (writers
do it a little on each append; ``kstream replicator`` does it in full):

1. Under the partition lock, find where the follower's log stops agreeing
   with the leader's, by leader epoch (an old leader's unreplicated tail is
   cut there, never by high watermark alone), rounded down to a frame start.
2. Copy the leader's frames after that point, byte for byte, then fsync.
3. Once the follower ends where the leader ends, add it back to the ISR.

Nothing is copied from a leader on an offline log dir (the partition is
offline until it returns) or from one that ends below the high watermark (it
lost acknowledged records; the next writer moves leadership off it).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kstream.errors import CorruptBatchError, LogDirOfflineError, ReplicaDivergedError
from kstream.log.storage.leader_epochs import divergence_offset
from kstream.log.storage.log_reader import LogReader

if TYPE_CHECKING:
    from kstream.log.cluster.partition import Partition

log = logging.getLogger(__name__)
_MAX_WALK_BACK_FRAMES = 100_000  # bound on the content check of a divergence point


def out_of_sync(partition: Partition, online: dict[int, bool]) -> list[int]:
    """Replicas of the partition that are on an online log dir but not in the ISR."""
    return [r for r in partition.info.replicas if r not in partition.info.isr and online.get(r, False)]


def sync_followers(partition: Partition, online: dict[int, bool], max_bytes: int) -> list[int]:
    """Catch up to ``max_bytes`` per follower; returns the replicas that rejoined the ISR."""
    rejoined = []
    for replica in out_of_sync(partition, online):
        with partition.lock:
            partition.refresh_locked()
            if partition.offline_locked() or replica in partition.info.isr:
                continue
            try:
                if _catch_up_locked(partition, replica, max_bytes):
                    partition.rejoin_locked(replica)
                    rejoined.append(replica)
            except (LogDirOfflineError, ReplicaDivergedError) as err:
                log.warning("replica %s of %s-%s could not catch up: %s", replica, partition.topic,
                            partition.partition, err)
    return rejoined


def _catch_up_locked(partition: Partition, replica: int, max_bytes: int) -> bool:
    leader_log = partition.leader_log
    follower_log = partition.logs[replica]
    leader_end = leader_log.log_end_offset_locked()
    high_watermark = partition.high_watermark()
    if high_watermark is not None and leader_end < high_watermark:
        raise ReplicaDivergedError(f"the leader ends at {leader_end}, below the high watermark "
                                   f"{high_watermark}: it lost acknowledged records; not copying from it")
    follower_end = follower_log.log_end_offset_locked()
    leader_start = leader_log.log_start_offset_locked()
    if follower_end < leader_start:  # e.g. an emptied disk, and retention moved the leader's start
        follower_log.restart_at_locked(leader_start)
        follower_end = leader_start
    target = divergence_offset(leader_log.epochs(), leader_end, follower_log.epochs(), follower_end)
    target = _frame_start(partition.replica_dirs[replica], target, follower_end)
    target = agreed_offset(partition.leader_dir, partition.replica_dirs[replica], target)
    if target < follower_end:
        log.info("truncating replica %s of %s-%s from %d to %d (diverged by leader epoch)",
                 replica, partition.topic, partition.partition, follower_end, target)
        follower_log.truncate_to_locked(target)
        follower_end = target
    end = partition.copy_frames_locked(replica, follower_end, leader_end, max_bytes)
    follower_log.flush_locked()
    return end == leader_end


def agreed_offset(leader_dir: str, follower_dir: str, upto: int) -> int:
    """The largest frame boundary <= ``upto`` at which the follower's log still is the
    leader's: its frame ending there equals the leader's frame byte for byte (the header,
    whose checksum covers the payload's checksum).

    Leader epochs find where an old leader's unreplicated tail diverged. They cannot see
    replicas that kept different parts of one unsynced tail at the same epoch (a power
    loss: each replica keeps a prefix of its own), after which the leader writes new
    frames at those offsets. So the boundary is checked by content too, walking back a
    frame at a time (bounded; one frame when the logs agree, as they nearly always do).
    """
    leader = LogReader(leader_dir, check_crcs=False)
    follower = LogReader(follower_dir, check_crcs=False)
    try:
        offset = upto
        start = follower.log_start_offset()
        for _ in range(_MAX_WALK_BACK_FRAMES):
            if offset <= start:
                return start
            theirs = follower.read(offset - 1, 1, end_offset=offset, verify=False)
            ours = leader.read(offset - 1, 1, end_offset=offset, verify=False)
            if not theirs:
                return start
            if ours and ours[0].header == theirs[0].header and theirs[0].header.next_offset == offset:
                return offset
            offset = theirs[0].header.base_offset
        raise ReplicaDivergedError(f"{follower_dir} still differs from the leader {_MAX_WALK_BACK_FRAMES} "
                                   f"frames back from offset {upto}; re-fill it from the leader")
    except CorruptBatchError as err:
        raise ReplicaDivergedError(f"cannot compare {follower_dir} with the leader below {upto}: {err}") from err
    finally:
        leader.close()
        follower.close()


def _frame_start(directory: str, offset: int, end: int) -> int:
    """The start of the follower's frame holding ``offset`` (a log is only ever cut
    between frames; an epoch boundary inside a frame means the frame diverged)."""
    if offset >= end:
        return offset
    reader = LogReader(directory, check_crcs=False)
    try:
        frames = reader.read(offset, 1, end_offset=end, verify=False)
    except CorruptBatchError as err:
        raise ReplicaDivergedError(f"cannot find a frame boundary at {offset}: {err}") from err
    finally:
        reader.close()
    return min(offset, frames[0].header.base_offset) if frames else offset

"""When and how a compacted partition is cleaned: one plan, every in-sync replica cleaned with it.

Kafka's rules, for a partition whose topic has ``cleanup.policy`` compact:

* the cleanable part ends at the first of: the LSO (never past an open
  transaction; the LSO is at most the HW), the active segment of any in-sync
  replica, and the first frame younger than ``min.compaction.lag.ms``;
* it is cleaned when its dirty part (from where the last clean ended, the
  ``cleaner-offset-checkpoint``, to that end) is at least
  ``min.cleanable.dirty.ratio`` of its bytes, or when a dirty record is older
  than ``max.compaction.lag.ms`` (or when asked with ``force``);
* the plan (each key's latest offset below the end, the aborted transactions,
  the clock) is made once from the leader and every in-sync replica cleans its
  own copy with it. The per-frame rule depends only on the frame and the plan,
  so the copies agree frame by frame, even where their segments roll at other
  offsets (docs/FORMAT.md, "Cleaned segments").

Writers wait only for the swap: a clean takes the partition lock to read its bounds (the
end, the in-sync replicas), builds the cleaned segments without it (holding the
partition's cleaner lock, so one clean at a time builds), and takes it again to swap them
in, after checking that nothing it read changed (a failover, retention, a truncation: then
it drops what it built and the next clean starts again). Readers never wait.

The clean's reads (the plan's two passes over the leader, each replica's build) and writes
(the cleaned segments) are held to ``log.cleaner.io.max.bytes.per.second`` (a cluster
option, Kafka's name and meaning; unlimited by default) by sleeping between frames, only
where no partition lock is held (cleaner.throttle).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.ipc as ipc

from kstream.errors import ConfigError, KStreamError
from kstream.log.cluster.partition import Partition
from kstream.log.storage import format as fmt
from kstream.log.storage.cleaner.frame_rewrite import CleaningPlan, decode_rows
from kstream.log.storage.cleaner.replica_cleaner import (
    BuiltReplica,
    build_replica,
    discard_built,
    still_as_read,
    swap_built,
)
from kstream.log.storage.cleaner.throttle import IoThrottle
from kstream.log.storage.cleaner_checkpoint import read_checkpoint, write_checkpoint
from kstream.log.storage.frames import FrameWalk, pread_from
from kstream.log.storage.log_reader import LogReader
from kstream.log.storage.records import PayloadCodec
from kstream.log.storage.txn_index_reader import TxnIndexReader

log = logging.getLogger(__name__)

MAX_MAP_KEYS = 10_000_000
"""Most keys one clean maps (Kafka's log.cleaner.dedupe.buffer.size): past it, the clean ends
at the frame where the map filled and the rest waits for the next clean."""
_READ_BYTES = 8 << 20


@dataclass(frozen=True)
class PartitionCleaned:
    """What one clean of a partition did (``cleaned`` False: nothing was due)."""

    topic: str
    partition: int
    cleaned: bool
    reason: str
    end_offset: int
    dirty_ratio: float
    segments_rewritten: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    records_removed: int = 0


def clean_partition(handle: Partition, *, typed: bool, force: bool = False, now_ms: int | None = None,
                    throttle: IoThrottle | None = None) -> PartitionCleaned:
    """Clean one partition of a compacted topic if it is due (see the module). ``typed``: the
    topic declares a schema (a tombstone is then a record whose value columns are all null).
    ``throttle``: the clean's I/O throttle (default: one at the cluster's
    log.cleaner.io.max.bytes.per.second)."""
    config = handle.config
    if throttle is None:
        throttle = IoThrottle(config.cleaner_io_max_bytes_per_second)
    if not config.compact:
        raise ConfigError(f"topic {handle.topic!r} has cleanup.policy={config.cleanup_policy}: only a "
                          "compacted topic is cleaned; alter it to cleanup.policy=compact first")
    now = int(time.time() * 1000) if now_ms is None else now_ms
    with _cleaner_lock(handle):
        with handle.lock:
            handle.refresh_locked()
            in_sync = [r for r in handle.info.isr if os.path.isdir(handle.replica_dirs.get(r, ""))]
            for replica in in_sync:  # opening finishes a swap a killed clean left decided
                handle.on_replica(replica, lambda log_: log_.log_end_offset_locked())
            leader = handle.info.leader
            high_watermark = handle.high_watermark() or 0
            state = TxnIndexReader(handle.leader_dir).state(high_watermark)
            # Below the LSO and the active segments: frames that change only by retention, a
            # truncation or a recovery, which the swap's check below sees.
            end = min([state.last_stable_offset]
                      + [fmt.list_segment_bases(handle.replica_dirs[r])[-1] for r in in_sync])
        # First the frame headers only (is a clean due?), then, if it is, the keys.
        plan, start, dirty_bytes, total_bytes, oldest_dirty = _plan(handle, end, state.aborted, now, typed,
                                                                    throttle, build_map=False)
        ratio = dirty_bytes / total_bytes if total_bytes else 0.0
        due, reason = _due(handle, plan.end_offset, start, ratio, oldest_dirty, now, force)
        if not due:
            return PartitionCleaned(handle.topic, handle.partition, False, reason, plan.end_offset, ratio)
        plan = _plan(handle, plan.end_offset, state.aborted, now, typed, throttle, build_map=True)[0]
        plan = replace(plan, horizons=_horizons([handle.replica_dirs[r] for r in in_sync], plan.end_offset))
        built: list[BuiltReplica] = []
        try:
            for replica in in_sync:
                built.append(build_replica(handle.replica_dirs[replica], plan, config.index_interval_bytes,
                                           throttle))
            with handle.lock:
                handle.refresh_locked()
                now_in_sync = [r for r in handle.info.isr if os.path.isdir(handle.replica_dirs.get(r, ""))]
                if now_in_sync != in_sync or handle.info.leader != leader or not all(map(still_as_read, built)):
                    return PartitionCleaned(handle.topic, handle.partition, False, _CHANGED, plan.end_offset, ratio)
                handle.lock.bump_generation()  # readers re-read what changes (txn state, indexes)
                for one in built:
                    swap_built(one)
                for replica in in_sync:
                    write_checkpoint(handle.replica_dirs[replica], plan.end_offset)
        finally:
            for one in built:
                discard_built(one)  # (nothing left to drop once swapped)
        done = built[in_sync.index(leader)].result if leader in in_sync else built[0].result
        log.info("cleaned %s-%d below offset %d: %d segment(s), %d -> %d bytes, %d record(s) removed",
                 handle.topic, handle.partition, plan.end_offset, done.segments_rewritten,
                 done.bytes_before, done.bytes_after, done.records_removed)
        return PartitionCleaned(handle.topic, handle.partition, True, reason, plan.end_offset, ratio,
                                done.segments_rewritten, done.bytes_before, done.bytes_after,
                                done.records_removed)


_CHANGED = ("the partition changed while the clean was built (a failover, retention or a truncation): "
            "nothing was swapped; the next clean starts again")


@contextlib.contextmanager
def _cleaner_lock(handle: Partition) -> Iterator[None]:
    """One clean of a partition at a time, across processes and threads (an flock on a file
    next to the partition's lock file; released when its holder dies)."""
    path = handle.lock.path + fmt.CLEANER_LOCK_SUFFIX
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except FileNotFoundError:  # the cluster's first lock file: its dir too
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # (releases the flock)


def _due(handle: Partition, end: int, start: int, ratio: float, oldest_dirty: int | None, now: int,
         force: bool) -> tuple[bool, str]:
    config = handle.config
    if end <= start:
        return False, "nothing cleanable (the active segment, an open transaction or min.compaction.lag.ms)"
    if force:
        return True, "forced"
    if oldest_dirty is not None and now - oldest_dirty > config.max_compaction_lag_ms:
        return True, "max.compaction.lag.ms"
    if ratio >= config.min_cleanable_dirty_ratio and ratio > 0:
        return True, f"dirty ratio {ratio:.2f} >= min.cleanable.dirty.ratio {config.min_cleanable_dirty_ratio}"
    return False, f"dirty ratio {ratio:.2f} below min.cleanable.dirty.ratio {config.min_cleanable_dirty_ratio}"


def _plan(handle: Partition, end: int, aborted: tuple[tuple[int, int, int], ...], now: int, typed: bool,
          throttle: IoThrottle, *, build_map: bool) -> tuple[CleaningPlan, int, int, int, int | None]:
    """The plan (its end moved back for min.compaction.lag.ms and the key limit), the log start,
    dirty and total bytes below the end, and the oldest dirty record's time (ms, None when
    nothing is dirty)."""
    config = handle.config
    probe = CleaningPlan(end, {}, aborted, now, config.delete_retention_ms, typed)
    leader = handle.leader_dir
    checkpoint = read_checkpoint(leader)
    reader = LogReader(leader)
    codec = PayloadCodec()
    latest: dict[bytes, int] = {}
    start = reader.log_start_offset()
    dirty_from = start if checkpoint is None else max(checkpoint, start)
    dirty = total = 0
    oldest: int | None = None
    offset = start
    try:
        while offset < end:
            frames = reader.read(offset, _READ_BYTES, end_offset=end)
            if not frames:
                break
            for frame in frames:
                header = frame.header
                if header.next_offset > end:
                    break
                if header.max_timestamp > now - config.min_compaction_lag_ms or len(latest) >= MAX_MAP_KEYS:
                    end = header.base_offset  # too young to clean yet, or the map is full
                    break
                total += header.frame_size
                throttle.spent(header.frame_size)
                if header.base_offset >= dirty_from:
                    dirty += header.frame_size
                    if header.holds_records and (oldest is None or header.min_timestamp < oldest):
                        oldest = header.min_timestamp
                if build_map and header.holds_records and not probe.aborted_frame(header):
                    batch, offsets, _ = decode_rows(codec, header, frame.payload)
                    if "key" in batch.schema.names:
                        for key, at in zip(batch.column("key").to_pylist(), offsets.tolist(), strict=True):
                            if key is not None:
                                latest[key] = at
            else:
                offset = frames[-1].header.next_offset
                continue
            break
    finally:
        reader.close()
    plan = CleaningPlan(end, latest, aborted, now, config.delete_retention_ms, typed)
    return plan, start, dirty, total, oldest


def _horizons(directories: list[str], end: int) -> dict[int, int]:
    """Frame base offset -> the earliest delete horizon a replica's copy of that frame holds
    (below ``end``), so a clean killed between replicas does not leave them disagreeing."""
    found: dict[int, int] = {}
    for directory in directories:
        for base in fmt.list_segment_bases(directory):
            if base >= end:
                break
            fd = os.open(os.path.join(directory, fmt.segment_file_name(base)), os.O_RDONLY)
            try:
                read = pread_from(fd)
                for position, header in FrameWalk(read, os.fstat(fd).st_size, 0):
                    if header.next_offset > end:
                        break
                    if header.sparse and not header.filler:
                        schema = ipc.read_schema(pa.py_buffer(read(position + fmt.HEADER_SIZE, header.schema_length)))
                        horizon = (schema.metadata or {}).get(fmt.DELETE_HORIZON_KEY)
                        if horizon is not None:
                            found[header.base_offset] = min(int(horizon), found.get(header.base_offset, int(horizon)))
            finally:
                os.close(fd)
    return found


def auto_clean(handle: Partition, *, typed: bool) -> None:
    """After an append to a compacted topic's partition (the place retention runs too): clean it
    when due, at most every log.retention.check.interval.ms per handle. A failure is logged and
    never fails the append; the next check tries again."""
    now = int(time.time() * 1000)
    if now < handle.next_clean_check_ms:
        return
    handle.next_clean_check_ms = now + handle.config.retention_check_interval_ms
    try:
        clean_partition(handle, typed=typed, now_ms=now)
    except (KStreamError, OSError) as err:
        log.error("log cleaner skipped %s-%d: %s", handle.topic, handle.partition, err)

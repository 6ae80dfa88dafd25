"""One partition: its replicas on log dirs, the leader, the ISR, the high watermark, acks.

Replication happens in the writing process (no broker, no replicator daemon):
under the partition lock, the writer appends a frame to the leader's log and
copies the same bytes to every in-sync follower. Readers read the leader's log
below the high watermark (HW), published in the lock file: for ``acks=all`` only
once min.insync.replicas replicas fsynced the batch (:meth:`Partition.publish_high_watermark`),
so no reader sees a record a power loss can take away; for ``acks=1``/``0`` at
once (no durability promise: a power loss may remove what a reader saw), unless
frames of other writers below it still await their fsync: then the acks=1 append
fsyncs first, so its HW never shows another writer's acks=all record early.

* ``acks=all``: refused up front with :class:`NotEnoughReplicasError` when the
  ISR is smaller than ``min.insync.replicas``; otherwise returns only after
  every ISR replica fsynced the batch (in parallel). If replicas failed on the
  way and fewer than ``min.insync.replicas`` remain, the batch stays written on
  the survivors but is reported as NotEnoughReplicas (after append).
* ``acks=1`` / ``0``: return once written to the ISR (the page cache).
* A replica whose write or fsync fails takes its log dir offline in the
  metadata (every partition there leaves the ISR; leaders move, epochs bump).
  A failed fsync is never retried.
* A writer killed between the leader's append and a follower's leaves the
  follower behind; the next writer copies the missing frames from the leader
  before appending (:mod:`kstream.log.cluster.reconcile`), so the HW catches up.
* A leader whose log ends below the HW lost acknowledged records (its disk was
  lost or emptied): it is not trusted; an in-sync follower takes over. The HW
  never goes back (except by an unclean election, which accepts the loss).
* The last in-sync replica never leaves the ISR. When its log dir fails the
  partition is offline (writes fail, saying which ``kstream log-dirs online``
  brings it back); it leads again when that log dir comes back.
* A missing replica dir or log dir is a failed disk, on the write side and
  when a reader finds the leader's dir gone: the log dir is taken offline and
  readers move to the new leader. Nothing is created in its place.

What readers see of the HW after a power loss is decided in
:mod:`kstream.log.cluster.high_watermark_check`; catching lagging followers up
outside the ISR in :mod:`kstream.log.cluster.replica_sync`.

Thread-safe for appends; any number of processes may append at once.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar

from kstream.errors import (
    LogDirOfflineError,
    NotEnoughReplicasError,
    PartitionOfflineError,
    ReplicaDivergedError,
    TopicNotFoundError,
)
from kstream.log.cluster.high_watermark_check import HighWatermarkCheck
from kstream.log.cluster.metadata import DataVersion, Metadata, PartitionInfo
from kstream.log.cluster.reconcile import Reconciler, copy_frames_locked
from kstream.log.cluster.replica_sync import sync_followers
from kstream.log.storage import disk
from kstream.log.storage.lock import PartitionLock
from kstream.log.storage.log_config import LogConfig
from kstream.log.storage.log_reader import LogReader
from kstream.log.storage.partition_log import AppendResult, EncodedBatch, PartitionLog
from kstream.log.storage.producer_state import ProducerState
from kstream.log.storage.thread_pool import LazyThreadPool

log = logging.getLogger(__name__)
T = TypeVar("T")


class AppendGuard(Protocol):
    """What :meth:`Partition.append` calls under the partition lock before a transactional frame:
    the transaction's writer (kstream.log.transactions, a room above) fences a stale producer
    and joins the partition to its transaction. Defined here so this room never imports it."""

    def before_append_locked(self, partition: Partition) -> None: ...


class Partition:
    """Append/read handle of one partition in this process."""

    def __init__(self, info: PartitionInfo, replica_dir: Callable[[int], str], config: LogConfig,
                 lock_path: str, metadata: Metadata):
        self.info = info
        self.config = config
        self._replica_dir = replica_dir
        self._metadata = metadata
        self._lock = PartitionLock(lock_path)
        self.replica_dirs: dict[int, str] = {}
        self.logs: dict[int, PartitionLog] = {}
        self._metadata_version: DataVersion | None = None
        self._online: dict[int, bool] = {}  # log dir id -> online, read with self.info
        self._reader_leader = info.leader  # the leader readers last opened (see refresh_metadata)
        self._hw_check = HighWatermarkCheck()  # see high_watermark
        self._deferred_end: int | None = None  # end of acks=all appends awaiting flush_acked
        self._flushers = LazyThreadPool(1, "kstream-fsync")  # sized by _add_replicas
        self._reconciler = Reconciler()  # see _append_leader_locked
        self.producer_state = ProducerState()
        # A compacted topic's log cleaner, run after appends (Cluster.partition sets it; the
        # cleaner lives in kstream.log.cluster.compaction, which imports this module).
        self.cleaner: Callable[[Partition], None] | None = None
        # When the cleaner first looks: one interval (log.retention.check.interval.ms) after the
        # handle opened, so a short-lived writer (a Spark task) does not scan the log for it.
        self.next_clean_check_ms = int(time.time() * 1000) + config.retention_check_interval_ms
        # Why each replica's last fsync failed (set on fsync threads), and the failures the
        # last settle_syncs found: a NotEnoughReplicas error names its cause (EROFS, EIO...).
        self._sync_errors: dict[int, LogDirOfflineError] = {}
        self._settled_failures: dict[int, LogDirOfflineError] = {}
        # A tiered topic's lake end offset (Cluster.partition sets it): each replica's retention
        # deletes only segments wholly below it (kstream.log.cluster.lake_offsets).
        self._retention_floor: Callable[[], int] | None = None
        self._add_replicas()

    def _add_replicas(self) -> None:
        """Open handles for replicas we have not seen (a reassignment added some); the fsync
        pool, sized by the replica count, is then made anew."""
        added = [r for r in self.info.replicas if r not in self.logs]
        for replica in added:
            self.replica_dirs[replica] = self._replica_dir(replica)
            self.logs[replica] = PartitionLog(self.replica_dirs[replica], self.config, self._lock)
            self.logs[replica].retention_floor = self._retention_floor
        if added:
            self._flushers.shutdown(wait=False)
            self._flushers = LazyThreadPool(len(self.logs), "kstream-fsync")

    def use_retention_floor(self, floor: Callable[[], int]) -> None:
        """Retention of every replica deletes only segments wholly below ``floor()`` (a tiered
        topic's lake end offset, read when retention runs)."""
        self._retention_floor = floor
        for partition_log in self.logs.values():
            partition_log.retention_floor = floor

    @property
    def topic(self) -> str:
        return self.info.topic

    @property
    def partition(self) -> int:
        return self.info.partition

    @property
    def leader_dir(self) -> str:
        return self.replica_dirs[self.info.leader]

    @property
    def leader_log(self) -> PartitionLog:
        return self.logs[self.info.leader]

    # -- appending ----------------------------------------------------------------------------

    def append(self, batch: EncodedBatch, acks: str = "all", txn: AppendGuard | None = None,
               defer_fsync: bool = False) -> AppendResult:
        """Append to the leader and the in-sync followers; see the module docstring for acks.

        With ``txn``, the batch belongs to that open transaction: the producer's
        epoch is checked under the lock (a fenced producer gets FencedError and
        writes nothing) and the partition joins the transaction before its first frame.
        An idempotent producer's batch is checked first (:mod:`kstream.log.storage.producer_state`): a
        retry of one already written returns the original's offset and writes nothing.
        With ``defer_fsync`` an acks=all append is checked against min.insync.replicas
        but not yet fsynced: the caller acknowledges it after :meth:`flush_acked`.
        """
        self.leader_log.check_size(batch)
        with self._lock:
            self._refresh_locked()
            if txn is not None:
                txn.before_append_locked(self)
            duplicate = self.producer_state.check_locked(self, batch)  # an idempotent retry?
            publish_after_sync = False
            if duplicate is None:
                result, header = self._append_leader_locked(batch, acks)
                self._copy_to_followers_locked(header, batch)
                if acks != "all":
                    publish_after_sync = not self._publish_unacked_locked(result.base_offset,
                                                                          result.base_offset + batch.record_count)
                self.producer_state.appended_locked(self, batch, result)
            else:
                result = duplicate  # written before: acknowledge the original (fsynced below)
            end = result.base_offset + batch.record_count
            if acks == "all" and defer_fsync:
                self._deferred_end = max(self._deferred_end or 0, end)  # published by flush_acked
            in_sync = list(self.info.isr)
        if acks == "all":
            if not defer_fsync:
                self._require_fsynced(in_sync, f"the batch at offset {result.base_offset}")
                self.publish_high_watermark(end)
        elif publish_after_sync:
            # Frames below this one await their writers' fsync (acks=all): this append's HW
            # would show them before they are durable. fsync them first, then publish.
            if len(self.settle_syncs(in_sync, self._sync_all(in_sync))) >= self.config.min_insync_replicas:
                self.publish_high_watermark(end)
        else:
            for replica in in_sync:
                self.logs[replica].maybe_flush()
        if len(self.info.isr) < len(self.info.replicas) and self.info.isr:
            self._sync_followers()
        if self.cleaner is not None:
            self.cleaner(self)
        return result

    def _publish_unacked_locked(self, base_offset: int, end: int) -> bool:
        """An acks=1/0 append is visible once written (no durability promise, as in Kafka), but
        its HW must not cover other writers' frames that are not fsynced yet: an acks=all frame
        whose fsync is running, or one deferred for a group commit, would be shown to readers
        and then lost to a power cut. So the HW moves to ``end`` at once only when everything
        below this frame is published already; False: the caller fsyncs first, then publishes."""
        published = self._lock.read_high_watermark()
        if published is None or published < base_offset:
            return False
        self._lock.write_high_watermark(end)
        return True

    def publish_high_watermark(self, end: int) -> None:
        """Let readers see acks=all records below ``end``: call only once at least
        min.insync.replicas in-sync replicas fsynced them. The HW only moves forward (a
        later batch may have published first); takes the lock for one read and one write."""
        with self._lock:
            current = self._lock.read_high_watermark()
            if current is None or current < end:
                self._lock.write_high_watermark(end)

    def log_end_offset_locked(self) -> int:
        return self.leader_log.log_end_offset_locked()

    def _copy_to_followers_locked(self, header: bytes, batch: EncodedBatch) -> None:
        """Write the leader's frame to every in-sync follower, in parallel threads when
        there are several (the copies are kernel memcpys that release the GIL). Failed
        followers leave the ISR; their log dirs go offline on I/O errors."""
        followers = [r for r in self.info.isr if r != self.info.leader]
        if not followers:
            return

        def copy(replica: int) -> BaseException | None:
            try:
                self.logs[replica].append_copy_locked(header, batch)
                return None
            except (LogDirOfflineError, ReplicaDivergedError) as err:
                return err

        if len(followers) == 1:
            errors = [copy(followers[0])]
        else:
            errors = list(self._pool().map(copy, followers))
        offline = {r for r, e in zip(followers, errors, strict=True) if isinstance(e, LogDirOfflineError)}
        diverged = {r for r, e in zip(followers, errors, strict=True) if isinstance(e, ReplicaDivergedError)}
        for replica in offline:  # metadata writes stay in this thread (one SQLite connection)
            self._take_offline_locked(replica)
        if diverged - offline:
            self.remove_from_isr_locked(diverged - offline)

    def _sync_followers(self) -> None:
        """Catch lagging replicas on online log dirs up a little (see replica_sync)."""
        online = {log_dir: up for log_dir, _, up in self._metadata.log_dirs()}
        sync_followers(self, online, self.config.replica_fetch_max_bytes)

    def _leaderless_locked(self) -> bool:
        """True when the partition is offline: its leader (the last in-sync replica) is on
        an offline log dir (or an older kstream left the ISR empty)."""
        return not self.info.isr or not self._online.get(self.info.leader, True)

    def _elect_unclean_locked(self) -> None:
        """No in-sync replica is usable and unclean.leader.election.enable is on: the first
        replica on an online log dir leads (records it lacks are lost, as in Kafka)."""
        self._online = {log_dir: up for log_dir, _, up in self._metadata.log_dirs()}
        for replica in self.info.replicas:
            if self._online.get(replica):
                log.warning("unclean leader election: replica %s leads %s-%s; records it lacks are lost",
                            replica, self.topic, self.partition)
                self.info = self._metadata.elect_unclean(self.topic, self.partition, replica)
                self._lock.bump_generation()
                return

    def elect_unclean(self) -> bool:
        """An operator's unclean election (admin ``elect_leaders(UNCLEAN)``, whatever the
        topic's unclean.leader.election.enable): if the partition is offline, the first
        replica on an online log dir leads, losing what it lacks. True if one was elected."""
        with self._lock:
            self._refresh_locked()
            if not self._leaderless_locked():
                return False
            epoch = self.info.leader_epoch
            self._elect_unclean_locked()
            return self.info.leader_epoch != epoch

    def _offline_error(self, cause: BaseException | str | None) -> PartitionOfflineError:
        leader = self.info.leader
        if cause is None and _read_only(self.leader_dir):
            cause = "its file system is read-only (EROFS)"
        return PartitionOfflineError(
            f"{self.topic}-{self.partition} is offline: its last in-sync replica is on log dir {leader}, "
            f"which is offline{f' ({cause})' if cause else ''}. If that disk kept its data (e.g. it "
            f"only filled up or was remounted read-only), nothing acknowledged is lost: fix it (free "
            f"space on it, or remount it read-write), then run `kstream log-dirs online {leader}`. "
            "If the disk is gone, set unclean.leader.election.enable=true to go on from another "
            "replica, losing what it lacks")

    def _check_isr_locked(self, acks: str) -> None:
        minimum = self.config.min_insync_replicas
        if acks == "all" and len(self.info.isr) < minimum:
            raise NotEnoughReplicasError(
                f"{self.topic}-{self.partition} has {len(self.info.isr)} in-sync replica(s) "
                f"{list(self.info.isr)}, fewer than min.insync.replicas={minimum}; nothing was "
                "written. Bring log dirs back (or lower min.insync.replicas, or use acks=1)")

    def _append_leader_locked(self, batch: EncodedBatch, acks: str) -> tuple[AppendResult, bytes]:
        """Append on the leader; if its log dir fails (or it lost acknowledged records),
        fail over and try the new leader."""
        cause: BaseException | None = None
        for _ in range(len(self.replica_dirs) + 1):
            if self._leaderless_locked():
                if self.config.unclean_leader_election_enable:
                    self._elect_unclean_locked()
                if self._leaderless_locked():
                    raise self._offline_error(cause) from cause
            self._check_isr_locked(acks)
            leader = self.info.leader
            try:
                self._reconciler.reconcile_locked(self)
                if self.info.leader != leader:
                    continue  # the leader lacked acknowledged records: try the new one
                self._check_isr_locked(acks)  # reconcile may have dropped followers
                return self.on_replica(leader, lambda log: log.append_locked(batch, self.info.leader_epoch))
            except LogDirOfflineError as err:
                if self.info.leader == leader and not self._leaderless_locked():
                    raise  # leadership did not move: nothing to try again on
                cause = err
        raise NotEnoughReplicasError(
            f"{self.topic}-{self.partition}: no in-sync replica is left to take the write; bring a log "
            "dir back (kstream log-dirs online) or set unclean.leader.election.enable=true to accept loss")

    def on_replica(self, replica: int, action: Callable[[PartitionLog], T]) -> T:
        """Run a write on one replica; an I/O failure takes its log dir offline first."""
        try:
            return action(self.logs[replica])
        except LogDirOfflineError:
            self._take_offline_locked(replica)
            raise

    @property
    def lock(self) -> PartitionLock:
        return self._lock

    def refresh_locked(self) -> None:
        self._refresh_locked()

    def offline_locked(self) -> bool:
        """True when no leader can serve: the last in-sync replica's log dir is offline."""
        return self._leaderless_locked()

    def rejoin_locked(self, replica: int) -> None:
        self.info = self._metadata.add_to_isr(self.topic, self.partition, replica)
        self._add_replicas()
        self._lock.bump_generation()

    def _refresh_locked(self) -> None:
        """Re-read leader/ISR/epoch and log dir states when anyone changed the metadata."""
        version = self._metadata.data_version()
        if version != self._metadata_version:
            self.info = self._metadata.partition_info(self.topic, self.partition)
            self._online = {log_dir: up for log_dir, _, up in self._metadata.log_dirs()}
            self._add_replicas()
            self._metadata_version = version

    def remove_from_isr_locked(self, replicas: set[int]) -> None:
        self.info = self._metadata.remove_from_isr(self.topic, self.partition, replicas)
        self._lock.bump_generation()

    def _take_offline_locked(self, replica: int) -> None:
        self._metadata.take_log_dir_offline(replica)
        self.info = self._metadata.partition_info(self.topic, self.partition)
        self._online[replica] = False
        self._lock.bump_generation()

    def copy_frames_locked(self, replica: int, start: int, end: int, max_bytes: int) -> int:
        """Copy the leader's frames [start, end) to ``replica`` byte for byte, up to about
        ``max_bytes``; returns the offset reached. Caller holds the lock."""
        return copy_frames_locked(self, replica, start, end, max_bytes)

    # -- durability ------------------------------------------------------------------------------

    def _sync_all(self, replicas: list[int]) -> list[bool]:
        """fsync the replicas in parallel; whether each succeeded."""
        if len(replicas) == 1:
            return [self.sync_replica(replicas[0])]
        return list(self._pool().map(self.sync_replica, replicas))

    def sync_replica(self, replica: int) -> bool:
        """fsync one replica's log; False when its log dir failed. Safe on any thread (no
        metadata access: pass the verdicts to :meth:`settle_syncs` on the owning thread)."""
        try:
            self.logs[replica].flush()
            self._sync_errors.pop(replica, None)
            return True
        except LogDirOfflineError as err:
            self._sync_errors[replica] = err
            return False

    def settle_syncs(self, replicas: list[int], synced: list[bool]) -> list[int]:
        """Take the log dirs of replicas whose fsync failed offline (never retried); returns
        the replicas that fsynced."""
        failed = [replica for replica, ok in zip(replicas, synced, strict=True) if not ok]
        # (Not popped: a batch still in flight on the same replica failed the same way.)
        self._settled_failures = {r: e for r in failed if (e := self._sync_errors.get(r)) is not None}
        if failed:
            with self._lock:
                for replica in failed:
                    self._take_offline_locked(replica)
        return [replica for replica, ok in zip(replicas, synced, strict=True) if ok]

    def _pool(self) -> ThreadPoolExecutor:
        return self._flushers.get()

    def flush(self) -> None:
        """fsync every in-sync replica (a clean shutdown)."""
        in_sync = list(self.info.isr)
        self.settle_syncs(in_sync, self._sync_all(in_sync))

    def flush_acked(self) -> None:
        """fsync deferred acks=all appends on the in-sync replicas (a group commit);
        NotEnoughReplicasError when fewer than min.insync.replicas have them; once they
        do, the high watermark moves past them (readers see them)."""
        end, self._deferred_end = self._deferred_end, None
        self._require_fsynced(list(self.info.isr), "the batches written since the last fsync")
        if end is not None:
            self.publish_high_watermark(end)

    def take_deferred_end(self) -> tuple[int | None, list[int]]:
        """For a group commit run by the caller (:func:`flush_acked_together`): the end of the
        deferred acks=all appends (None: none) and the in-sync replicas to fsync; the end is
        taken, so publish it only after those fsyncs (:meth:`finish_deferred`)."""
        end, self._deferred_end = self._deferred_end, None
        return end, list(self.info.isr)

    def finish_deferred(self, end: int | None, in_sync: list[int], synced: list[bool]) -> None:
        """After the fsyncs of :meth:`take_deferred_end`'s replicas (``synced``, on any thread):
        NotEnoughReplicasError when too few fsynced; else the HW moves past ``end``."""
        self.require_synced(self.settle_syncs(in_sync, synced), "the batches written since the last fsync")
        if end is not None:
            self.publish_high_watermark(end)

    def _require_fsynced(self, in_sync: list[int], what: str) -> None:
        self.require_synced(self.settle_syncs(in_sync, self._sync_all(in_sync)), what)

    def require_synced(self, in_sync: list[int], what: str) -> None:
        """NotEnoughReplicasError unless ``in_sync`` (replicas that fsynced) reaches min.insync.replicas."""
        minimum = self.config.min_insync_replicas
        if len(in_sync) < minimum:
            causes = "".join(f"; replica {r}: {e} (fix that disk, then run `kstream log-dirs online {r}`)"
                             for r, e in self._settled_failures.items() if r not in in_sync)
            raise NotEnoughReplicasError(
                f"{self.topic}-{self.partition}: {what} are written but only {len(in_sync)} replica(s) "
                f"{in_sync} have them fsynced, fewer than min.insync.replicas={minimum}; not acknowledged"
                f"{causes}")

    # -- reading ----------------------------------------------------------------------------------

    def refresh_metadata(self) -> bool:
        """Re-read leader/ISR (no lock; for readers). True when the leader changed since
        the last :meth:`reader` was made (open a new one then)."""
        self.info = self._metadata.partition_info(self.topic, self.partition)
        self._add_replicas()
        return self.info.leader != self._reader_leader

    def high_watermark(self) -> int | None:
        """Offset below which every in-sync replica has the data (None: nothing written yet),
        checked once per handle after a possible power loss: see
        :meth:`kstream.log.cluster.high_watermark_check.HighWatermarkCheck.read`. Takes no
        lock and writes nothing."""
        return self._hw_check.read(self)

    def reader(self, check_crcs: bool = True) -> LogReader:
        """A reader of the leader's replica; it reports a missing dir to :meth:`_lost_dir`."""
        self._reader_leader = self.info.leader
        return LogReader(self.leader_dir, check_crcs=check_crcs, on_missing=self._lost_dir)

    def _lost_dir(self, directory: str) -> None:
        """A reader found the replica dir it reads missing: a failed disk. Its log dir is
        taken offline (leaders move to in-sync survivors; readers follow them on their
        next metadata check). Nothing is created. LogDirOfflineError when no replica
        can take over."""
        replica = next((r for r, d in self.replica_dirs.items() if d == directory), None)
        if replica is None:
            return
        try:
            with self._lock:  # also: a deleted topic raises here (its dirs moved away on purpose)
                self._refresh_locked()
                if replica not in self.info.replicas:
                    return  # reassigned away: its copy was deleted on purpose
                if not os.path.isdir(directory) and self._online.get(replica, True):
                    log.error("replica dir %s of %s-%s is missing: taking log dir %s offline",
                              directory, self.topic, self.partition, replica)
                    self._take_offline_locked(replica)
                leaderless = self.info.leader == replica and self._leaderless_locked()
        except TopicNotFoundError:
            return
        if leaderless:
            raise self._offline_error(None)

    def close(self) -> None:
        for log in self.logs.values():
            log.close()
        self._flushers.shutdown(wait=True)
        self._lock.close()


def _read_only(replica_dir: str) -> bool:
    """Whether the file system of ``replica_dir``'s log dir is read-only (mounted so, or a
    test's injected EROFS): why its partitions went offline, for the error message."""
    try:
        disk.check_writable(replica_dir)
        return bool(os.statvfs(os.path.dirname(replica_dir.rstrip("/"))).f_flag & os.ST_RDONLY)
    except OSError as err:
        return err.errno == errno.EROFS



def flush_acked_together(partitions: list[Partition]) -> None:
    """:meth:`Partition.flush_acked` on several partitions with all their fsyncs in parallel (a
    group commit across partitions: the time of one fsync, not one per partition). Each
    partition's HW moves only after its own replicas fsynced; the first NotEnoughReplicasError
    is raised after every partition was settled."""
    if len(partitions) <= 1:
        for handle in partitions:
            handle.flush_acked()
        return
    pending = [(handle, *handle.take_deferred_end()) for handle in partitions]
    jobs = sum(len(in_sync) for _, _, in_sync in pending)
    with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="kstream-fsync") as pool:
        futures = [[pool.submit(handle.sync_replica, r) for r in in_sync] for handle, _, in_sync in pending]
        synced = [[f.result() for f in replica_futures] for replica_futures in futures]
    error: NotEnoughReplicasError | None = None
    for (handle, end, in_sync), ok in zip(pending, synced, strict=True):
        try:
            handle.finish_deferred(end, in_sync, ok)
        except NotEnoughReplicasError as err:
            error = error or err
    if error is not None:
        raise error

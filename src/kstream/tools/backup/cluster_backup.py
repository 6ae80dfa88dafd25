"""A consistent backup of a live cluster, which is itself a cluster (`kstream backup DEST`).

Producers, consumers and Spark jobs go on while it runs; the source is only read. What the
copy guarantees, per partition: every record below the high watermark (HW) read at the
backup's cut is in it, offsets contiguous from the log start, and no transaction half
committed. Records appended after that HW may or may not be in it. docs/OPERATIONS.md
says the same for users.

How (the order is the point; docs/FORMAT.md names every file):

1. **Bulk pass**, no lock: every replica (all log dirs, all replicas, ISR or not) of the
   topics the metadata names is copied as it is, so the locked pass has little to do.
2. **The cut**: SQLite's write lock on the source's ``metadata.db`` is taken (BEGIN
   IMMEDIATE, rolled back: nothing is written) and held while
   a. ``metadata.db`` is copied through SQLite's online backup API: the state at the cut;
   b. the consumer offsets Delta table is copied, ``_delta_log`` first (``_last_checkpoint``
      before the listing it names), then the data files (Delta never rewrites a file, so a
      log copied first names only files that exist);
   c. each partition's HW is read (:func:`kstream.log.bounds`, the rule every reader uses),
      after the offsets table: a committed offset is at most the HW its reader saw, so none
      lies ahead of the copied data;
   d. every replica of the copied metadata is brought up to date (the bytes appended to a
      segment since the bulk pass, files replaced or gone; the small files first, the
      segments last, so a recovery point or index entry never names bytes the copy lacks).
   While the lock is held no transaction can be decided, completed, begun or joined, no
   topic or ISR change can commit: so every marker in the copied segments belongs to a
   transaction the copied metadata shows decided (a decision precedes its markers), and
   every decided transaction's data frames were written before its decision, hence before
   the copy. A transaction decided to commit whose markers the copy lacks reads as committed
   and is rolled forward by the copy's next writer (or ``init_transactions()``) as after a
   crash; an open one stays open and expires into an abort after ``transaction.timeout.ms``.
   Appends go on meanwhile: only writers that need a metadata write wait (SQLite's busy
   timeout, 60 s), for the length of the locked pass.
3. **Finishing the copy**: log dirs outside the cluster dir (absolute, or ``..``) are put
   under ``DEST/logs-<id>`` and the copy's metadata and ``cluster.properties`` name the new
   paths, so the copy never points at the source's disks; each partition's lock file gets
   the HW read at the cut; a topic found being deleted at the cut is deleted in the copy;
   ``metadata-snapshot.json`` is derived anew; everything is fsynced, ``cluster.properties``
   last (a copy cut short is not a cluster: opening it says so). Then the copy is opened
   and each partition checked: its HW is at least the one read at the cut.

Not copied: the partition lock files (fresh ones hold the HW), ``groups/`` (members'
heartbeats and commits in flight: a restored cluster has no live member), leftovers of
deleted topics and ``.tmp`` files, and log dirs the metadata has offline.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from kstream.errors import ClusterError
from kstream.groups.offsets_table import TABLE_DIR
from kstream.log.cluster.cluster import Cluster, resolve_cluster_path
from kstream.log.cluster.metadata import Metadata, TopicInfo
from kstream.log.partition_bounds import bounds
from kstream.log.storage import format as fmt
from kstream.log.storage.disk import fsync, fsync_dir
from kstream.log.storage.durable_file import read_properties, write_properties_atomically
from kstream.log.storage.lock import PartitionLock
from kstream.tools.backup.file_copy import FileCopier

log = logging.getLogger(__name__)

LOCK_WAIT_MS = 60_000
"""How long the backup waits for SQLite's write lock on the source (writers in flight)."""
DELTA_LOG = "_delta_log"
LAST_CHECKPOINT = "_last_checkpoint"


@dataclass(frozen=True)
class PartitionCopy:
    """One partition of a backup. ``high_watermark``: every record below it is in the copy
    (the HW read at the cut); ``log_end_offset``: the copy's leader log end (records from the
    HW on were appended meanwhile: visible once the copy's next writer publishes them)."""

    topic: str
    partition: int
    high_watermark: int
    log_end_offset: int
    replicas: int


@dataclass(frozen=True)
class BackupReport:
    """What :func:`backup_cluster` copied."""

    source: str
    destination: str
    partitions: tuple[PartitionCopy, ...]
    bytes_copied: int
    offsets_table: bool  # the consumer offsets table was copied (False: no group ever committed)
    dropped_topics: tuple[str, ...]  # being deleted at the cut: deleted in the copy too
    log_dirs: tuple[tuple[int, str], ...]  # the copy's log dirs (id, path as stored)

    @property
    def topics(self) -> list[str]:
        return sorted({p.topic for p in self.partitions})


def backup_cluster(source_path: str | None, destination: str, *, lock_wait_ms: int = LOCK_WAIT_MS) -> BackupReport:
    """Copy the cluster at ``source_path`` (live) into ``destination``, a new or empty
    directory, as a cluster of its own (see the module docstring). Writes nothing to the
    source. ClusterNotFoundError when there is no cluster at ``source_path``; ClusterError
    when ``destination`` is not empty or lies inside the source."""
    destination = os.path.abspath(destination)
    if os.path.exists(destination) and (not os.path.isdir(destination) or os.listdir(destination)):
        raise ClusterError(f"backup destination {destination} exists and is not empty; give a new or empty "
                           "directory (a backup never writes over files)")
    source = Cluster.open(resolve_cluster_path(source_path))
    try:
        _check_apart(source, destination)
        created = not os.path.exists(destination)
        os.makedirs(destination, exist_ok=True)
        if created:
            fsync_dir(os.path.dirname(destination))
        try:
            return _Backup(source, destination, lock_wait_ms).run()
        except BaseException as err:
            if not os.path.exists(os.path.join(destination, fmt.CLUSTER_PROPERTIES)):
                err.add_note(f"{destination} holds a partial copy (not a cluster: no {fmt.CLUSTER_PROPERTIES}); "
                             "remove it before trying again")
            raise
    finally:
        source.close()


def _check_apart(source: Cluster, destination: str) -> None:
    for name, path in [("the cluster dir", source.path), *((f"log dir {i}", p) for i, p in
                                                           source.log_dir_paths().items())]:
        path = os.path.realpath(path)
        real = os.path.realpath(destination)
        if real == path or real.startswith(path + os.sep) or path.startswith(real + os.sep):
            raise ClusterError(f"backup destination {destination} overlaps {name} of the cluster ({path}); "
                               "put the backup somewhere else")


@dataclass(frozen=True)
class _Replica:
    topic: TopicInfo
    partition: int
    log_dir: int
    source: str  # the replica dir in the source
    destination: str  # its copy


class _Backup:
    """One run of :func:`backup_cluster` (see the module docstring for the steps)."""

    def __init__(self, source: Cluster, destination: str, lock_wait_ms: int):
        self.source = source
        self.destination = destination
        self.lock_wait_ms = lock_wait_ms
        self.copier = FileCopier()
        self.layout: dict[int, str] = {}  # log dir id -> its path in the copy, as stored
        self.copied_dirs: set[str] = set()  # log dirs made in the copy
        self.replica_copies: set[str] = set()  # replica dirs made in the copy

    def run(self) -> BackupReport:
        source_metadata = self.source.metadata
        self._copy_replicas(self._replicas(source_metadata))  # 1. bulk, no lock
        with self._cut():  # 2.
            copy = self._copy_metadata_db()
            try:
                topics = [copy.topic(name) for name in copy.topic_names()]
                has_table = self._copy_offsets_table()
                high_watermarks = self._high_watermarks(topics)
                self._copy_log_dirs(copy)
                replicas = list(self._replicas(copy))
                missing = self._copy_replicas(replicas)
            except BaseException:
                copy.close()
                raise
        dropped = self._finish(copy, topics, replicas, missing, high_watermarks)  # 3.
        partitions = self._check_copy(topics, dropped, high_watermarks)
        return BackupReport(self.source.path, self.destination, partitions, self.copier.bytes_copied, has_table,
                            tuple(sorted(dropped)), tuple(sorted(self.layout.items())))

    @contextmanager
    def _cut(self) -> Iterator[None]:
        """Hold SQLite's write lock on the source's metadata.db (nothing is written)."""
        metadata = self.source.metadata
        with ExitStack() as stack:
            try:
                stack.enter_context(metadata.locked_read(self.lock_wait_ms))
            except sqlite3.OperationalError as err:
                raise ClusterError(
                    f"could not take the write lock of {metadata.path} within {self.lock_wait_ms} ms ({err}); the "
                    "backup holds it (writing nothing) while it copies what changed since its first pass. If a "
                    "process holds it that long, stop it; metadata.db must be on a writable file system") from err
            yield

    # -- what to copy -------------------------------------------------------------------

    def _replicas(self, metadata: Metadata) -> Iterator[_Replica]:
        """Every replica the metadata names on an online log dir (an offline one may be a
        failed disk: the copy has it offline too, with no files)."""
        log_dirs = metadata.log_dirs()
        self._plan_layout(log_dirs)
        online = {log_dir: os.path.join(self.source.path, path) if not os.path.isabs(path) else path
                  for log_dir, path, up in log_dirs if up}
        for name in metadata.topic_names():
            info = metadata.topic(name)
            for placement in info.partitions:
                # The leader last: a follower copied after it could hold frames it lacks (the
                # copy's first writer cuts such a tail back, as after a power loss); copied
                # before it, a follower lacks only frames the leader has (and writers copy over).
                for log_dir in sorted(placement.replicas, key=lambda r: r == placement.leader):
                    if log_dir in online:
                        replica = fmt.replica_dir_name(name, placement.partition)
                        yield _Replica(info, placement.partition, log_dir, os.path.join(online[log_dir], replica),
                                       os.path.join(self.destination, self.layout[log_dir], replica))

    def _plan_layout(self, log_dirs: list[tuple[int, str, bool]]) -> None:
        """Where each log dir goes in the copy: a relative one inside the cluster dir keeps its
        path (the default ``logs`` stays ``logs``); any other goes to ``logs-<id>``."""
        for log_dir, path, _ in log_dirs:
            if log_dir in self.layout:
                continue
            kept = os.path.normpath(path)
            if os.path.isabs(kept) or kept == ".." or kept.startswith(".." + os.sep):
                kept = f"logs-{log_dir}"
                while kept in self.layout.values() or any(os.path.normpath(p) == kept for _, p, _ in log_dirs):
                    kept += "-copy"
            self.layout[log_dir] = kept

    # -- copying ------------------------------------------------------------------------

    def _copy_log_dirs(self, metadata: Metadata) -> None:
        """Every online log dir gets its dir and meta.properties in the copy, replicas or not
        (a formatted log dir found missing is a failed disk: the copy would take it offline)."""
        log_dirs = metadata.log_dirs()
        self._plan_layout(log_dirs)
        for log_dir, path, online in log_dirs:
            source = path if os.path.isabs(path) else os.path.join(self.source.path, path)
            copy = os.path.join(self.destination, self.layout[log_dir])
            if online and os.path.isdir(source) and copy not in self.copied_dirs:
                self.copier.make_dir(copy)
                self.copier.copy(os.path.join(source, fmt.LOG_DIR_META), os.path.join(copy, fmt.LOG_DIR_META))
                self.copied_dirs.add(copy)

    def _copy_replicas(self, replicas: list[_Replica] | Iterator[_Replica]) -> list[_Replica]:
        """Copy (or bring up to date) each replica dir; the replicas whose source dir is gone."""
        missing = []
        for replica in replicas:
            log_dir_copy = os.path.dirname(replica.destination)
            if log_dir_copy not in self.copied_dirs:
                self.copier.make_dir(log_dir_copy)
                self.copier.copy(os.path.join(os.path.dirname(replica.source), fmt.LOG_DIR_META),
                                 os.path.join(log_dir_copy, fmt.LOG_DIR_META))
                self.copied_dirs.add(log_dir_copy)
            if not self._copy_replica(replica.source, replica.destination):
                missing.append(replica)
        return missing

    def _copy_replica(self, source: str, destination: str) -> bool:
        """Small files first, then the segments (oldest first), listed again after the small
        files: what the small files say (recovery point, index entries, leader epochs) is
        then at most what the copied segments hold, and a segment the recovery point names
        is in the copy. (A recovery point or HW past a copy's bytes reads as lost records:
        the copy would refuse writes.) False when the source dir is gone."""
        small = self._list_files(source, lambda name: not name.endswith(fmt.LOG_SUFFIX))
        if small is None:
            return False
        self.copier.make_dir(destination)
        self.replica_copies.add(destination)
        for name in small:
            self.copier.copy(os.path.join(source, name), os.path.join(destination, name))
        segments = self._list_files(source, lambda name: name.endswith(fmt.LOG_SUFFIX)) or []
        for name in segments:
            self.copier.copy(os.path.join(source, name), os.path.join(destination, name), append_only=True)
        for name in set(os.listdir(destination)) - set(small) - set(segments):  # gone since the bulk pass
            self.copier.remove(os.path.join(destination, name))
        return True

    @staticmethod
    def _list_files(directory: str, wanted: Callable[[str], bool]) -> list[str] | None:
        """The files of ``directory`` that ``wanted`` picks, but ``.tmp`` ones, sorted; None when
        the directory is gone."""
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            return None
        return sorted(n for n in names if wanted(n) and not n.endswith(fmt.TMP_SUFFIX)
                      and os.path.isfile(os.path.join(directory, n)))

    def _copy_metadata_db(self) -> Metadata:
        """metadata.db through SQLite's online backup API (one transaction's view), opened."""
        path = os.path.join(self.destination, fmt.METADATA_DB)
        staging = path + fmt.TMP_SUFFIX
        uri = f"file:{urllib.parse.quote(os.path.abspath(self.source.metadata.path))}?mode=ro"
        reader = sqlite3.connect(uri, uri=True)
        try:
            target = sqlite3.connect(staging)
            try:
                reader.backup(target)
                target.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
            finally:
                target.close()
        finally:
            reader.close()
        fd = os.open(staging, os.O_RDONLY)
        try:
            fsync(fd)
        finally:
            os.close(fd)
        os.rename(staging, path)
        self.copier.note_changed(self.destination)
        return Metadata(path)

    def _copy_offsets_table(self) -> bool:
        """The consumer offsets Delta table: its log first, then its data files."""
        table = os.path.join(self.source.path, TABLE_DIR)
        if not os.path.isdir(table):
            return False
        copy = os.path.join(self.destination, TABLE_DIR)
        log_dir, log_copy = os.path.join(table, DELTA_LOG), os.path.join(copy, DELTA_LOG)
        self.copier.make_dir(log_copy)
        # _last_checkpoint before the listing: the checkpoint it names is then in the listing.
        self.copier.copy(os.path.join(log_dir, LAST_CHECKPOINT), os.path.join(log_copy, LAST_CHECKPOINT))
        for name in sorted(os.listdir(log_dir)) if os.path.isdir(log_dir) else []:
            if name != LAST_CHECKPOINT and not name.endswith(fmt.TMP_SUFFIX) and not name.startswith("."):
                path = os.path.join(log_dir, name)
                if os.path.isfile(path):
                    self.copier.copy(path, os.path.join(log_copy, name))
        for root, dirs, files in os.walk(table):
            dirs[:] = sorted(d for d in dirs if not (root == table and d == DELTA_LOG))
            relative = os.path.relpath(root, table)
            self.copier.make_dir(os.path.normpath(os.path.join(copy, relative)))
            for name in sorted(files):
                if not name.endswith(fmt.TMP_SUFFIX) and not name.startswith("."):
                    self.copier.copy(os.path.join(root, name), os.path.normpath(os.path.join(copy, relative, name)))
        return True

    def _high_watermarks(self, topics: list[TopicInfo]) -> dict[tuple[str, int], int]:
        """Each partition's HW as readers see it now (bounds()), read through a second
        connection: this one holds the write lock, and a reader's confirming read must
        find it busy (it then writes nothing and waits for nothing)."""
        reader = Cluster(self.source.path, self.source.config, self.source.cluster_id,
                         self.source.legacy_transaction_timeout_ms)
        found = {}
        try:
            for info in topics:
                for placement in info.partitions:
                    handle = reader.partition(info, placement.partition)
                    try:
                        if os.path.isdir(handle.leader_dir):  # else: being deleted, or a failed disk
                            found[(info.name, placement.partition)] = bounds(
                                reader, info, placement.partition, handle=handle).high_watermark
                    finally:
                        handle.close()
        finally:
            reader.close()
        return found

    # -- finishing ------------------------------------------------------------------------

    def _finish(self, copy: Metadata, topics: list[TopicInfo], replicas: list[_Replica], missing: list[_Replica],
                high_watermarks: dict[tuple[str, int], int]) -> set[str]:
        """Make the copy a cluster of its own; the topics dropped (being deleted at the cut)."""
        dropped = {r.topic.name for r in missing if self._being_deleted(r.topic, r.partition)}
        for replica in missing:
            if replica.topic.name not in dropped:
                log.warning("replica dir %s is missing (a failed disk?); the backup has no copy of it: opening "
                            "the backup takes log dir %s offline, as opening the cluster will", replica.source,
                            replica.log_dir)
        wanted = {r.destination for r in replicas if r.topic.name not in dropped}
        for directory in self.replica_copies - wanted:  # topics gone since the bulk pass, and dropped ones
            shutil.rmtree(directory)
            self.copier.note_changed(os.path.dirname(directory))
        try:
            copy.move_log_dirs(self.layout)  # never the source's disks (and a new snapshot)
            for name in sorted(dropped):
                copy.delete_topic(name)
        finally:
            copy.close()
        # Written without cluster.properties (it comes last), the snapshot lacks the cluster id:
        # the copy's first open derives it again (a missing snapshot is rewritten).
        os.remove(os.path.join(self.destination, fmt.METADATA_SNAPSHOT))
        for info in topics:
            for placement in info.partitions:
                key = (info.name, placement.partition)
                if info.name not in dropped and key in high_watermarks:
                    self._write_high_watermark(info, placement.partition, high_watermarks[key])
        self.copier.sync_dirs()
        values = read_properties(os.path.join(self.source.path, fmt.CLUSTER_PROPERTIES))
        values["log.dirs"] = ",".join(path for _, path in sorted(self.layout.items()))
        write_properties_atomically(os.path.join(self.destination, fmt.CLUSTER_PROPERTIES), values,
                                    f"kstream cluster: broker-side settings (a backup of {self.source.path})")
        fsync_dir(self.destination)
        return dropped

    def _being_deleted(self, info: TopicInfo, partition: int) -> bool:
        return PartitionLock(self.source.lock_path(info, partition)).deleted()

    def _write_high_watermark(self, info: TopicInfo, partition: int, high_watermark: int) -> None:
        relative = os.path.relpath(self.source.lock_path(info, partition), self.source.path)
        lock = PartitionLock(os.path.join(self.destination, relative))
        try:
            with lock:
                lock.write_high_watermark(high_watermark)
            fd = os.open(lock.path, os.O_RDONLY)
            try:
                fsync(fd)  # (a lost one would be rebuilt, but a backup is written to last)
            finally:
                os.close(fd)
        finally:
            lock.close()
        self.copier.note_changed(os.path.dirname(lock.path))
        self.copier.note_changed(os.path.dirname(os.path.dirname(lock.path)))

    def _check_copy(self, topics: list[TopicInfo], dropped: set[str],
                    high_watermarks: dict[tuple[str, int], int]) -> tuple[PartitionCopy, ...]:
        """Open the copy as a cluster; each partition's HW there is at least the one read at
        the cut (its leader holds every record below it), else ClusterError."""
        copy = Cluster.open(self.destination)
        partitions = []
        try:
            for info in topics:
                if info.name in dropped:
                    continue
                for placement in info.partitions:
                    key = (info.name, placement.partition)
                    if key not in high_watermarks:
                        continue  # no leader dir at the cut (a failed disk): nothing is promised
                    found = bounds(copy, info.name, placement.partition)
                    if found.high_watermark < high_watermarks[key]:
                        raise ClusterError(
                            f"the backup's {info.name}-{placement.partition} ends at offset {found.high_watermark}, "
                            f"below the high watermark {high_watermarks[key]} read at the cut (did its leader move "
                            f"during the backup?); remove {self.destination} and take the backup again")
                    partitions.append(PartitionCopy(info.name, placement.partition, high_watermarks[key],
                                                    found.log_end_offset, len(placement.replicas)))
        finally:
            copy.close()
        return tuple(partitions)

"""The tierer: copies the committed records of sealed segments into the topic's Delta table.

For each partition of a tiered topic (``tier.delta.path``), one pass:

1. reads the lake end from the Delta log (the app transaction of :mod:`kstream.tiering.lake_table`)
   and reconciles the metadata's row with it (:mod:`kstream.log.cluster.lake_offsets`: a cache,
   never ahead of Delta);
2. copies ``[lake end, min(base of the active segment, LSO))`` — sealed segments only, never
   the active one, and nothing a read_committed reader could not see yet — through the
   engine's read_committed path (:func:`kstream.log.visible_reads.read_visible`: aborted
   transactions and control frames dropped), in commits of whole segments of at most
   :data:`COMMIT_MAX_BYTES` each;
3. per commit: one Delta commit of the rows plus the app transaction (version = the new end),
   fsynced; then the metadata row; only then may retention delete the segments below it.

A tierer killed anywhere restarts from the Delta log: a commit that landed is never made again
(its version is the table's), one that did not land is made whole; the metadata row follows.
A partition is copied when due: its oldest untiered sealed segment waited ``tier.lag.ms``, or
its untiered sealed segments hold ``tier.lag.bytes`` (``force``: now). One tierer per topic at
a time: it holds the topic's tier lock (``<cluster>/locks/tier-<topic id>.lock``) for a pass.

Compacted topics are refused by the topic config (the cleaner would rewrite what the lake
holds). Readers read lake and log as one offset space (the union read:
:mod:`kstream.tiering.lake_reader`, docs/TIERING.md).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.lake_offsets import LakeEnd, LakeOffsets
from kstream.log.cluster.metadata import TopicInfo
from kstream.log.cluster.partition import Partition
from kstream.log.partition_bounds import bounds
from kstream.log.storage import file_lock
from kstream.log.storage import format as fmt
from kstream.log.storage.faults import crash_point
from kstream.log.storage.output import OutputBuilder, output_schema
from kstream.log.storage.records import PayloadCodec
from kstream.log.transactions.isolation import READ_COMMITTED, Isolation
from kstream.log.transactions.store import TransactionStore
from kstream.log.visible_reads import read_visible
from kstream.tiering.lake_status import Untiered, untiered
from kstream.tiering.lake_table import LakeTable, TierError, lake_schema

log = logging.getLogger(__name__)

COMMIT_MAX_BYTES = 1 << 30
"""Most bytes of segment files one Delta commit copies (a commit always takes at least one
segment): bounds the work a killed tierer loses and what one commit holds."""


@dataclass(frozen=True)
class PartitionTiered:
    """What a pass did to one partition: the lake held ``[.., start_offset)`` before and holds
    ``[.., end_offset)`` now; ``records`` rows went in, in ``commits`` Delta commits (the last
    one table version ``delta_version``); ``waiting``: why nothing was copied, if nothing was."""

    topic: str
    partition: int
    start_offset: int
    end_offset: int
    records: int = 0
    commits: int = 0
    delta_version: int | None = None
    waiting: str | None = None


class Tierer:
    """Tiers the topics of one open cluster. Not thread-safe; processes exclude each other per
    topic (the tier lock)."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.lakes = LakeOffsets(cluster.metadata)
        self._store = TransactionStore.for_cluster(cluster)
        self._codec = PayloadCodec()

    def tiered_topics(self) -> list[str]:
        """The cluster's topics with tier.delta.path set."""
        return [name for name in self.cluster.list_topics()
                if self.cluster.log_config(self.cluster.topic(name)).tiered]

    def run(self, topics: list[str] | None = None, *, force: bool = False) -> list[PartitionTiered]:
        """One pass over ``topics`` (default: every tiered topic)."""
        done: list[PartitionTiered] = []
        for name in self.tiered_topics() if topics is None else topics:
            done.extend(self.run_topic(name, force=force))
        return done

    def run_topic(self, name: str, *, force: bool = False, now_ms: int | None = None) -> list[PartitionTiered]:
        """One pass over one topic's partitions; TierError when the topic is not tiered or its
        table is unusable."""
        info = self.cluster.topic(name)
        config = self.cluster.log_config(info)
        if not config.tiered:
            raise TierError(f"topic {name!r} is not tiered: set its Delta table with "
                            f"`kstream topics alter {name} --config tier.delta.path=/abs/dir` first")
        assert config.tier_table_dir is not None
        table = LakeTable(config.tier_table_dir, info.name, info.topic_id)
        schema = lake_schema(self.cluster.topic_schema(info))
        now = int(time.time() * 1000) if now_ms is None else now_ms
        lock_fd = self._lock(info)
        handles: dict[int, Partition] = {}
        try:
            table.recover()  # a commit a power cut tore (under the lock: no pass is writing one)
            recorded = self.lakes.ends(info.name, info.topic_id)
            done: dict[int, PartitionTiered] = {}
            work: list[_Piece] = []
            for number in range(info.num_partitions):
                handles[number] = handle = self.cluster.partition(info, number)
                found = self._plan(info, handle, table, recorded.get(number), force, now, config.tier_lag_ms,
                                   config.tier_lag_bytes)
                if isinstance(found, PartitionTiered):
                    done[number] = found
                else:
                    work.extend(found)
            for pieces in _commits(work):
                self._commit(info, handles, table, schema, pieces, done)
            return [done[number] for number in range(info.num_partitions)]
        finally:
            for handle in handles.values():
                handle.close()
            os.close(lock_fd)  # releases the lock

    def _lock(self, info: TopicInfo) -> int:
        directory = os.path.join(self.cluster.path, fmt.LOCKS_DIR)
        os.makedirs(directory, exist_ok=True)
        fd = os.open(os.path.join(directory, f"tier-{info.topic_id}.lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            file_lock.lock_exclusive(fd)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _plan(self, info: TopicInfo, handle: Partition, table: LakeTable, recorded: LakeEnd | None,
              force: bool, now_ms: int, lag_ms: int, lag_bytes: int) -> PartitionTiered | list[_Piece]:
        """What to copy of one partition: its pieces (one per commit), or why nothing."""
        number = handle.partition
        partition_bounds = bounds(self.cluster, info, number, handle=handle, store=self._store)
        delta = table.open()
        lake_end = 0 if delta is None else table.end_offset(delta, number)
        self._reconcile(info, number, table, lake_end, None if delta is None else delta.version(),
                        recorded, partition_bounds.log_start_offset)
        waiting = untiered(handle.leader_dir, lake_end, partition_bounds, now_ms)
        if waiting.lag_offsets == 0:
            return PartitionTiered(info.name, number, lake_end, lake_end, waiting="nothing sealed to copy")
        if not force and waiting.age_ms < lag_ms and waiting.size_bytes < lag_bytes:
            return PartitionTiered(info.name, number, lake_end, lake_end, waiting=(
                f"not due: {waiting.size_bytes} bytes waited {waiting.age_ms} ms "
                f"(tier.lag.ms={lag_ms}, tier.lag.bytes={lag_bytes})"))
        if waiting.start > lake_end:
            log.info("%s-%d: the lake starts at the log start %d (offsets below it were deleted "
                     "before the topic tiered)", info.name, number, waiting.start)
        pieces = []
        start = waiting.start
        for end, size in _commit_ends(handle.leader_dir, waiting):
            pieces.append(_Piece(number, lake_end, start, end, size,
                                 partition_bounds.high_watermark))
            start = end
        return pieces

    def _reconcile(self, info: TopicInfo, number: int, table: LakeTable, lake_end: int,
                   version: int | None, recorded: LakeEnd | None, log_start: int) -> None:
        """Make the metadata row say what the Delta log says (Delta is the truth)."""
        cached = 0 if recorded is None else recorded.end_offset
        if cached == lake_end:
            return
        if cached > lake_end:
            # The row is written only after its commit is durable: the table lost commits since
            # (restored from an older backup, or replaced). Retention may have deleted what it lacks.
            if log_start > lake_end:
                raise TierError(
                    f"{info.name}-{number}: the tier table {table.path} holds offsets below {lake_end} "
                    f"(version {version}), but kstream recorded {cached} and the log starts at {log_start}: "
                    f"offsets {lake_end}..{log_start - 1} are in neither. Restore the table from a backup "
                    "that has them; nothing was written")
            log.warning("%s-%d: the tier table %s ends at %d, below the %d kstream recorded; copying "
                        "again from %d (the log still has it)", info.name, number, table.path, lake_end,
                        cached, lake_end)
        elif version is not None:
            # Delta is ahead: a pass died after its commit, or its fsync failed (a full disk).
            # Retention trusts the row: the commits it would now cover are made durable first.
            table.sync_commits(-1 if recorded is None else recorded.delta_version + 1, version)
        self.lakes.record(info.name, info.topic_id, {number: lake_end}, -1 if version is None else version)

    def _commit(self, info: TopicInfo, handles: dict[int, Partition], table: LakeTable, schema: pa.Schema,
                pieces: list[_Piece], done: dict[int, PartitionTiered]) -> None:
        """One Delta commit of ``pieces`` (at most one per partition), then the metadata rows."""
        counted = dict.fromkeys((piece.partition for piece in pieces), 0)
        rows = (batch for piece in pieces for batch in self._rows(handles[piece.partition], info, piece, schema,
                                                                  counted))
        ends = {piece.partition: piece.end for piece in pieces}
        version = table.append(rows, schema, ends, {
            "kstream.topic": info.name,
            "kstream.ranges": ",".join(f"{p.partition}:{p.start}-{p.end}" for p in pieces)})
        crash_point("tier.delta-committed")
        self.lakes.record(info.name, info.topic_id, ends, version)
        crash_point("tier.metadata-recorded")
        for piece in pieces:
            before = done.get(piece.partition)
            done[piece.partition] = PartitionTiered(
                info.name, piece.partition, piece.lake_end if before is None else before.start_offset, piece.end,
                counted[piece.partition] + (0 if before is None else before.records),
                1 + (0 if before is None else before.commits), version)

    def _rows(self, handle: Partition, info: TopicInfo, piece: _Piece, schema: pa.Schema,
              counted: dict[int, int]) -> Iterator[pa.RecordBatch]:
        """The committed records of the piece's ``[start, end)`` as batches of the table's ``schema``."""
        reader = handle.reader(check_crcs=True)
        isolation = Isolation(READ_COMMITTED, self._store, info.name, piece.partition, handle.leader_dir)
        builder = OutputBuilder(info.name, piece.partition, output_schema(self.cluster.topic_schema(info)))
        try:
            for stored in read_visible(reader, isolation, piece.start, piece.end, piece.high_watermark,
                                       self._codec, high_watermark_now=lambda: handle.high_watermark() or 0):
                batch = builder.build(stored).cast(schema)
                counted[piece.partition] += batch.num_rows
                yield batch
        finally:
            reader.close()


@dataclass(frozen=True)
class _Piece:
    """One partition's share of one commit: ``[start, end)``, ``size_bytes`` of segment files;
    ``lake_end``: the partition's lake end before this pass."""

    partition: int
    lake_end: int
    start: int
    end: int
    size_bytes: int
    high_watermark: int


def _commits(work: list[_Piece]) -> Iterator[list[_Piece]]:
    """The pieces grouped into commits: partitions share a commit up to :data:`COMMIT_MAX_BYTES`
    of segment files (fewer, larger commits: fewer small files and fsyncs), a partition at most
    once per commit (its next piece goes in the next commit, after this one's end)."""
    current: list[_Piece] = []
    size = 0
    for piece in work:
        if current and (size + piece.size_bytes > COMMIT_MAX_BYTES
                        or any(p.partition == piece.partition for p in current)):
            yield current
            current, size = [], 0
        current.append(piece)
        size += piece.size_bytes
    if current:
        yield current


def _commit_ends(directory: str, waiting: Untiered) -> Iterator[tuple[int, int]]:
    """(end offset, bytes of segment files) of the pieces that copy ``waiting``: whole segments,
    at most :data:`COMMIT_MAX_BYTES` per piece (one segment at least), the last ending at
    ``waiting.end``."""
    size = 0
    bases = waiting.segment_bases
    for index, base in enumerate(bases[:-1]):
        following = bases[index + 1]
        if following <= waiting.start:
            continue
        size += os.path.getsize(os.path.join(directory, fmt.segment_file_name(base)))
        if following >= waiting.end:
            break
        if size >= COMMIT_MAX_BYTES:
            yield following, size
            size = 0
    yield waiting.end, size

"""Clean one replica's sealed segments with a :class:`CleaningPlan`, and swap them in.

Contract:

* Only sealed segments (never the last, active one) and only frames wholly below
  ``plan.end_offset`` are cleaned; frames past it are copied as they are.
* Offsets are preserved: every frame keeps its span (base offset and record
  count), so frames still tile the log's offsets; a frame that keeps some records
  is rewritten sparse, one that keeps none becomes a filler (frame_rewrite).
* A transaction marker is kept while any record of its transaction is left in
  the replica (Kafka's rule), else it becomes a filler.
* Every frame read is checked (header and payload checksum); a bad one raises
  :class:`CorruptBatchError` and nothing is swapped.
* A segment in which nothing changes is not rewritten. The rewritten ones are
  swapped in together (segment_swap: one decision, crash safe).

:func:`clean_replica` does it all under the partition lock the caller holds.
:func:`build_replica` does step 1 (the cleaned files, built in ``cleaner-building``,
fsynced) without the partition lock, recording every segment file it read;
:func:`swap_built` then swaps them in under the partition lock, after
:func:`still_as_read` confirmed that none of those files changed meanwhile (retention,
a truncation, a recovery), else :func:`discard_built` drops them. Whoever swaps holds
the partition lock (the swap renames files other writers and recovery look at) and
has bumped the lock's generation (readers re-read what changed).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

import pyarrow as pa

from kstream.errors import CorruptBatchError
from kstream.log.storage import disk
from kstream.log.storage import format as fmt
from kstream.log.storage.cleaner.frame_rewrite import CleaningPlan, Rewritten, filler, rewrite
from kstream.log.storage.cleaner.throttle import UNLIMITED, IoThrottle
from kstream.log.storage.frames import FrameWalk, pread_from
from kstream.log.storage.records import PayloadCodec
from kstream.log.storage.segment import Segment
from kstream.log.storage.segment_swap import building_dir, finish_swap, staging_dir, swap_in


@dataclass(frozen=True)
class ReplicaCleaned:
    """What one clean of a replica did."""

    segments_rewritten: int
    bytes_before: int
    bytes_after: int
    records_removed: int


@dataclass
class _Frame:
    header: fmt.FrameHeader
    raw: bytes  # header + payload as they are
    out: Rewritten | None = None  # the cleaned frame; None: unchanged

    def bytes_out(self) -> tuple[bytes, bytes]:
        if self.out is None:
            return self.raw[:fmt.HEADER_SIZE], self.raw[fmt.HEADER_SIZE:]
        return self.out.header, self.out.payload


@dataclass
class BuiltReplica:
    """A replica's cleaned segments built and fsynced in ``staging`` (None: nothing changes),
    and the identity (inode, size, mtime) of every segment file the build read."""

    directory: str
    staging: str | None
    result: ReplicaCleaned
    read: dict[int, tuple[int, int, int]] = field(default_factory=dict)


def clean_replica(directory: str, plan: CleaningPlan, index_interval_bytes: int) -> ReplicaCleaned:
    """Clean the replica in ``directory`` with ``plan`` under the partition lock the caller
    holds (see the module contract)."""
    finish_swap(directory)
    built = _build(directory, plan, index_interval_bytes, lambda: staging_dir(directory))
    swap_built(built)
    return built.result


def build_replica(directory: str, plan: CleaningPlan, index_interval_bytes: int,
                  throttle: IoThrottle | None = None) -> BuiltReplica:
    """Step 1 without the partition lock (see the module); the caller holds the partition's
    cleaner lock. Sealed segments below ``plan.end_offset`` do not change under it but by
    retention, a truncation or a recovery, which :func:`still_as_read` detects. ``throttle``
    (log.cleaner.io.max.bytes.per.second) counts every frame read and written and sleeps
    between frames to keep under its limit."""
    return _build(directory, plan, index_interval_bytes, lambda: building_dir(directory), throttle)


def still_as_read(built: BuiltReplica) -> bool:
    """True when every segment file the build read is still there, the same file, unchanged.
    Caller holds the partition lock."""
    for base, identity in built.read.items():
        try:
            if _identity(os.stat(os.path.join(built.directory, fmt.segment_file_name(base)))) != identity:
                return False
        except FileNotFoundError:
            return False
    return True


def swap_built(built: BuiltReplica) -> None:
    """Steps 2 to 5 (caller holds the partition lock and bumped its generation)."""
    if built.staging is not None:
        swap_in(built.directory, built.staging)
        built.staging = None


def discard_built(built: BuiltReplica) -> None:
    """Drop what a build made (nothing of the replica changed)."""
    if built.staging is not None:
        shutil.rmtree(built.staging, ignore_errors=True)
        built.staging = None


def _build(directory: str, plan: CleaningPlan, index_interval_bytes: int, make_staging,
           throttle: IoThrottle | None = None) -> BuiltReplica:
    throttle = throttle or IoThrottle(UNLIMITED)
    bases = fmt.list_segment_bases(directory)
    codec = PayloadCodec()
    live: dict[int, bool] = {}  # producer id -> its open transaction still has a record
    built = BuiltReplica(directory, None, ReplicaCleaned(0, 0, 0, 0))
    rewritten = before = after = removed = 0
    try:
        for base in bases[:-1]:
            if base >= plan.end_offset:
                break
            frames = _cleaned_frames(directory, base, plan, codec, live, built.read, throttle)
            changed = [frame for frame in frames if frame.out is not None]
            if not changed:
                continue
            if built.staging is None:
                built.staging = make_staging()
            _write_segment(built.staging, base, frames, index_interval_bytes, throttle)
            rewritten += 1
            before += sum(len(frame.raw) for frame in changed)
            after += sum(len(frame.out.header) + len(frame.out.payload) for frame in changed if frame.out)
            removed += sum(_removed(frame) for frame in changed)
    except BaseException:
        discard_built(built)
        raise
    built.result = ReplicaCleaned(rewritten, before, after, removed)
    return built


def _identity(stat: os.stat_result) -> tuple[int, int, int]:
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def _cleaned_frames(directory: str, base: int, plan: CleaningPlan, codec: PayloadCodec,
                    live: dict[int, bool], read_files: dict[int, tuple[int, int, int]],
                    throttle: IoThrottle) -> list[_Frame]:
    """Every frame of a sealed segment, with its cleaned form where it changes; the file's
    identity goes to ``read_files``."""
    path = os.path.join(directory, fmt.segment_file_name(base))
    fd = os.open(path, os.O_RDONLY)
    try:
        stat = os.fstat(fd)
        read_files[base] = _identity(stat)
        size = stat.st_size
        read = pread_from(fd)
        walk = FrameWalk(read, size, 0, next_offset=base, verify_payload=True)
        frames = []
        for position, header in walk:
            frame = _Frame(header, bytes(read(position, header.frame_size)))
            throttle.spent(header.frame_size)
            if header.next_offset <= plan.end_offset:
                frame.out = _clean(frame, plan, codec, live)
            _note_transaction(frame, live)
            frames.append(frame)
        if walk.problem is not None:
            raise CorruptBatchError(f"bad frame in a sealed segment ({walk.problem}); nothing was cleaned",
                                    path=path, position=walk.position, offset=walk.next_offset)
        return frames
    finally:
        os.close(fd)


def _clean(frame: _Frame, plan: CleaningPlan, codec: PayloadCodec, live: dict[int, bool]) -> Rewritten | None:
    header = frame.header
    if header.filler:
        return None
    if header.attributes & fmt.CONTROL:
        # A marker stays while a record of its transaction is left (else readers could not
        # tell that record committed); it goes once none is.
        return None if live.get(header.producer_id) else filler(header)
    payload = pa.py_buffer(frame.raw[fmt.HEADER_SIZE:])
    return rewrite(codec, header, payload, plan)


def _note_transaction(frame: _Frame, live: dict[int, bool]) -> None:
    """Track, per producer, whether its current transaction still has a record."""
    header = frame.header
    if not header.attributes & fmt.TRANSACTIONAL or header.filler:
        return
    if header.attributes & fmt.CONTROL:
        live.pop(header.producer_id, None)  # (after _clean looked at it) the transaction ended
        return
    holds = frame.out is None or frame.out.holds_records
    live[header.producer_id] = live.get(header.producer_id, False) or holds


def _removed(frame: _Frame) -> int:
    """Records the cleaned form of a frame lost (a marker counts as one)."""
    if frame.out is None:
        return 0
    cleaned = fmt.unpack_header(frame.out.header)
    return _rows(frame.header, frame.raw) - _rows(cleaned, frame.out.header + frame.out.payload)


def _rows(header: fmt.FrameHeader, raw: bytes) -> int:
    if header.filler:
        return 0
    if not header.sparse:
        return header.record_count
    return PayloadCodec().decode(pa.py_buffer(raw[fmt.HEADER_SIZE:]), header.schema_length,
                                 frozenset({fmt.OFFSET_DELTA_COLUMN})).num_rows


def _write_segment(staging: str, base: int, frames: list[_Frame], index_interval_bytes: int,
                   throttle: IoThrottle) -> None:
    """The cleaned segment's four files in ``staging``, fsynced (step 1 of the swap)."""
    segment = Segment.create(staging, base, index_interval_bytes, sync_dir=False)
    try:
        for frame in frames:
            header_bytes, payload = frame.bytes_out()
            header = fmt.unpack_header(header_bytes)
            position = segment.append(header_bytes, [payload], len(payload), header.base_offset,
                                      header.record_count, header.max_timestamp)
            throttle.spent(len(header_bytes) + len(payload))
            kind = fmt.txn_entry_kind(header.attributes)
            if kind is not None:
                if kind == 0:
                    kind = fmt.marker_kind(payload, header.schema_length)
                    assert kind is not None, (segment.path, position)  # checked when read
                segment.txn_index.append(fmt.TxnIndexEntry(kind, header.producer_id, header.base_offset))
        for index in (segment.offset_index, segment.time_index):
            if not os.path.exists(index.path):  # an empty index, not the old segment's
                open(index.path, "wb").close()
        segment.flush()
        segment.flush_indexes()
        for index in (segment.offset_index, segment.time_index):
            fd = os.open(index.path, os.O_RDONLY)
            try:
                disk.fsync(fd)
            finally:
                os.close(fd)
    finally:
        segment.close()

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

Caller holds the partition lock (the swap renames files other writers and
recovery look at) and has bumped the lock's generation (readers re-read what
changed).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow as pa

from kstream.errors import CorruptBatchError
from kstream.log.storage import disk
from kstream.log.storage import format as fmt
from kstream.log.storage.cleaner.frame_rewrite import CleaningPlan, Rewritten, filler, rewrite
from kstream.log.storage.durable_file import write_atomically
from kstream.log.storage.frames import FrameWalk, pread_from
from kstream.log.storage.records import PayloadCodec
from kstream.log.storage.segment import Segment
from kstream.log.storage.segment_swap import finish_swap, staging_dir, swap_in


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


def clean_replica(directory: str, plan: CleaningPlan, index_interval_bytes: int) -> ReplicaCleaned:
    """Clean the replica in ``directory`` with ``plan`` (see the module contract)."""
    finish_swap(directory)
    bases = fmt.list_segment_bases(directory)
    codec = PayloadCodec()
    live: dict[int, bool] = {}  # producer id -> its open transaction still has a record
    staging: str | None = None
    rewritten = before = after = removed = 0
    for base in bases[:-1]:
        if base >= plan.end_offset:
            break
        frames = _cleaned_frames(directory, base, plan, codec, live)
        changed = [frame for frame in frames if frame.out is not None]
        if not changed:
            continue
        if staging is None:
            staging = staging_dir(directory)
        _write_segment(staging, base, frames, index_interval_bytes)
        rewritten += 1
        before += sum(len(frame.raw) for frame in changed)
        after += sum(len(frame.out.header) + len(frame.out.payload) for frame in changed if frame.out)
        removed += sum(_removed(frame) for frame in changed)
    if staging is not None:
        swap_in(directory, staging)
    return ReplicaCleaned(rewritten, before, after, removed)


def _cleaned_frames(directory: str, base: int, plan: CleaningPlan, codec: PayloadCodec,
                    live: dict[int, bool]) -> list[_Frame]:
    """Every frame of a sealed segment, with its cleaned form where it changes."""
    path = os.path.join(directory, fmt.segment_file_name(base))
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        read = pread_from(fd)
        walk = FrameWalk(read, size, 0, next_offset=base, verify_payload=True)
        frames = []
        for position, header in walk:
            frame = _Frame(header, bytes(read(position, header.frame_size)))
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


def _write_segment(staging: str, base: int, frames: list[_Frame], index_interval_bytes: int) -> None:
    """The cleaned segment's four files in ``staging``, fsynced (step 1 of the swap)."""
    segment = Segment.create(staging, base, index_interval_bytes, sync_dir=False)
    try:
        for frame in frames:
            header_bytes, payload = frame.bytes_out()
            header = fmt.unpack_header(header_bytes)
            position = segment.append(header_bytes, [payload], len(payload), header.base_offset,
                                      header.record_count, header.max_timestamp)
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


def read_checkpoint(directory: str) -> int | None:
    """The first dirty offset the last clean of this replica recorded (None: never cleaned)."""
    try:
        with open(os.path.join(directory, fmt.CLEANER_CHECKPOINT_FILE), encoding="ascii") as f:
            text = f.read().strip()
    except FileNotFoundError:
        return None
    return int(text) if text.isdigit() else None  # a damaged hint counts as none


def write_checkpoint(directory: str, offset: int) -> None:
    """Record where the next clean's dirty part starts (a hint: derived, rebuilt as 'all dirty')."""
    write_atomically(os.path.join(directory, fmt.CLEANER_CHECKPOINT_FILE), f"{offset}\n".encode("ascii"))

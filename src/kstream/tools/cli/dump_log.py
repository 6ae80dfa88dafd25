"""`kstream dump-log`: the frames of segment files, with header fields and checksum verdicts,
and the entries of offset (``.index``) and time (``.timeindex``) index files.

Shaped like kafka-dump-log: ``offset: N position: P`` per offset index entry,
``timestamp: T offset: N`` per time index entry (absolute offsets). An index
entry is checked against its segment's ``.log`` when that file is next to it:
an offset index entry must point at a valid frame starting at its offset,
a time index entry's offset must be in the segment; entries must increase.
A bad entry is printed with the reason and makes the exit status non-zero.
"""

from __future__ import annotations

import os

import click
import numpy as np
import pyarrow as pa

from kstream.log.storage import format as fmt
from kstream.log.storage.frames import FrameWalk, pread_from
from kstream.log.storage.output import decode_frame
from kstream.log.storage.records import PayloadCodec
from kstream.log.storage.segment import Frame
from kstream.log.storage.txn_index import entries_from_frames


def _dump_segment(path: str, print_data: bool, max_frames: int | None) -> int:
    """Print the frames of one ``.log`` file; returns how many are invalid."""
    codec = PayloadCodec()
    bad = frames = 0
    with open(path, "rb") as f:
        walk = FrameWalk(pread_from(f.fileno()), os.fstat(f.fileno()).st_size)
        for position, header in walk:
            if max_frames is not None and frames >= max_frames:
                break
            payload = os.pread(f.fileno(), header.payload_size, position + fmt.HEADER_SIZE)
            crc_ok = fmt.crc32c(payload) == header.payload_crc
            bad += not crc_ok
            click.echo(
                f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} "
                f"count: {header.record_count} position: {position} size: {header.frame_size} "
                f"leaderEpoch: {header.leader_epoch} producerId: {header.producer_id} "
                f"producerEpoch: {header.producer_epoch} baseSequence: {header.base_sequence} "
                f"minTimestamp: {header.min_timestamp} maxTimestamp: {header.max_timestamp} "
                f"compression: {header.codec} "
                f"timestampType: {'LogAppendTime' if header.attributes & fmt.LOG_APPEND_TIME else 'CreateTime'} "
                f"headerCrc: {header.header_crc} crc: {header.payload_crc} "
                f"{_cleaned(header)}isValid: {str(crc_ok).lower()}")
            if print_data and crc_ok and not header.filler:
                for offset, row in _records(codec, header, position, payload):
                    click.echo(f"| offset: {offset} {row}")
            frames += 1
        if walk.problem is not None:  # (None too when --max-frames stopped the walk)
            click.echo(f"position: {walk.position} INVALID: {walk.problem}")
            bad += 1
    return bad


def _cleaned(header: fmt.FrameHeader) -> str:
    """What the dump says of a frame the cleaner rewrote (nothing for others)."""
    if header.filler:
        return "cleaned: filler (no records) "
    return "cleaned: sparse offsets " if header.sparse else ""


def _records(codec: PayloadCodec, header: fmt.FrameHeader, position: int, payload: bytes
             ) -> list[tuple[int, dict]]:
    """(offset, stored columns) of each record of a frame (a marker's payload too)."""
    if header.holds_records:
        stored = decode_frame(codec, Frame(header, position, pa.py_buffer(payload)))
        return list(zip(stored.row_offsets().tolist(), stored.batch.to_pylist(), strict=True))
    rows = codec.decode(payload, header.schema_length).to_pylist()
    return [(header.base_offset + i, row) for i, row in enumerate(rows)]


def _segment_frames(index_path: str, suffix: str) -> dict[int, int] | None:
    """Position -> base offset of every valid frame of the ``.log`` next to an index file,
    or None when there is none (the index is then only checked for order)."""
    log_path = index_path[: -len(suffix)] + fmt.LOG_SUFFIX
    if not os.path.exists(log_path):
        return None
    with open(log_path, "rb") as f:
        walk = FrameWalk(pread_from(f.fileno()), os.fstat(f.fileno()).st_size)
        return {position: header.base_offset for position, header in walk}


def _dump_index(path: str, suffix: str, max_entries: int | None) -> int:
    """Print the entries of one ``.index`` / ``.timeindex`` file; returns how many are invalid."""
    stem = os.path.basename(path)[: -len(suffix)]
    if len(stem) != 20 or not stem.isdigit():
        raise click.ClickException(f"{path}: an index file is named <20-digit base offset>{suffix}")
    base = int(stem)
    is_offset_index = suffix == fmt.OFFSET_INDEX_SUFFIX
    dtype = fmt.OFFSET_INDEX_DTYPE if is_offset_index else fmt.TIME_INDEX_DTYPE
    with open(path, "rb") as f:
        data = f.read()
    whole = len(data) - len(data) % dtype.itemsize
    entries = np.frombuffer(data[:whole], dtype=dtype)
    frames = _segment_frames(path, suffix)
    frame_offsets = sorted(frames.values()) if frames is not None else []
    bad = 0
    previous: tuple[int, int] | None = None
    for i, entry in enumerate(entries):
        if max_entries is not None and i >= max_entries:
            break
        offset = base + int(entry["relative_offset"])
        if is_offset_index:
            position = int(entry["position"])
            line, key = f"offset: {offset} position: {position}", (offset, position)
            problem = None
            if frames is not None and frames.get(position) != offset:
                found = frames.get(position)
                problem = (f"no frame starts at position {position}" if found is None
                           else f"the frame at position {position} starts at offset {found}")
        else:
            timestamp = int(entry["timestamp"])
            line, key = f"timestamp: {timestamp} offset: {offset}", (timestamp, offset)
            problem = None
            if frame_offsets and not frame_offsets[0] <= offset:
                problem = f"offset {offset} is before the segment's first offset {frame_offsets[0]}"
        if previous is not None and (key[0] < previous[0] or key[1] < previous[1]):
            problem = f"entry {i} goes back from the previous entry {previous}"
        previous = key
        if problem is None:
            click.echo(line)
        else:
            bad += 1
            click.echo(f"{line} INVALID: {problem}")
    if whole != len(data):
        bad += 1
        click.echo(f"position: {whole} INVALID: {len(data) - whole} trailing byte(s), not a whole entry")
    return bad


_TXN_KIND_NAMES = {fmt.TXN_DATA: "DATA", fmt.TXN_COMMIT: "COMMIT", fmt.TXN_ABORT: "ABORT"}


def _dump_txn_index(path: str, max_entries: int | None) -> int:
    """Print the entries of one ``.txnindex`` file and compare them with its segment's
    transactional frames; returns how many are invalid (torn, or naming no such frame)."""
    with open(path, "rb") as f:
        data = f.read()
    entries, clean = fmt.unpack_txn_entries(data)
    log_path = path[: -len(fmt.TXN_INDEX_SUFFIX)] + fmt.LOG_SUFFIX
    expected = None
    if os.path.exists(log_path):
        with open(log_path, "rb") as f:
            expected = set(entries_from_frames(pread_from(f.fileno()), os.fstat(f.fileno()).st_size, log_path)[0])
    bad = 0
    for i, entry in enumerate(entries):
        if max_entries is not None and i >= max_entries:
            break
        line = f"offset: {entry.offset} producer_id: {entry.producer_id} kind: {_TXN_KIND_NAMES[entry.kind]}"
        if expected is not None and entry not in expected:
            bad += 1
            click.echo(f"{line} INVALID: the segment has no such transactional frame")
        else:
            click.echo(line)
    if not clean:
        bad += 1
        position = len(entries) * fmt.TXN_INDEX_ENTRY_SIZE
        click.echo(f"position: {position} INVALID: a torn or bad entry; the trusted part of the file ends here")
    return bad


@click.command("dump-log")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--print-data", is_flag=True, help="Print the records of each frame (.log files).")
@click.option("--max-frames", type=int, default=None,
              help="Stop after this many frames (or index entries) per file.")
def dump_log(files: tuple[str, ...], print_data: bool, max_frames: int | None) -> None:
    """Print every frame of segment FILES (.log) and check both checksums, or every entry of
    index FILES (.index, .timeindex, .txnindex) and check it against its segment."""
    bad = 0
    for path in files:
        click.echo(f"Dumping {path}")
        for suffix in (fmt.OFFSET_INDEX_SUFFIX, fmt.TIME_INDEX_SUFFIX):
            if path.endswith(suffix):
                bad += _dump_index(path, suffix, max_frames)
                break
        else:
            if path.endswith(fmt.TXN_INDEX_SUFFIX):
                bad += _dump_txn_index(path, max_frames)
                continue
            bad += _dump_segment(path, print_data, max_frames)
    if bad:
        raise click.ClickException(f"{bad} invalid frame(s) or index entries")

"""The on-disk format: every byte layout and every file and directory name.

Frame header and attributes, index entries, the transaction index, the
recovery point, the fields of a partition's lock file (deleted mark,
generation, high watermark), the leader-epoch checkpoint and the payload of a
transaction marker are defined here and nowhere else; docs/FORMAT.md
describes the same thing for humans. A new layout gets a new version; a layout
is never edited in place. Walking the frames of a file is
:mod:`kstream.log.storage.frames`' job.

A segment file is a sequence of frames. A frame is a fixed 68-byte header
followed by a payload, an Arrow IPC stream of one schema message and one
record-batch message (no end-of-stream marker)::

    offset size field
    0      4    length          u32  bytes after this field (header rest + payload)
    4      4    header_crc      u32  crc32c of bytes [8, 68): everything below
    8      2    magic           u16  0x4B53 ("KS")
    10     1    version         u8   FORMAT_VERSION
    11     1    attributes      u8   compression codec, timestamp type, flags
    12     8    base_offset     i64  offset of the first record
    20     4    record_count    i32  records in the batch (>= 1)
    24     4    leader_epoch    i32  epoch of the leader that appended it
    28     8    producer_id     i64  -1 when not idempotent
    36     2    producer_epoch  i16
    38     2    reserved        u16  zero
    40     4    base_sequence   i32  -1 when not idempotent
    44     8    min_timestamp   i64  ms since the epoch
    52     8    max_timestamp   i64  ms since the epoch
    60     4    schema_length   u32  bytes of the IPC schema message in the payload
    64     4    payload_crc     u32  crc32c of the payload

Frame version 2 has the same header and one more attribute, ``SPARSE``: a frame
the log cleaner rewrote. It keeps the offsets it held (``base_offset`` and
``record_count`` are its *span*, unchanged), but only some of them still have a
record: the payload carries an :data:`OFFSET_DELTA_COLUMN` (uint32, each row's
offset minus ``base_offset``, strictly increasing). A sparse frame with an empty
payload is a *filler*: it holds the offsets of frames the cleaner removed whole,
so a cleaned segment's frames still tile its offsets with no gap. Only the cleaner
writes version 2; every other frame is version 1 (docs/FORMAT.md, "Cleaned
frames").

The payload checksum is computed by the producer before it takes the log's
lock; the header checksum (which covers the payload checksum) is computed at
append time, when the base offset and leader epoch are known. A frame is valid
when both checksums match and its fields are in range.
"""

from __future__ import annotations

import itertools
import os
import struct
from collections.abc import Sequence
from typing import Final, NamedTuple

import crc32c as _crc32c
import numpy as np

FORMAT_VERSION: Final = 1  # of every frame but the cleaner's, and of the cluster
SPARSE_FRAME_VERSION: Final = 2  # a frame the cleaner rewrote (SPARSE attribute)
FRAME_VERSIONS: Final = (FORMAT_VERSION, SPARSE_FRAME_VERSION)
MAGIC: Final = 0x4B53

HEADER = struct.Struct("<IIHBBqiiqhHiqqII")
HEADER_SIZE: Final = HEADER.size  # 68
LENGTH_SIZE: Final = 4
_CRC_START: Final = 8  # header_crc covers header bytes [8, HEADER_SIZE)

# Attributes: bits 0-2 compression codec, bit 3 timestamp type, bit 4
# transactional, bit 5 control batch (the last two are reserved for transactions).
CODEC_MASK: Final = 0x07
CODECS: Final = {"none": 0, "lz4": 1, "zstd": 2}
CODEC_NAMES: Final = {v: k for k, v in CODECS.items()}
LOG_APPEND_TIME: Final = 0x08
TRANSACTIONAL: Final = 0x10
CONTROL: Final = 0x20
# Bit 6, frame version 2 only: the cleaner removed records; rows carry their offsets.
SPARSE: Final = 0x40
# The attribute bits each frame version defines; a frame with any other bit set is refused.
KNOWN_ATTRIBUTES: Final = {FORMAT_VERSION: 0x3F, SPARSE_FRAME_VERSION: 0x7F}
# The payload column of a sparse frame: each row's offset minus the frame's base offset.
OFFSET_DELTA_COLUMN: Final = "__kstream_offset_delta"

NO_PRODUCER_ID: Final = -1
NO_SEQUENCE: Final = -1

# Sparse index entries (little-endian): offset index = (relative offset u32,
# position u32); time index = (timestamp i64, relative offset u32). The NumPy
# dtypes are the same layouts, for reading a whole index at once.
OFFSET_INDEX_ENTRY = struct.Struct("<II")
TIME_INDEX_ENTRY = struct.Struct("<qI")
OFFSET_INDEX_DTYPE: Final = np.dtype([("relative_offset", "<u4"), ("position", "<u4")])
TIME_INDEX_DTYPE: Final = np.dtype([("timestamp", "<i8"), ("relative_offset", "<u4")])
# What an index entry can hold: a segment rolls before an offset or a frame
# position would not fit (Kafka rolls when a relative offset would overflow).
MAX_RELATIVE_OFFSET: Final = (1 << 32) - 1
MAX_INDEX_POSITION: Final = (1 << 32) - 1
# Largest segment.bytes and message.max.bytes (Kafka's Int.MaxValue): a frame
# starts below segment.bytes and is at most message.max.bytes long, so every
# position in a segment fits an index entry.
MAX_SEGMENT_BYTES: Final = (1 << 31) - 1
MAX_MESSAGE_BYTES: Final = (1 << 31) - 1

# File and directory names. Base offsets are zero-padded to 20 digits so `ls` sorts them.
LOG_SUFFIX: Final = ".log"
OFFSET_INDEX_SUFFIX: Final = ".index"
TIME_INDEX_SUFFIX: Final = ".timeindex"
TXN_INDEX_SUFFIX: Final = ".txnindex"
RECOVERY_POINT_FILE: Final = "recovery-point"
LEADER_EPOCH_CHECKPOINT_FILE: Final = "leader-epoch-checkpoint"
TMP_SUFFIX: Final = ".tmp"
# The log cleaner (kstream.log.storage.cleaner): a segment's cleaned files are built in
# CLEANER_STAGING_DIR inside the replica dir; ``<base>.log.swap`` in the replica dir means
# the swap of that segment is decided (docs/FORMAT.md, "Cleaned segments").
CLEANER_STAGING_DIR: Final = "cleaner-staging"
# Where a clean builds its cleaned files without the partition lock (under the partition's
# CLEANER_LOCK_SUFFIX lock); renamed to the swap dir under the partition lock once nothing it
# read changed. Writers' recovery leaves it alone; the next clean removes a killed one's.
CLEANER_BUILDING_DIR: Final = "cleaner-building"
CLEANER_LOCK_SUFFIX: Final = ".cleaner"  # next to a partition's lock file: one clean at a time
SWAP_SUFFIX: Final = ".swap"
CLEANER_CHECKPOINT_FILE: Final = "cleaner-offset-checkpoint"  # first dirty offset, as text
# Schema metadata of a cleaned frame holding tombstones: when (ms) the cleaner may drop them.
DELETE_HORIZON_KEY: Final = b"kstream.delete_horizon_ms"
CLUSTER_PROPERTIES: Final = "cluster.properties"
METADATA_DB: Final = "metadata.db"
METADATA_SNAPSHOT: Final = "metadata-snapshot.json"  # what a reader needs of metadata.db, for readers without SQLite
LOG_DIR_META: Final = "meta.properties"
LOCKS_DIR: Final = "locks"  # in the cluster dir: one lock file per partition
LOCK_SUFFIX: Final = ".lock"
DELETED_SUFFIX: Final = "-delete"  # a deleted topic's replica dir, renamed before removal


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C (Castagnoli) of ``data``; hardware accelerated where the CPU has it."""
    return _crc32c.crc32c(data)


def segment_file_name(base_offset: int, suffix: str = LOG_SUFFIX) -> str:
    """``00000000000000000042.log`` for base offset 42."""
    return f"{base_offset:020d}{suffix}"


def parse_segment_file_name(name: str) -> int | None:
    """The base offset of a segment log file name, or None if it is not one."""
    if not name.endswith(LOG_SUFFIX):
        return None
    stem = name[: -len(LOG_SUFFIX)]
    if len(stem) != 20 or not stem.isdigit():
        return None
    return int(stem)


def list_segment_bases(directory: str) -> list[int]:
    """Base offsets of the segment files in a replica directory, ascending."""
    bases = []
    for name in os.listdir(directory):
        base = parse_segment_file_name(name)
        if base is not None:
            bases.append(base)
    bases.sort()
    return bases


def replica_dir_name(topic: str, partition: int) -> str:
    """Directory of one replica inside a log dir, as Kafka names it: ``topic-3``."""
    return f"{topic}-{partition}"


def lock_file_name(topic: str, partition: int, topic_id: str) -> str:
    """``topic-3-<first 12 characters of the topic id>.lock``: a re-created topic gets a new lock."""
    return f"{topic}-{partition}-{topic_id[:12]}{LOCK_SUFFIX}"


def deleted_dir_name(replica_dir: str, topic_id: str) -> str:
    """Where a deleted topic's replica dir is renamed before its files are removed."""
    return f"{replica_dir}.{topic_id}{DELETED_SUFFIX}"


class FrameHeader(NamedTuple):
    """The decoded fixed header of one frame (a named tuple: readers decode one per frame)."""

    length: int
    header_crc: int
    magic: int
    version: int
    attributes: int
    base_offset: int
    record_count: int
    leader_epoch: int
    producer_id: int
    producer_epoch: int
    reserved: int
    base_sequence: int
    min_timestamp: int
    max_timestamp: int
    schema_length: int
    payload_crc: int

    @property
    def frame_size(self) -> int:
        """Bytes of the whole frame on disk, header included."""
        return LENGTH_SIZE + self.length

    @property
    def payload_size(self) -> int:
        return self.frame_size - HEADER_SIZE

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.record_count

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.record_count - 1

    @property
    def codec(self) -> str:
        return CODEC_NAMES.get(self.attributes & CODEC_MASK, "unknown")

    @property
    def sparse(self) -> bool:
        """Rewritten by the cleaner: rows carry offset deltas, some offsets have no record."""
        return bool(self.attributes & SPARSE)

    @property
    def filler(self) -> bool:
        """Holds offsets whose records the cleaner removed, and no record at all."""
        return bool(self.attributes & SPARSE) and self.length == HEADER_SIZE - LENGTH_SIZE

    @property
    def holds_records(self) -> bool:
        """Whether decoding the payload can give records (not a marker, not a filler)."""
        return not self.attributes & CONTROL and not self.filler


def pack_header(
    *,
    payload_size: int,
    attributes: int,
    base_offset: int,
    record_count: int,
    leader_epoch: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    min_timestamp: int,
    max_timestamp: int,
    schema_length: int,
    payload_crc: int,
    version: int = FORMAT_VERSION,
) -> bytes:
    """Pack a header and seal it with its checksum (``version`` 2: the cleaner's frames)."""
    assert version in FRAME_VERSIONS and not attributes & ~KNOWN_ATTRIBUTES[version], (version, attributes)
    assert (version == SPARSE_FRAME_VERSION) == bool(attributes & SPARSE), (version, attributes)
    length = HEADER_SIZE - LENGTH_SIZE + payload_size
    raw = bytearray(
        HEADER.pack(
            length,
            0,
            MAGIC,
            version,
            attributes,
            base_offset,
            record_count,
            leader_epoch,
            producer_id,
            producer_epoch,
            0,
            base_sequence,
            min_timestamp,
            max_timestamp,
            schema_length,
            payload_crc,
        )
    )
    struct.pack_into("<I", raw, 4, _crc32c.crc32c(memoryview(raw)[_CRC_START:]))
    return bytes(raw)


def unpack_header(data: bytes | memoryview) -> FrameHeader:
    """Decode a header without checking it (see :func:`header_problem`)."""
    return _make_header(HEADER.unpack_from(data))


_make_header = FrameHeader._make


def repack_header(header: FrameHeader) -> bytes:
    """The exact bytes of a decoded header (for copying a frame to another replica)."""
    return HEADER.pack(
        header.length, header.header_crc, header.magic, header.version, header.attributes,
        header.base_offset, header.record_count, header.leader_epoch, header.producer_id,
        header.producer_epoch, header.reserved, header.base_sequence, header.min_timestamp,
        header.max_timestamp, header.schema_length, header.payload_crc,
    )


def header_problem(data: bytes | memoryview, header: FrameHeader) -> str | None:
    """Why this header is not valid, or None when it is."""
    if header.magic != MAGIC:
        return f"bad magic 0x{header.magic:04x}"
    if header.version not in FRAME_VERSIONS:
        return (f"unknown frame version {header.version} (this kstream reads "
                f"{', '.join(map(str, FRAME_VERSIONS))}: a newer kstream wrote it?)")
    if _crc32c.crc32c(memoryview(data)[_CRC_START:HEADER_SIZE]) != header.header_crc:
        return "header checksum mismatch"
    unknown = header.attributes & ~KNOWN_ATTRIBUTES[header.version]
    if unknown:
        return (f"unknown attribute bits 0x{unknown:02x} for frame version {header.version} "
                "(a newer kstream wrote it?); not reading it")
    if (header.version == SPARSE_FRAME_VERSION) != bool(header.attributes & SPARSE):
        return f"frame version {header.version} with attributes 0x{header.attributes:02x}"
    if header.length < HEADER_SIZE - LENGTH_SIZE or header.record_count < 1:
        return f"bad length {header.length} or record count {header.record_count}"
    if header.schema_length > header.payload_size:
        return f"schema length {header.schema_length} beyond payload {header.payload_size}"
    return None


# -- the recovery point ---------------------------------------------------------------
#
# ``recovery-point`` in a replica dir: how far the log is known fsynced. The file
# holds two slots, at positions 0 and RECOVERY_POINT_SLOT_BYTES (different disk
# sectors); the valid slot with the higher sequence is the point. It is created
# like Kafka's checkpoints (.tmp, fsync, rename, fsync the directory); after that
# each update overwrites the *older* slot and is fdatasynced before the flush that
# fsynced the data returns. A write torn by a power loss can damage only the slot
# being written, and its checksum shows it; the other slot still holds the previous
# point. One slot, little-endian::
#
#     offset size field
#     0      2    magic          u16  0x5052 ("RP")
#     2      1    version        u8   RECOVERY_POINT_VERSION
#     3      1    reserved       u8   zero
#     4      8    sequence       u64  bumped by each update; the higher valid one wins
#     12     8    segment_base   i64  base offset of the segment the point is in
#     20     8    position       i64  bytes of that segment known fsynced (a frame boundary)
#     28     8    next_offset    i64  offset after the last fsynced frame
#     36     4    crc            u32  crc32c of bytes [0, 36) of the slot
#
# The 24-byte file of earlier versions (three i64 written in place, unchecked) is
# not read: a torn file of that layout could pass for a point. It counts as unreadable.

RECOVERY_POINT_MAGIC: Final = 0x5052
RECOVERY_POINT_VERSION: Final = 1
RECOVERY_POINT = struct.Struct("<HBBQqqqI")  # one slot
RECOVERY_POINT_SLOT_BYTES: Final = 512
RECOVERY_POINT_FILE_BYTES: Final = 2 * RECOVERY_POINT_SLOT_BYTES


class RecoveryPoint(NamedTuple):
    """A position known fsynced: frames before it are durable, a bad one there is corruption."""

    segment_base: int
    position: int
    next_offset: int


def pack_recovery_slot(sequence: int, point: RecoveryPoint) -> bytes:
    """One slot holding ``point`` (write it at ``(sequence % 2) * RECOVERY_POINT_SLOT_BYTES``)."""
    raw = bytearray(RECOVERY_POINT.pack(RECOVERY_POINT_MAGIC, RECOVERY_POINT_VERSION, 0, sequence,
                                        *point, 0))
    struct.pack_into("<I", raw, RECOVERY_POINT.size - 4, _crc32c.crc32c(memoryview(raw)[:-4]))
    return bytes(raw)


def pack_recovery_point_file(point: RecoveryPoint) -> bytes:
    """A new file: ``point`` in slot 0 (sequence 0), slot 1 empty."""
    return pack_recovery_slot(0, point).ljust(RECOVERY_POINT_FILE_BYTES, b"\0")


def unpack_recovery_slot(raw: bytes) -> tuple[int, RecoveryPoint] | None:
    """(sequence, point) of one slot, or None when it is empty, torn or not a slot."""
    if len(raw) < RECOVERY_POINT.size:
        return None
    magic, version, _, sequence, base, position, next_offset, crc = RECOVERY_POINT.unpack_from(raw)
    if (magic != RECOVERY_POINT_MAGIC or version != RECOVERY_POINT_VERSION
            or _crc32c.crc32c(raw[:RECOVERY_POINT.size - 4]) != crc):
        return None
    if not (0 <= base <= next_offset and position >= 0):
        return None
    return sequence, RecoveryPoint(base, position, next_offset)


def unpack_recovery_point_file(raw: bytes) -> tuple[int, RecoveryPoint] | None:
    """(sequence, point) of the newest valid slot of a whole file, or None when the file
    has another size or no valid slot."""
    if len(raw) != RECOVERY_POINT_FILE_BYTES:
        return None
    slots = [unpack_recovery_slot(raw[i:i + RECOVERY_POINT_SLOT_BYTES])
             for i in range(0, RECOVERY_POINT_FILE_BYTES, RECOVERY_POINT_SLOT_BYTES)]
    valid = [slot for slot in slots if slot is not None]
    return max(valid) if valid else None


# -- the lock file -----------------------------------------------------------------------
#
# ``locks/<topic>-<p>-<topic id>.lock``: flocked by writers, and the partition's small
# shared state. Written in place and never fsynced: every field is rebuilt or harmless
# when a power loss drops it (the high watermark is rebuilt from the replicas' log ends).
#
#     offset size field
#     0      1    deleted        'X' once the topic is deleted (fences old writers)
#     8      8    generation     u64  bumped when segment files or the partition's metadata change
#     16     8    high_watermark i64
#     24     8    hw_check       i64  bitwise complement of high_watermark (a torn read shows)

LOCK_DELETED_MARK: Final = b"X"
LOCK_DELETED_POSITION: Final = 0
LOCK_GENERATION = struct.Struct("<Q")
LOCK_GENERATION_POSITION: Final = 8
LOCK_STATE_SIZE: Final = 16  # deleted mark and generation, read each time the lock is taken
LOCK_HIGH_WATERMARK = struct.Struct("<qq")
LOCK_HIGH_WATERMARK_POSITION: Final = 16


def pack_high_watermark(offset: int) -> bytes:
    return LOCK_HIGH_WATERMARK.pack(offset, ~offset)


def unpack_high_watermark(raw: bytes) -> int | None:
    """The high watermark in ``raw``, or None when absent or torn (value and check disagree)."""
    if len(raw) < LOCK_HIGH_WATERMARK.size:
        return None
    value, check = LOCK_HIGH_WATERMARK.unpack_from(raw)
    return value if check == ~value and value >= 0 else None


# -- the leader-epoch checkpoint ---------------------------------------------------------
#
# ``leader-epoch-checkpoint`` in a replica dir, Kafka's text layout: a version line
# ("0"), a count line, then one "epoch start_offset" line per entry, epochs and start
# offsets increasing. Written as .tmp, fsynced, renamed, directory fsynced.

LEADER_EPOCH_CHECKPOINT_VERSION: Final = 0


def format_leader_epochs(entries: Sequence[tuple[int, int]]) -> bytes:
    lines = [str(LEADER_EPOCH_CHECKPOINT_VERSION), str(len(entries))]
    lines += [f"{epoch} {start}" for epoch, start in entries]
    return ("\n".join(lines) + "\n").encode("ascii")


def parse_leader_epochs(raw: bytes) -> list[tuple[int, int]] | None:
    """The entries of a checkpoint file, or None when it is torn, malformed or of another version."""
    try:
        lines = raw.decode("ascii").split("\n")
        if lines[0] != str(LEADER_EPOCH_CHECKPOINT_VERSION) or lines[-1] != "":
            return None
        count = int(lines[1])
        if len(lines) != count + 3:
            return None
        entries = []
        for line in lines[2:2 + count]:
            epoch, start = line.split(" ")
            entries.append((int(epoch), int(start)))
    except (UnicodeDecodeError, ValueError, IndexError):
        return None
    for (e1, s1), (e2, s2) in itertools.pairwise(entries):
        if e2 <= e1 or s2 < s1:
            return None
    if entries and (entries[0][0] < 0 or entries[0][1] < 0):
        return None
    return entries


# -- the transaction index ---------------------------------------------------------------
#
# ``<base offset>.txnindex`` next to each segment: one entry per frame of the segment
# with the TRANSACTIONAL attribute (data or control), in offset order, appended right
# after the frame. Derived data (rebuilt from the frames by writers); readers trust an
# entry only below the recovery point's next_offset. One entry, little-endian::
#
#     offset size field
#     0      1    kind           u8   TXN_DATA, TXN_COMMIT or TXN_ABORT
#     1      3    reserved       zero
#     4      8    producer_id    i64
#     12     8    offset         i64  the frame's base offset
#     20     4    crc            u32  crc32c of bytes [0, 20) of the entry
#
# An entry whose checksum does not match (or a partial one at the end) ends the
# trusted part of the file: a torn append.

TXN_DATA: Final = 1
TXN_COMMIT: Final = 2
TXN_ABORT: Final = 3
TXN_KINDS: Final = frozenset({TXN_DATA, TXN_COMMIT, TXN_ABORT})
TXN_INDEX_ENTRY = struct.Struct("<B3xqqI")
TXN_INDEX_ENTRY_SIZE: Final = TXN_INDEX_ENTRY.size  # 24
_TXN_ENTRY_CHECKED = struct.Struct("<B3xqq")  # the bytes the crc covers

# A transaction marker is a control frame (CONTROL | TRANSACTIONAL) whose payload holds
# one record: its ``value`` column says which.
COMMIT_MARKER: Final = b"COMMIT"
ABORT_MARKER: Final = b"ABORT"


class TxnIndexEntry(NamedTuple):
    """One transactional frame: what it is, whose, where."""

    kind: int
    producer_id: int
    offset: int


def pack_txn_entry(kind: int, producer_id: int, offset: int) -> bytes:
    assert kind in TXN_KINDS, kind
    raw = _TXN_ENTRY_CHECKED.pack(kind, producer_id, offset)
    return raw + struct.pack("<I", _crc32c.crc32c(raw))


def unpack_txn_entry(raw: bytes | memoryview, position: int = 0) -> TxnIndexEntry | None:
    """The entry at ``position`` of ``raw``, or None when it is partial, torn or not an entry
    (checksum mismatch, unknown kind, reserved bytes not zero)."""
    if len(raw) - position < TXN_INDEX_ENTRY_SIZE:
        return None
    view = memoryview(raw)[position:position + TXN_INDEX_ENTRY_SIZE]
    crc = struct.unpack_from("<I", view, 20)[0]
    if _crc32c.crc32c(view[:20]) != crc or bytes(view[1:4]) != b"\0\0\0":
        return None
    kind, producer_id, offset, _ = TXN_INDEX_ENTRY.unpack(view)
    if kind not in TXN_KINDS or offset < 0:
        return None
    return TxnIndexEntry(kind, producer_id, offset)


def unpack_txn_entries(raw: bytes | memoryview) -> tuple[list[TxnIndexEntry], bool]:
    """(entries of the valid prefix of a whole file, whether the whole file is valid). The
    prefix stops at the first entry that does not unpack or whose offset does not increase."""
    entries: list[TxnIndexEntry] = []
    position = 0
    while position < len(raw):
        entry = unpack_txn_entry(raw, position)
        if entry is None or (entries and entry.offset <= entries[-1].offset):
            return entries, False
        entries.append(entry)
        position += TXN_INDEX_ENTRY_SIZE
    return entries, True


def marker_kind(payload: bytes | memoryview, schema_length: int) -> int | None:
    """TXN_COMMIT or TXN_ABORT for a marker's payload (one-row Arrow IPC, ``value`` column
    b"COMMIT" or b"ABORT"); None when the payload is anything else."""
    import pyarrow as pa  # loaded by every caller already; kept off this module's import
    import pyarrow.ipc as ipc

    try:
        buffer = pa.py_buffer(bytes(payload))
        schema = ipc.read_schema(buffer.slice(0, schema_length))
        batch = ipc.read_record_batch(buffer.slice(schema_length), schema)
    except (pa.ArrowException, ValueError, IndexError):
        return None
    if batch.num_rows != 1 or "value" not in schema.names:
        return None
    value = batch.column("value")[0].as_py()
    return {COMMIT_MARKER: TXN_COMMIT, ABORT_MARKER: TXN_ABORT}.get(value)


def txn_entry_kind(attributes: int) -> int | None:
    """None for a frame without the TRANSACTIONAL attribute, TXN_DATA for transactional data,
    0 for a marker (its kind is in the payload: :func:`marker_kind`)."""
    if not attributes & TRANSACTIONAL:
        return None
    return 0 if attributes & CONTROL else TXN_DATA

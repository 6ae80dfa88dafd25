"""The on-disk format: frame header, attributes, index entries and file names.

This is the only module that knows byte layouts; docs/FORMAT.md describes the
same thing for humans. A new layout gets a new ``FORMAT_VERSION``; a layout is
never edited in place.

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

The payload checksum is computed by the producer before it takes the log's
lock; the header checksum (which covers the payload checksum) is computed at
append time, when the base offset and leader epoch are known. A frame is valid
when both checksums match and its fields are in range.
"""

from __future__ import annotations

import struct
from typing import Final, NamedTuple

import crc32c as _crc32c

FORMAT_VERSION: Final = 1
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

NO_PRODUCER_ID: Final = -1
NO_SEQUENCE: Final = -1

# Sparse index entries (little-endian): offset index = (relative offset u32,
# position u32); time index = (timestamp i64, relative offset u32).
OFFSET_INDEX_ENTRY = struct.Struct("<II")
TIME_INDEX_ENTRY = struct.Struct("<qI")

# File names. Base offsets are zero-padded to 20 digits so `ls` sorts them.
LOG_SUFFIX: Final = ".log"
OFFSET_INDEX_SUFFIX: Final = ".index"
TIME_INDEX_SUFFIX: Final = ".timeindex"
RECOVERY_POINT_FILE: Final = "recovery-point"
TMP_SUFFIX: Final = ".tmp"
CLUSTER_PROPERTIES: Final = "cluster.properties"
METADATA_DB: Final = "metadata.db"
LOG_DIR_META: Final = "meta.properties"


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


def replica_dir_name(topic: str, partition: int) -> str:
    """Directory of one replica inside a log dir, as Kafka names it: ``topic-3``."""
    return f"{topic}-{partition}"


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
) -> bytes:
    """Pack a header and seal it with its checksum."""
    length = HEADER_SIZE - LENGTH_SIZE + payload_size
    raw = bytearray(
        HEADER.pack(
            length,
            0,
            MAGIC,
            FORMAT_VERSION,
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
    if header.version != FORMAT_VERSION:
        return f"unknown format version {header.version}"
    if _crc32c.crc32c(memoryview(data)[_CRC_START:HEADER_SIZE]) != header.header_crc:
        return "header checksum mismatch"
    if header.length < HEADER_SIZE - LENGTH_SIZE or header.record_count < 1:
        return f"bad length {header.length} or record count {header.record_count}"
    if header.schema_length > header.payload_size:
        return f"schema length {header.schema_length} beyond payload {header.payload_size}"
    return None

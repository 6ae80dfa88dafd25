"""What the cleaner makes of one frame: kept as it is, rewritten sparse, or a filler.

The rule is frame-local: given the frame, the :class:`CleaningPlan` (the latest
offset of each key below the cleaning end, the aborted transactions, the clock)
and whether its transaction still has records (for a marker), the output is
fully determined. So every replica that cleans its own copy with the same plan
writes the same bytes for the same frame, whatever its segment boundaries.

A record is kept when it has a key, its offset is the latest of that key below
the cleaning end, its frame is not an aborted transaction's, and it is not a
tombstone whose delete horizon passed. A tombstone is a record with a null value
(a typed topic: every value column null). The first time the cleaner keeps a
tombstone, its frame gets a delete horizon (now + ``delete.retention.ms``, in the
payload's schema metadata); a later clean at or after it drops the tombstone.
Kept rows keep their offsets (sparse frame, version 2); a frame that keeps
nothing becomes a filler holding its offsets (docs/FORMAT.md, "Cleaned frames").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from kstream.log.storage import format as fmt
from kstream.log.storage.records import RECORD_COLUMNS, PayloadCodec

NO_HORIZON = -1


@dataclass(frozen=True)
class CleaningPlan:
    """What every replica's clean of one partition agrees on (computed once, on the leader).

    ``end_offset``: frames wholly below it are cleaned (at most the LSO, the active segment
    of every replica and the first frame younger than ``min.compaction.lag.ms``);
    ``latest``: key -> its latest offset below ``end_offset`` (committed or non-transactional
    records only); ``aborted``: (producer id, first offset, marker offset) of aborted
    transactions; ``now_ms``: the clock every replica uses."""

    end_offset: int
    latest: dict[bytes, int]
    aborted: tuple[tuple[int, int, int], ...]
    now_ms: int
    delete_retention_ms: int
    typed: bool
    # frame base offset -> the earliest delete horizon any replica's copy of it already has (a
    # clean killed after some replicas swapped: the others adopt it, so the copies agree again)
    horizons: dict[int, int] = field(default_factory=dict)

    def aborted_frame(self, header: fmt.FrameHeader) -> bool:
        """Whether a transactional data frame belongs to an aborted transaction."""
        if not header.attributes & fmt.TRANSACTIONAL or header.attributes & fmt.CONTROL:
            return False
        return any(producer_id == header.producer_id and first <= header.base_offset < marker
                   for producer_id, first, marker in self.aborted)


@dataclass(frozen=True, slots=True)
class Rewritten:
    """A frame's new bytes (header + payload) and whether it still holds records."""

    header: bytes
    payload: bytes
    holds_records: bool


def decode_rows(codec: PayloadCodec, header: fmt.FrameHeader, payload: pa.Buffer
                ) -> tuple[pa.RecordBatch, np.ndarray, int]:
    """(stored columns without the offset deltas, each row's offset, the delete horizon)."""
    batch = codec.decode(payload, header.schema_length)
    metadata = batch.schema.metadata or {}
    horizon = int(metadata.get(fmt.DELETE_HORIZON_KEY, NO_HORIZON))
    if header.sparse:
        deltas = batch.column(fmt.OFFSET_DELTA_COLUMN).to_numpy(zero_copy_only=False).astype(np.int64)
        batch = batch.drop_columns([fmt.OFFSET_DELTA_COLUMN])
        return batch, deltas + header.base_offset, horizon
    return batch, np.arange(header.base_offset, header.next_offset, dtype=np.int64), horizon


def tombstones(batch: pa.RecordBatch, typed: bool) -> np.ndarray:
    """Per row: a null value (typed: every value column null)."""
    if not typed:
        if "value" not in batch.schema.names:
            return np.zeros(batch.num_rows, dtype=bool)
        return batch.column("value").is_null().to_numpy(zero_copy_only=False)
    values = [name for name in batch.schema.names if name not in RECORD_COLUMNS]
    nulls = np.ones(batch.num_rows, dtype=bool)
    for name in values:
        nulls &= batch.column(name).is_null().to_numpy(zero_copy_only=False)
    return nulls


def keep_mask(plan: CleaningPlan, batch: pa.RecordBatch, offsets: np.ndarray, horizon: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """(rows kept, rows that are tombstones) of a data frame's records."""
    n = batch.num_rows
    dead = tombstones(batch, plan.typed)
    if "key" not in batch.schema.names:
        return np.zeros(n, dtype=bool), dead  # keyless records (written before compact): dropped
    keys = batch.column("key").to_pylist()
    latest = plan.latest
    keep = np.fromiter((key is not None and latest.get(key) == offset
                        for key, offset in zip(keys, offsets.tolist(), strict=True)), dtype=bool, count=n)
    if horizon != NO_HORIZON and plan.now_ms >= horizon:
        keep &= ~dead
    return keep, dead


def rewrite(codec: PayloadCodec, header: fmt.FrameHeader, payload: pa.Buffer, plan: CleaningPlan
            ) -> Rewritten | None:
    """The cleaned frame of a data frame below the cleaning end; None when it stays as it is."""
    if plan.aborted_frame(header):
        return filler(header)
    batch, offsets, own = decode_rows(codec, header, payload)
    known = [h for h in (own, plan.horizons.get(header.base_offset, NO_HORIZON)) if h != NO_HORIZON]
    horizon = min(known) if known else NO_HORIZON
    keep, dead = keep_mask(plan, batch, offsets, horizon)
    if not keep.any():
        return filler(header)
    if not (keep & dead).any():
        horizon = NO_HORIZON  # no tombstone left: no horizon to keep
    elif horizon == NO_HORIZON:
        horizon = plan.now_ms + plan.delete_retention_ms  # first kept: the clock starts now
    if keep.all() and horizon == own:
        return None
    return sparse(codec, header, batch.filter(pa.array(keep)), offsets[keep], horizon)


def sparse(codec: PayloadCodec, header: fmt.FrameHeader, kept: pa.RecordBatch, offsets: np.ndarray,
           horizon: int) -> Rewritten:
    """A version 2 frame of ``kept`` rows at ``offsets``, in ``header``'s span."""
    deltas = pa.array(offsets - header.base_offset, pa.uint32())
    batch = kept.append_column(pa.field(fmt.OFFSET_DELTA_COLUMN, pa.uint32(), nullable=False), deltas)
    if horizon != NO_HORIZON:
        batch = batch.replace_schema_metadata({fmt.DELETE_HORIZON_KEY: str(horizon).encode()})
    else:
        batch = batch.replace_schema_metadata(None)
    encoded = _codec_for(codec, header).encode(batch)
    data = encoded.to_bytes()
    raw = fmt.pack_header(
        payload_size=len(data), attributes=header.attributes | fmt.SPARSE, base_offset=header.base_offset,
        record_count=header.record_count, leader_epoch=header.leader_epoch, producer_id=header.producer_id,
        producer_epoch=header.producer_epoch, base_sequence=header.base_sequence,
        min_timestamp=header.min_timestamp, max_timestamp=header.max_timestamp,
        schema_length=encoded.schema_length, payload_crc=encoded.crc, version=fmt.SPARSE_FRAME_VERSION)
    return Rewritten(raw, data, True)


def filler(header: fmt.FrameHeader) -> Rewritten:
    """A header-only frame holding ``header``'s offsets, epoch and producer fields, no record."""
    raw = fmt.pack_header(
        payload_size=0, attributes=fmt.SPARSE, base_offset=header.base_offset,
        record_count=header.record_count, leader_epoch=header.leader_epoch, producer_id=header.producer_id,
        producer_epoch=header.producer_epoch, base_sequence=header.base_sequence,
        min_timestamp=header.min_timestamp, max_timestamp=header.max_timestamp,
        schema_length=0, payload_crc=fmt.crc32c(b""), version=fmt.SPARSE_FRAME_VERSION)
    return Rewritten(raw, b"", False)


def _codec_for(codec: PayloadCodec, header: fmt.FrameHeader) -> PayloadCodec:
    """An encoder with the frame's own compression (cleaning never changes a frame's codec)."""
    name = header.codec if header.codec in fmt.CODECS else "none"
    return codec if name == codec.compression else PayloadCodec(name)

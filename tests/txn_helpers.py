"""Test helpers for the transaction index: transactional frames, markers, and an oracle
that derives a replica's transactions from its frames through the plain log reader."""

from __future__ import annotations

import os
import time

from helpers import encoded
from kstream.log.storage import format as fmt
from kstream.log.storage.log_reader import LogReader
from kstream.log.storage.partition_log import EncodedBatch
from kstream.log.storage.records import PayloadCodec, batch_from_records
from kstream.log.storage.txn_index_reader import TxnIndexReader, TxnState


def txn_data(values: list[bytes], producer_id: int) -> EncodedBatch:
    plain = encoded(values)
    return EncodedBatch(plain.payload, plain.record_count, plain.min_timestamp, plain.max_timestamp,
                        fmt.TRANSACTIONAL, producer_id, 0)


def marker(producer_id: int, commit: bool) -> EncodedBatch:
    batch = batch_from_records([fmt.COMMIT_MARKER if commit else fmt.ABORT_MARKER], None, None, None)
    now = int(time.time() * 1000)  # (the transaction writer's markers carry 0: old enough for retention to take)
    return EncodedBatch(PayloadCodec().encode(batch), 1, now, now, fmt.CONTROL | fmt.TRANSACTIONAL, producer_id, 0)


def oracle(events: list[tuple[int, int, int]], high_watermark: int) -> tuple[dict[int, int], list]:
    """The rule, written out plainly: events (kind, producer id, offset) in offset order."""
    open_: dict[int, int] = {}
    aborted = []
    for kind, producer_id, offset in events:
        if offset >= high_watermark:
            break
        if kind == fmt.TXN_DATA:
            if producer_id not in open_:
                open_[producer_id] = offset
        elif producer_id in open_:
            first = open_.pop(producer_id)
            if kind == fmt.TXN_ABORT:
                aborted.append((producer_id, first, offset))
    return open_, aborted


def frame_events(directory: str, high_watermark: int | None = None) -> list[tuple[int, int, int]]:
    """(kind, producer id, base offset) of every transactional frame, read with LogReader
    and decoded with the payload codec (not the txn_index code)."""
    reader = LogReader(directory)
    codec = PayloadCodec()
    events = []
    offset = reader.log_start_offset()
    try:
        while high_watermark is None or offset < high_watermark:
            frames = reader.read(offset, 1 << 20, end_offset=high_watermark)
            if not frames:
                break
            for frame in frames:
                header = frame.header
                if header.attributes & fmt.TRANSACTIONAL:
                    if header.attributes & fmt.CONTROL:
                        value = codec.decode(frame.payload, header.schema_length).column("value")[0].as_py()
                        kind = {b"COMMIT": fmt.TXN_COMMIT, b"ABORT": fmt.TXN_ABORT}[value]
                    else:
                        kind = fmt.TXN_DATA
                    events.append((kind, header.producer_id, header.base_offset))
                offset = header.next_offset
    finally:
        reader.close()
    return events


def files_state(directory: str, high_watermark: int) -> TxnState:
    return TxnIndexReader(directory).state(high_watermark)


def assert_files_match_frames(directory: str, high_watermark: int) -> None:
    """The files' derivation equals the oracle over the frames."""
    open_, aborted = oracle(frame_events(directory, high_watermark), high_watermark)
    state = files_state(directory, high_watermark)
    assert state.open == open_, (state.open, open_)
    assert list(state.aborted) == aborted, (state.aborted, aborted)


def file_entries(directory: str, base_offset: int) -> list[tuple[int, int, int]] | None:
    path = os.path.join(directory, fmt.segment_file_name(base_offset, fmt.TXN_INDEX_SUFFIX))
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        entries, clean = fmt.unpack_txn_entries(f.read())
    assert clean, path
    return [tuple(e) for e in entries]

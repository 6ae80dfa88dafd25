"""Payload checks split over threads give exactly the verdicts of checking one by one."""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pytest

from kstream.log.storage import checksums
from kstream.log.storage import format as fmt
from kstream.log.storage.segment import Frame
from kstream.log.storage.thread_pool import LazyThreadPool


def _frame(payload: bytes, good: bool) -> Frame:
    crc = fmt.crc32c(payload) ^ (0 if good else 1 << random.randrange(32))
    header = fmt.unpack_header(fmt.pack_header(
        payload_size=len(payload), attributes=0, base_offset=0, record_count=1, leader_epoch=0,
        producer_id=-1, producer_epoch=-1, base_sequence=-1, min_timestamp=0, max_timestamp=0,
        schema_length=0, payload_crc=crc))
    return Frame(header, 0, pa.py_buffer(payload))


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("seed", range(6))
def test_split_check_gives_each_frames_own_verdict(monkeypatch, threads, seed):
    monkeypatch.setattr(checksums, "SPLIT_MIN_BYTES", 64)  # split even these small frames
    monkeypatch.setattr(checksums, "_threads", lambda: threads)
    monkeypatch.setattr(checksums, "_workers", LazyThreadPool(max(1, threads - 1), "test-crc"))
    rng = random.Random(seed)
    random.seed(seed)
    expected = [rng.random() > 0.2 for _ in range(rng.randrange(1, 40))]
    frames = [_frame(os.urandom(rng.randrange(1, 5000)), good) for good in expected]
    assert checksums.payloads_good(frames) == expected
    assert checksums.payloads_good([]) == []

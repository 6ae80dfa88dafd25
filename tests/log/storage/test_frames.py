"""The one frame walker: valid frames in order, and where and why it stopped."""

from __future__ import annotations

import os

import pytest

from helpers import encoded, open_log
from kstream.log.storage import format as fmt
from kstream.log.storage.frames import FrameWalk, find_frame_after


def _segment(tmp_path, frames=6) -> tuple[bytes, list[int]]:
    directory = str(tmp_path / "t-0")
    log = open_log(directory)
    starts = [log.append(encoded([f"{i}".encode() * 30])).end_position for i in range(frames)]
    log.close()
    data = open(os.path.join(directory, fmt.segment_file_name(0)), "rb").read()
    return data, [0, *starts[:-1]]


def _read(data: bytes):
    return lambda position, size: data[position:position + size]


def test_walk_yields_every_frame_and_ends_cleanly(tmp_path):
    data, starts = _segment(tmp_path)
    walk = FrameWalk(_read(data), len(data), next_offset=0, verify_payload=True)
    assert [(p, h.base_offset) for p, h in walk] == list(zip(starts, range(6), strict=True))
    assert walk.problem is None and walk.position == len(data)


@pytest.mark.parametrize("tail", [b"\x00" * 100, b"\x07" * 30])
def test_walk_stops_at_a_torn_tail(tmp_path, tail):
    data, _ = _segment(tmp_path)
    walk = FrameWalk(_read(data + tail), len(data) + len(tail))
    assert len(list(walk)) == 6
    assert walk.position == len(data) and walk.torn and walk.problem


def test_walk_stops_at_a_frame_cut_by_the_end(tmp_path):
    data, starts = _segment(tmp_path)
    walk = FrameWalk(_read(data), len(data) - 1)
    assert len(list(walk)) == 5
    assert walk.position == starts[-1] and walk.torn and "runs past the end" in walk.problem


def test_walk_stops_at_a_bad_header_payload_or_offset(tmp_path):
    data, starts = _segment(tmp_path)
    flipped = bytearray(data)
    flipped[starts[2] + 30] ^= 1  # header byte
    walk = FrameWalk(_read(bytes(flipped)), len(data))
    assert len(list(walk)) == 2 and walk.position == starts[2] and not walk.torn
    assert walk.problem == "header checksum mismatch"
    flipped = bytearray(data)
    flipped[starts[3] + fmt.HEADER_SIZE + 2] ^= 1  # payload byte
    walk = FrameWalk(_read(bytes(flipped)), len(data), verify_payload=True)
    assert len(list(walk)) == 3 and walk.problem == "payload checksum mismatch"
    walk = FrameWalk(_read(data), len(data), starts[1], next_offset=7)
    assert list(walk) == [] and "where 7 was expected" in walk.problem


def test_find_frame_after_a_bad_one(tmp_path):
    data, starts = _segment(tmp_path)
    flipped = bytearray(data)
    flipped[starts[2] + 30] ^= 1
    assert find_frame_after(_read(bytes(flipped)), starts[2], len(data)) == starts[3]
    assert find_frame_after(_read(data), starts[5], len(data)) is None
    assert find_frame_after(_read(data + bytes(500)), len(data), len(data) + 500) is None

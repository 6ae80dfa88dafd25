"""LogReader.read_noted: a frame read again where an earlier read found it (the key index's
lookups), checked as read() checks it, and None whenever the note no longer holds."""

from __future__ import annotations

import os

import pytest

from kstream import Admin, CorruptBatchError, NewTopic, Producer
from kstream.log.storage.log_reader import LogReader
from kstream.log.storage.retention import list_segment_bases


def replica(cluster_path):
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("t", 1, 1, config={"segment.bytes": "1024"})])["t"].result()
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for i in range(20):
            producer.produce("t", b"v%d" % i, key=b"k")
            producer.flush()
    return os.path.join(cluster_path, "logs", "t-0")


def notes(directory):
    """(offset, segment base, position) of every frame, as a scan finds them."""
    reader = LogReader(directory)
    bases = list_segment_bases(directory)
    found = []
    for frame in reader.read(0, 1 << 20):
        base = max(b for b in bases if b <= frame.header.base_offset)
        found.append((frame.header.base_offset, base, frame.position))
    reader.close()
    return found


def test_a_noted_frame_is_read_back_and_a_wrong_note_is_none(cluster_path):
    directory = replica(cluster_path)
    noted = notes(directory)
    assert len({base for _, base, _ in noted}) > 1  # several segments
    reader = LogReader(directory)
    for offset, base, position in noted:
        frame = reader.read_noted(offset, base, position)
        assert frame is not None and frame.header.base_offset == offset and frame.position == position
    offset, base, position = noted[3]
    assert reader.read_noted(offset, base, position + 1) is None  # not a frame there
    other = noted[4]
    assert reader.read_noted(offset, other[1], other[2]) is None  # another frame there
    assert reader.read_noted(offset, 999_999, position) is None  # no such segment
    reader.close()


def test_a_bad_payload_at_a_note_is_none_and_read_reports_it(cluster_path):
    directory = replica(cluster_path)
    offset, base, position = notes(directory)[2]
    path = os.path.join(directory, f"{base:020d}.log")
    with open(path, "r+b") as f:
        f.seek(position + 80)
        byte = f.read(1)
        f.seek(position + 80)
        f.write(bytes([byte[0] ^ 0xFF]))
    reader = LogReader(directory)
    assert reader.read_noted(offset, base, position) is None
    with pytest.raises(CorruptBatchError):  # the ordinary read names what is wrong
        reader.read(offset, 1)
    reader.close()

"""An offset index is a hint: a wrong but well-formed one never makes a read skip or
misplace records (issue 10, defect 11)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from helpers import encoded, open_log, read_all
from kstream.log.storage import format as fmt
from kstream.log.storage.log_reader import LogReader
from kstream.log.storage.output import decode_frame
from kstream.log.storage.records import PayloadCodec


def _write(directory: str, frames: int, per_frame: int, **config) -> list[bytes]:
    log = open_log(directory, index_interval_bytes=1, **config)  # an index entry per frame
    values = []
    for i in range(frames):
        batch = [f"{i}-{k}".encode() for k in range(per_frame)]
        log.append(encoded(batch))
        values.extend(batch)
    log.flush()
    log.close()
    return values


def _lie(directory: str, base: int, shift: int) -> None:
    """Rewrite the segment's .index so every entry names ``shift`` offsets less than the
    frame it points at: still strictly increasing and inside the file, but wrong."""
    path = os.path.join(directory, fmt.segment_file_name(base, fmt.OFFSET_INDEX_SUFFIX))
    entries = np.fromfile(path, dtype=fmt.OFFSET_INDEX_DTYPE).copy()
    assert len(entries) > 3
    entries["relative_offset"] -= shift
    entries.tofile(path)


def _first_record_from(directory: str, offset: int) -> tuple[int, bytes]:
    """(offset, value) of the first record a fresh reader returns when asked for ``offset``."""
    reader = LogReader(directory)
    try:
        frames = reader.read(offset, 1)
        stored = decode_frame(PayloadCodec(), frames[0]).slice_from(offset)
        return stored.base_offset, stored.batch.column("value")[0].as_py()
    finally:
        reader.close()


@pytest.mark.parametrize("shift", [1, 2])
def test_seek_with_a_lying_index_returns_exactly_the_records_asked_for(tmp_path, shift, caplog):
    directory = str(tmp_path / "t-0")
    values = _write(directory, frames=12, per_frame=3)
    _lie(directory, 0, shift)
    for offset in range(len(values)):
        assert _first_record_from(directory, offset) == (offset, values[offset])
    assert [v for _, v in read_all(directory, 7)] == values[7:]
    assert "does not point at that frame" in caplog.text


def test_lying_index_in_a_sealed_segment_and_the_log_end(tmp_path):
    directory = str(tmp_path / "t-0")
    values = _write(directory, frames=30, per_frame=3, segment_bytes=2048)
    reader = LogReader(directory)
    bases = reader.refresh()
    reader.close()
    assert len(bases) >= 3
    for base in bases:
        try:
            _lie(directory, base, 2)
        except AssertionError:
            continue  # too few entries in a short last segment
    for offset in range(len(values)):
        assert _first_record_from(directory, offset) == (offset, values[offset])
    reader = LogReader(directory)
    assert reader.log_end_offset() == len(values)
    reader.close()


def test_writer_reopening_with_a_lying_index_rebuilds_it_and_cuts_nothing(tmp_path, caplog):
    directory = str(tmp_path / "t-0")
    values = _write(directory, frames=12, per_frame=3)
    path = os.path.join(directory, fmt.segment_file_name(0))
    size = os.path.getsize(path)
    _lie(directory, 0, 2)
    log = open_log(directory, index_interval_bytes=1)
    assert log.log_end_offset() == len(values)
    assert log.truncated_bytes == 0 and os.path.getsize(path) == size
    assert log.append(encoded([b"next"])).base_offset == len(values)
    log.close()
    assert "rebuilding the index" in caplog.text
    for offset in range(0, len(values), 5):
        assert _first_record_from(directory, offset) == (offset, values[offset])

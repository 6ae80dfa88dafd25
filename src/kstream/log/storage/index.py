"""Sparse offset and time indexes of one segment.

An index is derived data: the segment log is the truth, and a missing or
inconsistent index is rebuilt from it. Entries are appended (never rewritten)
while the segment is active, one whenever a frame starts a new
``index.interval.bytes`` block of the segment, so every process appending to
the segment adds the same entries without sharing state.

Offset index entry: (offset relative to the segment base, byte position).
Time index entry: (max timestamp so far in the segment, relative offset).
Lookups load the file into a NumPy array once and binary-search it:
O(log n) in the segment, independent of how much data the log holds.

An entry is a claim, not a fact: a wrong but well-formed index (a bit flip, a
misdirected write) would make a seek land on the wrong frame. Users of
:meth:`OffsetIndex.lookup` check that the frame at the position found is valid
and starts at the offset the entry names, and fall back to the segment's start
when it does not (see ``LogReader._seek``, ``Segment.open_existing``).

Not thread-safe; each process and reader opens its own.
"""

from __future__ import annotations

import os

import numpy as np

from kstream.log.storage.format import OFFSET_INDEX_DTYPE, OFFSET_INDEX_ENTRY, TIME_INDEX_DTYPE, TIME_INDEX_ENTRY


class _SparseIndex:
    """An append-only file of fixed-size entries, cached as a NumPy array."""

    _dtype: np.dtype

    def __init__(self, path: str, base_offset: int):
        self.path = path
        self.base_offset = base_offset
        self._entries: np.ndarray | None = None
        self._append_fd: int | None = None

    def entries(self) -> np.ndarray:
        """All entries on disk (re-read when the file grew since the last call)."""
        try:
            size = os.path.getsize(self.path)
        except FileNotFoundError:
            size = 0
        whole = size - size % self._dtype.itemsize
        if self._entries is None or len(self._entries) * self._dtype.itemsize != whole:
            if whole == 0:
                self._entries = np.empty(0, dtype=self._dtype)
            else:
                with open(self.path, "rb") as f:
                    self._entries = np.frombuffer(f.read(whole), dtype=self._dtype)
        return self._entries

    def append_raw(self, raw: bytes) -> None:
        if self._append_fd is None:
            self._append_fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        written = os.write(self._append_fd, raw)
        if written != len(raw):  # a partial entry would misalign every later one
            raise OSError(f"short write to {self.path}: {written} of {len(raw)} bytes")

    def close(self) -> None:
        if self._append_fd is not None:
            os.close(self._append_fd)
            self._append_fd = None

    def truncate_entries(self, keep: int) -> None:
        """Keep only the first ``keep`` entries."""
        with open(self.path, "ab") as f:
            f.truncate(keep * self._dtype.itemsize)
        self._entries = None

    def delete(self) -> None:
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        self._entries = None


class OffsetIndex(_SparseIndex):
    """Maps an offset to the byte position of a frame at or before it."""

    _dtype = OFFSET_INDEX_DTYPE

    def append(self, offset: int, position: int) -> None:
        assert offset >= self.base_offset, (offset, self.base_offset)
        self.append_raw(OFFSET_INDEX_ENTRY.pack(offset - self.base_offset, position))

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry at or before ``offset``; (base, 0) if none."""
        entries = self.entries()
        relative = offset - self.base_offset
        if relative < 0 or len(entries) == 0:
            return self.base_offset, 0
        i = int(np.searchsorted(entries["relative_offset"], relative, side="right")) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + int(entries["relative_offset"][i]), int(entries["position"][i])

    def entry_at_or_before_position(self, position: int) -> tuple[int, int]:
        """(offset, position) of the last entry at or before byte ``position``; (base, 0) if none."""
        entries = self.entries()
        i = int(np.searchsorted(entries["position"], position, side="right")) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + int(entries["relative_offset"][i]), int(entries["position"][i])

    def last_entry(self) -> tuple[int, int] | None:
        entries = self.entries()
        if len(entries) == 0:
            return None
        return self.base_offset + int(entries["relative_offset"][-1]), int(entries["position"][-1])

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at or after ``position`` (after the log was truncated)."""
        entries = self.entries()
        keep = int(np.searchsorted(entries["position"], position, side="left"))
        if keep < len(entries):
            self.truncate_entries(keep)

    def is_consistent(self, segment_size: int) -> bool:
        """Entries strictly increasing and pointing inside the segment."""
        entries = self.entries()
        if len(entries) == 0:
            return True
        return bool(
            np.all(np.diff(entries["relative_offset"].astype(np.int64)) > 0)
            and np.all(np.diff(entries["position"].astype(np.int64)) > 0)
            and int(entries["position"][-1]) < segment_size
        )


class TimeIndex(_SparseIndex):
    """Maps a timestamp to an offset from which a scan finds the first record at or after it."""

    _dtype = TIME_INDEX_DTYPE

    def append(self, timestamp_ms: int, offset: int) -> None:
        self.append_raw(TIME_INDEX_ENTRY.pack(timestamp_ms, offset - self.base_offset))

    def last_timestamp(self) -> int | None:
        entries = self.entries()
        return None if len(entries) == 0 else int(entries["timestamp"][-1])

    def lookup(self, timestamp_ms: int) -> int:
        """An offset at or before the first record with timestamp >= ``timestamp_ms``."""
        entries = self.entries()
        # Entries hold the running maximum, so the last entry below the target
        # marks a point before which no record reaches it.
        i = int(np.searchsorted(entries["timestamp"], timestamp_ms, side="left")) - 1
        if i < 0:
            return self.base_offset
        return self.base_offset + int(entries["relative_offset"][i])

    def truncate_to_offset(self, next_offset: int) -> None:
        entries = self.entries()
        relative = next_offset - self.base_offset
        keep = int(np.searchsorted(entries["relative_offset"], relative, side="left"))
        if keep < len(entries):
            self.truncate_entries(keep)

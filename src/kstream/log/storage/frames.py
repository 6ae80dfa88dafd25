"""The one frame walker: valid frame headers of a segment, in order, from a position.

Every loop over the frames of a file goes through :class:`FrameWalk` (writer
recovery and catch-up, the reader's seek and tail scan, leader-epoch rebuilds,
``kstream dump-log``), so every one of them checks the same things: a whole
header, its magic, version and checksum (:func:`kstream.log.storage.format.header_problem`),
a frame that fits before ``end``, contiguous offsets when asked, and the payload
checksum when asked. The walk stops at the first frame that fails and says
where (:attr:`FrameWalk.position`) and why (:attr:`FrameWalk.problem`), and
whether that looks like an unfinished tail (:attr:`FrameWalk.torn`: zeros, a
header or frame cut by the end) rather than bad bytes.

The reader's per-frame hot path (log_reader ``_frame_at``) checks one frame at
a known position itself; this walker is for scans.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator

from kstream.log.storage import format as fmt

# read(position, size) -> that many bytes (bytes, memoryview or a pyarrow Buffer)
Read = Callable[[int, int], bytes | memoryview]


def pread_from(fd: int) -> Read:
    """A ``read(position, size)`` over an open file descriptor."""
    return lambda position, size: os.pread(fd, size, position)


class FrameWalk:
    """Iterate ``(position, header)`` of valid frames in ``[position, end)``.

    ``read(position, size)`` returns ``size`` bytes at ``position`` (``end`` is at
    most the file's size). With ``next_offset``, a frame whose base offset is not
    the previous frame's next offset stops the walk. With ``verify_payload``, so
    does a payload checksum mismatch. After iterating (or breaking out of the
    loop), :attr:`position` is where the last frame handed out starts, or where
    the walk stopped: at ``end``, or at a bad frame described by :attr:`problem`.
    Not thread-safe; one walk per loop.
    """

    __slots__ = ("end", "next_offset", "position", "problem", "read", "torn", "verify_payload")

    def __init__(self, read: Read, end: int, position: int = 0, *, next_offset: int | None = None,
                 verify_payload: bool = False):
        self.read = read
        self.end = end
        self.position = position
        self.next_offset = next_offset
        self.verify_payload = verify_payload
        self.problem: str | None = None
        self.torn = False

    def __iter__(self) -> Iterator[tuple[int, fmt.FrameHeader]]:
        position = self.position
        while position < self.end:
            header = self._check(position)
            if header is None:
                self.position = position
                return
            self.position = position
            yield position, header
            position += header.frame_size
            if self.next_offset is not None:
                self.next_offset = header.next_offset
        self.position = position

    def _check(self, position: int) -> fmt.FrameHeader | None:
        """The header at ``position`` when its frame is whole and valid; else None, with
        :attr:`problem` and :attr:`torn` set."""
        problem, torn, header = self._problem(position)
        if problem is None:
            return header
        self.problem, self.torn = problem, torn
        return None

    def _problem(self, position: int) -> tuple[str | None, bool, fmt.FrameHeader | None]:
        """(why the frame at ``position`` is not whole and valid or None, whether that looks
        like an unfinished tail, its header)."""
        if self.end - position < fmt.HEADER_SIZE:
            return f"header cut by the end ({self.end - position} of {fmt.HEADER_SIZE} bytes)", True, None
        raw = self.read(position, fmt.HEADER_SIZE)
        header = fmt.unpack_header(raw)
        if header.length == 0:
            return "zeros past the end of the data (a torn or preallocated tail)", True, header
        problem = fmt.header_problem(raw, header)
        if problem is not None:
            return problem, False, header
        if position + header.frame_size > self.end:
            return f"frame of {header.frame_size} bytes runs past the end ({self.end})", True, header
        if self.next_offset is not None and header.base_offset != self.next_offset:
            return f"base offset {header.base_offset} where {self.next_offset} was expected", False, header
        if self.verify_payload:
            payload = self.read(position + fmt.HEADER_SIZE, header.payload_size)
            if fmt.crc32c(payload) != header.payload_crc:
                return "payload checksum mismatch", False, header
        return None, False, header


def find_frame_after(read: Read, position: int, end: int) -> int | None:
    """Position of the first valid frame that starts after ``position`` (and fits before
    ``end``), found by searching for the magic and version bytes: whether anything but a
    torn tail follows a bad frame. For recovery only, when a bad frame's fate is unclear."""
    marker = _MARKER.pack(fmt.MAGIC, fmt.FORMAT_VERSION)
    search = position + 1 + _MARKER_AT  # where the marker of a frame after ``position`` would be
    while search + len(marker) <= end:
        size = min(_SEARCH_CHUNK_BYTES, end - search)
        data = bytes(read(search, size))
        found = data.find(marker)
        while found >= 0:
            candidate = search + found - _MARKER_AT
            if next(iter(FrameWalk(read, end, candidate)), None) is not None:
                return candidate
            found = data.find(marker, found + 1)
        search += size - (len(marker) - 1)  # overlap: a marker across two chunks is found
    return None


_MARKER = struct.Struct("<HB")  # magic and version, at header bytes 8-10
_MARKER_AT = 8
_SEARCH_CHUNK_BYTES = 1 << 20

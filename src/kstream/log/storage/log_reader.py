"""Read side of one replica's log: frames from an offset, checked, zero copy where safe.

Contract:

* Returns only whole frames whose checksums match (``check_crcs``; payloads
  are checked on several threads when a read returns several frames); a frame
  that does not fit in the file yet is not returned (a writer is mid-write, or
  a killed writer left a torn tail for the next writer to truncate).
* A bad frame raises :class:`CorruptBatchError` naming file, position and
  offset; bad bytes are never returned as data. A frame that starts past the
  offset asked for is an error too, never a silent skip.
* The offset index is a hint: the frame an entry points at must be valid and
  start at the entry's offset, else the segment is scanned from its start
  (with a warning) and its index is not used again by this reader.
* Segments are memory-mapped: payloads are zero copy. That is safe because
  no segment file shrinks in place (a writer cutting a torn tail replaces the
  file; this reader notices and re-opens it), and the log cleaner replaces a
  sealed segment by renaming a new file over it: a reader that has the old one
  mapped goes on reading it (the same records, before cleaning), one that opens
  it later reads the cleaned one (the same offsets, with gaps).
* Frames the cleaner rewrote hold offsets some of which have no record (sparse
  frames, fillers): offsets still run contiguously from frame to frame.
* Takes no lock and writes nothing; safe to use while other processes append.
  Not thread-safe (one reader per consumer).
* Creates nothing: a missing replica directory reads as no frames and is
  reported to ``on_missing`` (the partition takes the failed disk offline, and
  may raise), never re-created.
"""

from __future__ import annotations

import bisect
import logging
import os
from collections import OrderedDict
from collections.abc import Callable

import pyarrow as pa

from kstream.errors import CorruptBatchError, OffsetOutOfRangeError
from kstream.log.storage import format as fmt
from kstream.log.storage.checksums import payloads_good
from kstream.log.storage.frames import FrameWalk
from kstream.log.storage.index import OffsetIndex, TimeIndex
from kstream.log.storage.retention import list_segment_bases
from kstream.log.storage.segment import Frame

log = logging.getLogger(__name__)
_MAX_OPEN_SEGMENTS = 8


class _SegmentView:
    """A segment file memory-mapped for reading; re-mapped as the file grows.

    Safe because segment files never shrink in place (see segment.py): a cut
    replaces the file, and this view keeps the inode it mapped.
    """

    def __init__(self, directory: str, base_offset: int):
        self.base_offset = base_offset
        self.path = os.path.join(directory, fmt.segment_file_name(base_offset))
        self.fd = os.open(self.path, os.O_RDONLY)
        self.mapped: pa.MemoryMappedFile | None = None
        self.whole = pa.py_buffer(b"")
        self.mapped_size = 0
        self.offset_index = OffsetIndex(
            os.path.join(directory, fmt.segment_file_name(base_offset, fmt.OFFSET_INDEX_SUFFIX)), base_offset)
        self.time_index = TimeIndex(
            os.path.join(directory, fmt.segment_file_name(base_offset, fmt.TIME_INDEX_SUFFIX)), base_offset)
        self.index_trusted = True  # until an entry is caught pointing at the wrong frame

    def size(self) -> int:
        """Bytes readable now (maps the new end when the file grew)."""
        size = os.fstat(self.fd).st_size
        if size > self.mapped_size:
            # The old map stays alive while batches handed out still use it.
            # Map through our own fd's inode: /proc/self/fd follows it even if
            # the name was replaced meanwhile.
            self.mapped = pa.memory_map(f"/proc/self/fd/{self.fd}", "r")
            self.mapped_size = self.mapped.size()
            self.whole = self.mapped.read_buffer(self.mapped_size)  # zero copy
        return self.mapped_size

    def read(self, position: int, size: int) -> pa.Buffer:
        """A zero-copy slice of the mapped file."""
        assert position + size <= self.mapped_size, (position, size, self.mapped_size)
        return self.whole.slice(position, size)

    def replaced(self) -> bool:
        try:
            return os.stat(self.path).st_ino != os.fstat(self.fd).st_ino
        except FileNotFoundError:
            return False  # deleted by retention: what we mapped stays readable

    def close(self) -> None:
        # Buffers handed out keep their map alive; dropping our references is enough.
        self.mapped = None
        self.whole = pa.py_buffer(b"")
        os.close(self.fd)


class LogReader:
    """Reads frames of the replica in ``directory``. Not thread-safe."""

    def __init__(self, directory: str, check_crcs: bool = True,
                 on_missing: Callable[[str], None] | None = None):
        self.directory = directory
        self.check_crcs = check_crcs
        self._on_missing = on_missing
        self._bases: list[int] = []
        self._views: OrderedDict[int, _SegmentView] = OrderedDict()
        # Sequential-read cursor: where the frame holding ``_cursor_offset`` starts.
        self._cursor: tuple[int, int, int] | None = None  # (offset, segment base, position)

    # -- segments -------------------------------------------------------------

    def refresh(self) -> list[int]:
        try:
            self._bases = list_segment_bases(self.directory)
        except FileNotFoundError:
            self._bases = []
            if self._on_missing is not None:
                self._on_missing(self.directory)
        return self._bases

    def log_start_offset(self) -> int:
        bases = self._bases or self.refresh()
        return bases[0] if bases else 0

    def _view(self, base: int) -> _SegmentView:
        view = self._views.get(base)
        if view is not None:
            self._views.move_to_end(base)
            return view
        view = _SegmentView(self.directory, base)
        self._views[base] = view
        while len(self._views) > _MAX_OPEN_SEGMENTS:
            _, old = self._views.popitem(last=False)
            old.close()
        return view

    def _segment_for(self, offset: int) -> int:
        """Index into ``_bases`` of the segment holding ``offset``."""
        bases = self._bases or self.refresh()
        if not bases or offset < bases[0]:
            bases = self.refresh()
        if not bases or offset < bases[0]:
            raise OffsetOutOfRangeError(
                f"offset {offset} is before the log start offset "
                f"{bases[0] if bases else 0} of {self.directory} (deleted by retention?)"
            )
        return bisect.bisect_right(bases, offset) - 1

    # -- reading ----------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, end_offset: int | None = None,
             verify: bool = True) -> list[Frame]:
        """Frames holding offsets from ``offset`` on, about ``max_bytes`` of them.

        The first frame is returned even when larger than ``max_bytes`` (so a
        consumer always progresses). Stops at ``end_offset`` (exclusive; the
        high watermark) and at the end of what is fully written.

        Headers are always checked. Payload checksums (``check_crcs``) are
        checked here unless ``verify`` is False: then the caller must pass the
        frames through :meth:`keep_good` before using them (a fetch round checks
        many partitions' frames at once that way; see kstream.log.storage.checksums).
        """
        frames: list[Frame] = []
        total = 0
        while total < max_bytes:
            if end_offset is not None and offset >= end_offset:
                break
            try:
                frame, next_position_base = self._next_frame(offset, check_payload=False)
            except CorruptBatchError:
                if frames:
                    break  # hand out the good frames; the next read starts at the bad one
                raise
            except FileNotFoundError:
                # Retention deleted a segment under us: re-list and retry once.
                self.refresh()
                self._cursor = None
                frame, next_position_base = self._next_frame(offset, check_payload=False)
            if frame is None:
                break
            if frames and total + frame.header.frame_size > max_bytes:
                break
            frames.append(frame)
            total += frame.header.frame_size
            offset = frame.header.next_offset
            self._cursor = (offset, *next_position_base)
        if verify and self.check_crcs and frames:
            return self.keep_good(frames, payloads_good(frames))
        return frames

    def read_noted(self, offset: int, segment_base: int, position: int) -> Frame | None:
        """The frame holding ``offset`` at ``position`` of the segment at ``segment_base``, as a
        caller noted it from an earlier :meth:`read` (``Frame.position`` and the segment the
        frame was in), checked as :meth:`read` checks it. None when the note does not hold (the
        segment is gone, or another frame is there): the caller then uses :meth:`read`, which
        finds the frame by the offset index or reports what is wrong with the log."""
        if segment_base not in self._views and segment_base not in self._bases \
                and segment_base not in self.refresh():
            return None
        try:
            view = self._view(segment_base)
            return self._frame_at(view, position, offset, sealed=False, check_payload=self.check_crcs)
        except (CorruptBatchError, FileNotFoundError):
            return None

    def keep_good(self, frames: list[Frame], good: list[bool]) -> list[Frame]:
        """``frames`` (from :meth:`read` with ``verify=False``) up to the first whose payload
        checksum failed (``good``: one verdict per frame, see checksums.payloads_good).

        When the very first frame is bad it is read again, checked: that raises
        :class:`CorruptBatchError` naming file, position and offset, unless a
        writer had replaced the file (cut a torn tail) and the new file's frame is good.
        """
        if not self.check_crcs or all(good):
            return frames
        first_bad = good.index(False)
        self._cursor = None  # the next read starts at the bad frame
        if first_bad:
            return frames[:first_bad]
        frame, next_position_base = self._next_frame(frames[0].header.base_offset, check_payload=True)
        if frame is None:
            return []
        self._cursor = (frame.header.next_offset, *next_position_base)
        return [frame]

    def _next_frame(self, offset: int, check_payload: bool) -> tuple[Frame | None, tuple[int, int]]:
        """The frame holding ``offset`` and where the next one starts (segment base, position)."""
        if self._cursor is not None and self._cursor[0] == offset:
            _, base, position = self._cursor
            index = bisect.bisect_left(self._bases, base)
            # The cursor's position is in the file the open view maps: once that view was closed,
            # the file at the path may be another (the cleaner swapped the segment), so seek again.
            if index >= len(self._bases) or self._bases[index] != base or base not in self._views:
                self._cursor = None
                return self._next_frame(offset, check_payload)
        else:
            if not (self._bases or self.refresh()):
                return None, (0, 0)  # an empty log: nothing written yet
            index = self._segment_for(offset)
            base = self._bases[index]
            position = -1
        while True:
            sealed = index < len(self._bases) - 1
            view = self._view(base)
            try:
                if position < 0:
                    position = self._seek(view, offset)
                frame = self._frame_at(view, position, offset, sealed, check_payload)
            except CorruptBatchError:
                if not view.replaced():
                    raise
                # A writer cut a torn tail and renamed a new file over this one:
                # what looked bad is the old file's tail. Read the new file, seeking
                # again: positions of the old file mean nothing in the cleaner's.
                view.close()
                del self._views[base]
                position = -1
                continue
            if frame is not None:
                return frame, (base, position + frame.header.frame_size)
            if not sealed:
                if view.replaced():  # a writer cut a torn tail, or the cleaner swapped the segment
                    view.close()   # after it rolled: read the new file, seeking again (a cleaned
                    del self._views[base]  # file's frames lie elsewhere, its end may be further)
                    position = -1
                    continue
                # End of the active segment: has someone rolled a new one?
                if index == len(self._bases) - 1:
                    self.refresh()
                if index >= len(self._bases) - 1:
                    return None, (base, position)
            index += 1
            base, position = self._bases[index], 0

    def _seek(self, view: _SegmentView, offset: int) -> int:
        """Position of the frame holding ``offset`` (index lookup, then a header walk).

        Stops at the frame holding ``offset``, at the end of what is written, or
        at a bad frame (which :meth:`_frame_at` then reports).
        """
        size = view.size()
        start_offset, position = self._indexed_start(view, *view.offset_index.lookup(offset), size)
        walk = FrameWalk(view.read, size, position, next_offset=start_offset)
        for position, header in walk:
            if header.next_offset > offset:
                return position
        return walk.position

    def _indexed_start(self, view: _SegmentView, entry_offset: int, position: int, size: int
                       ) -> tuple[int, int]:
        """(offset, position) to walk from: the index entry when the frame there is valid
        and starts at the entry's offset, else the segment's start."""
        if position == 0 or not view.index_trusted:
            return view.base_offset, 0
        if position < size:
            first = next(iter(FrameWalk(view.read, size, position)), None)
            if first is not None and first[1].base_offset == entry_offset:
                return entry_offset, position
        if position + fmt.HEADER_SIZE <= size:
            # (An entry past what is mapped may be an appender's fresh one: no warning.)
            log.warning("%s: entry (offset %d, position %d) does not point at that frame; "
                        "scanning the segment from its start instead", view.offset_index.path,
                        entry_offset, position)
            view.index_trusted = False
        return view.base_offset, 0

    def _frame_at(self, view: _SegmentView, position: int, offset: int, sealed: bool,
                  check_payload: bool) -> Frame | None:
        size = view.mapped_size  # fstat (view.size()) only when reading past what is mapped
        if position + fmt.HEADER_SIZE > size:
            size = view.size()
        if position + fmt.HEADER_SIZE > size:
            if sealed and position != size:
                raise CorruptBatchError("sealed segment ends inside a frame header",
                                        path=view.path, position=position, offset=offset)
            return None
        raw = view.read(position, fmt.HEADER_SIZE)
        header = fmt.unpack_header(raw)
        if position + fmt.HEADER_SIZE <= size and header.length == 0 and not sealed:
            return None  # zeros past the end of a torn or preallocated tail
        problem = fmt.header_problem(raw, header)
        if problem is None and position + header.frame_size > size:
            size = view.size()
        if problem is None and position + header.frame_size > size:
            if not sealed:
                return None  # a writer is mid-frame, or a torn tail
            problem = "frame runs past the end of a sealed segment"
        if problem is not None:
            raise CorruptBatchError(f"bad frame ({problem})", path=view.path, position=position,
                                    offset=offset)
        if header.next_offset <= offset or header.base_offset > offset:
            raise CorruptBatchError(
                f"frame holds offsets {header.base_offset}..{header.last_offset}, expected {offset}",
                path=view.path, position=position, offset=offset)
        payload = view.read(position + fmt.HEADER_SIZE, header.payload_size)
        if check_payload and fmt.crc32c(payload) != header.payload_crc:
            raise CorruptBatchError("payload checksum mismatch", path=view.path,
                                    position=position, offset=header.base_offset)
        return Frame(header, position, payload)

    def _headers(self, view: _SegmentView, position: int, offset: int | None
                 ) -> list[tuple[int, fmt.FrameHeader]]:
        """Whole frames' (position, header) from ``position`` on, checking headers (and, with
        ``offset``, that offsets are contiguous from it). A torn or unfinished tail ends the
        list; a bad frame raises CorruptBatchError."""
        walk = FrameWalk(view.read, view.size(), position, next_offset=offset)
        found = list(walk)
        if walk.problem is not None and not walk.torn:
            raise CorruptBatchError(f"bad frame ({walk.problem})", path=view.path,
                                    position=walk.position, offset=walk.next_offset)
        return found

    def log_end_offset(self) -> int:
        """The next offset after the last whole frame (scans headers of the active tail)."""
        bases = self.refresh()
        return self.segment_end_offset(bases[-1]) if bases else 0

    def segment_end_offset(self, base_offset: int) -> int:
        """The next offset after the last whole frame of the segment at ``base_offset`` (its
        base offset when it holds none); FileNotFoundError when there is no such segment.
        For the active segment this is :meth:`log_end_offset`."""
        view = self._view(base_offset)
        offset, position = self._indexed_start(view, *(view.offset_index.last_entry() or (base_offset, 0)),
                                               view.size())
        if self._cursor is not None and self._cursor[1] == base_offset and self._cursor[2] > position:
            offset, position = self._cursor[0], self._cursor[2]
        headers = self._headers(view, position, offset)
        return headers[-1][1].next_offset if headers else offset

    def offset_for_timestamp(self, timestamp_ms: int) -> int | None:
        """Base offset of the first frame holding a record at or after ``timestamp_ms``.

        None when no record is that late. The caller filters records inside the frame.
        """
        bases = self.refresh()
        for base in bases:
            view = self._view(base)
            offset = view.time_index.lookup(timestamp_ms)
            for _, header in self._headers(view, self._seek(view, offset), None):
                if header.max_timestamp >= timestamp_ms:
                    return header.base_offset
        return None

    def close(self) -> None:
        for view in self._views.values():
            view.close()
        self._views.clear()
        self._cursor = None

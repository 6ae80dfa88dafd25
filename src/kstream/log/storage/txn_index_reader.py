"""The transaction index, reader side: a partition's LSO and aborted transactions from its files.

The derivation rule of docs/FORMAT.md ("Transaction index"), the same in the
Python and the JVM reader. Entries (written by :mod:`kstream.log.storage.txn_index`)
are trusted only below the recovery point's ``next_offset`` (and up to the
first bad entry of a file); everything else below the high watermark is
derived from the frame headers (and a marker's payload). Readers never write.
Per-segment results are cached by the files' identity and size, so a polling
reader re-reads only what changed; given the partition lock's generation, the whole
result is kept while the high watermark, the generation and the last segment file stay
the same (then nothing below the HW changed), which spares a polling reader the look-ups.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass

from kstream.errors import CorruptBatchError
from kstream.log.storage import format as fmt
from kstream.log.storage import txn_index
from kstream.log.storage.frames import FrameWalk, pread_from

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TxnState:
    """What the files say below a high watermark: open transactions (producer id -> first
    offset) and aborted ones ((producer id, first offset, marker offset), by marker offset)."""

    high_watermark: int
    open: dict[int, int]
    aborted: tuple[tuple[int, int, int], ...]

    @property
    def first_open(self) -> int | None:
        return min(self.open.values()) if self.open else None

    @property
    def last_stable_offset(self) -> int:
        first = self.first_open
        return self.high_watermark if first is None else min(first, self.high_watermark)


def fold(entries: Iterable[fmt.TxnIndexEntry], open_: dict[int, int], aborted: list[tuple[int, int, int]]) -> None:
    """The derivation rule, applied to entries in offset order (updates ``open_`` and
    ``aborted``): a DATA entry opens its producer's transaction if none is open; a marker
    closes it; an ABORT yields (producer id, first offset, marker offset)."""
    for kind, producer_id, offset in entries:
        if kind == fmt.TXN_DATA:
            open_.setdefault(producer_id, offset)
            continue
        first = open_.pop(producer_id, None)
        if first is not None and kind == fmt.TXN_ABORT:
            aborted.append((producer_id, first, offset))


def read_recovery_point(directory: str) -> fmt.RecoveryPoint | None:
    """The recovery point; None when it is missing or unreadable (readers then trust no entry)."""
    try:
        with open(os.path.join(directory, fmt.RECOVERY_POINT_FILE), "rb") as f:
            found = fmt.unpack_recovery_point_file(f.read(fmt.RECOVERY_POINT_FILE_BYTES + 1))
    except FileNotFoundError:
        return None
    return None if found is None else found[1]


@dataclass(frozen=True)
class _Plan:
    """How one segment's entries are found: file entries below ``covered``, frames from
    ``position`` (holding ``covered``) up to ``end``; ``key`` names what the result depends on."""

    base: int
    next_base: int | None
    end: int
    covered: int
    position: int
    key: tuple


class TxnIndexReader:
    """The transactions of the replica in ``directory`` as its files tell (the derivation
    rule of docs/FORMAT.md). Takes no lock and writes nothing; not thread-safe.

    The fold is cached per segment, keyed by the files' identity and size, the recovery
    point (for the segment it lies in) and the high watermark (for the segment holding it):
    a polling reader re-reads only the segments that changed, usually the last one. The
    cache holds one small dict per segment of the replica (bounded by its segment count).
    """

    def __init__(self, directory: str):
        self.directory = directory
        self._pid = os.getpid()
        self._chain: list[tuple[tuple, dict[int, int], int]] = []  # (key, open after, len(aborted) after)
        self._aborted: list[tuple[int, int, int]] = []
        self._aborted_view: tuple[tuple[int, int, int], ...] = ()
        # segment base -> ((base, covered, position, inode), position reached, offset reached, entries,
        # position of the last frame walked, its header bytes)
        self._walks: dict[int, tuple[tuple[int, int, int, int], int, int, tuple[fmt.TxnIndexEntry, ...], int,
                                     bytes]] = {}
        # The last result, with (HW, lock generation, last segment's path and identity) it was made at.
        self._last: tuple[tuple[int, int, str, tuple[int, int, int] | None], TxnState] | None = None

    def state(self, high_watermark: int, generation: int | None = None) -> TxnState:
        """Open and aborted transactions below ``high_watermark``.

        ``generation``: the partition lock's generation, read before this call. Frames below
        the HW change only by what moves the generation (a cut, a replaced file, retention;
        appends land above the HW), so while the HW, the generation and the last segment file
        (path, inode, size, mtime) are what the last call saw, its result stands and no other
        file is looked at. (A cut bumps the generation before it changes files: a result made
        in between is made again once the last segment file is replaced or the HW moves.)"""
        if os.getpid() != self._pid:  # forked: start afresh (nothing shared is wrong, but be plain)
            self.__init__(self.directory)  # type: ignore[misc]
        last = self._last
        if generation is not None and last is not None:
            (hw, seen_generation, last_path, identity) = last[0]
            if hw == high_watermark and seen_generation == generation and _identity(last_path) == identity:
                return last[1]
        self._last = None
        point = read_recovery_point(self.directory)
        try:
            bases = fmt.list_segment_bases(self.directory)
        except FileNotFoundError:
            bases = []
        open_: dict[int, int] = {}
        done = 0
        for i, base in enumerate(bases):
            if base >= high_watermark:
                break
            plan = self._plan(base, bases[i + 1] if i + 1 < len(bases) else None, point, high_watermark)
            done = i + 1
            if i < len(self._chain) and self._chain[i][0] == plan.key:
                open_ = self._chain[i][1]
                continue
            self._truncate_chain(i)
            open_ = dict(open_)
            fold(self._entries(plan), open_, self._aborted)
            self._chain.append((plan.key, open_, len(self._aborted)))
            self._aborted_view = tuple(self._aborted)
        self._truncate_chain(done)
        state = TxnState(high_watermark, dict(open_), self._aborted_view)
        if generation is not None and bases:
            last_path = os.path.join(self.directory, fmt.segment_file_name(bases[-1]))
            self._last = ((high_watermark, generation, last_path, _identity(last_path)), state)
        return state

    def _truncate_chain(self, keep: int) -> None:
        if len(self._chain) > keep:
            del self._chain[keep:]
            del self._aborted[self._chain[-1][2] if self._chain else 0:]
            self._aborted_view = tuple(self._aborted)

    def _plan(self, base: int, next_base: int | None, point: fmt.RecoveryPoint | None,
              high_watermark: int) -> _Plan:
        end = high_watermark if next_base is None else min(high_watermark, next_base)
        txn_stat = _identity(txn_index.txn_index_path(self.directory, base))
        log_path = os.path.join(self.directory, fmt.segment_file_name(base))
        if point is not None and base < point.segment_base:  # sealed and fsynced: trust the file
            covered, position = end, 0
            key: tuple = (base, next_base, end if end != next_base else None, txn_stat, _identity(log_path))
        else:
            covered, position = (point.next_offset, point.position) if (
                point is not None and base == point.segment_base) else (base, 0)
            covered = min(covered, end)
            # Inode numbers are reused and mtimes are coarse: a segment deleted and made again
            # (a cut log) could pass for the old one by its stat alone; its first frame cannot.
            key = (base, next_base, end, covered, position, txn_stat, _identity(log_path), _first_header(log_path))
        if txn_stat is None:
            covered, position = base, 0
        return _Plan(base, next_base, end, covered, position, key)

    def _entries(self, plan: _Plan) -> list[fmt.TxnIndexEntry]:
        """Trusted file entries below ``plan.covered``, then entries derived from the frames
        in [covered, end)."""
        path = txn_index.txn_index_path(self.directory, plan.base)
        raw = txn_index.read_file(path)
        covered, position = plan.covered, plan.position
        entries, clean = fmt.unpack_txn_entries(raw or b"")
        inside = list(itertools.takewhile(  # an entry outside the segment ends the trusted part too
            lambda e: e.offset >= plan.base and (plan.next_base is None or e.offset < plan.next_base), entries))
        if raw is None:
            covered, position = plan.base, 0
        elif not clean or len(inside) != len(entries):
            # A torn or bad entry ends the trusted part: what follows it comes from the frames.
            trusted_to = inside[-1].offset + 1 if inside else plan.base
            if trusted_to < covered:
                covered, position = trusted_to, 0
        found = [e for e in inside if e.offset < covered]
        if covered >= plan.end:
            return found
        segment_path = os.path.join(self.directory, fmt.segment_file_name(plan.base))
        try:
            fd = os.open(segment_path, os.O_RDONLY)
        except FileNotFoundError:
            return found  # deleted by retention meanwhile: nothing of it is read any more
        try:
            found += self._walk(plan, fd, segment_path, covered, position)
        finally:
            os.close(fd)
        return found

    def _walk(self, plan: _Plan, fd: int, segment_path: str, covered: int, position: int
              ) -> list[fmt.TxnIndexEntry]:
        """Entries of the frames in [covered, end), going on from where the last walk of this
        segment stopped when it started at the same place in the same file (a polling reader
        behind a recovery point that does not move walks each frame once)."""
        inode = os.fstat(fd).st_ino
        start = (plan.base, covered, position, inode)
        cached = self._walks.get(plan.base)
        derived: list[fmt.TxnIndexEntry] = []
        read = pread_from(fd)
        # Go on only in the same file: same inode, and the last frame walked still there, byte
        # for byte (an inode number is reused when a cut log makes the segment again).
        if (cached is not None and cached[0] == start and cached[2] <= plan.end
                and bytes(read(cached[4], fmt.HEADER_SIZE)) == cached[5]):
            at, next_offset = cached[1], cached[2]
            derived.extend(cached[3])
            last = (cached[4], cached[5])
        else:
            at, next_offset = position, (covered if position else plan.base)
            last = (at, bytes(read(at, fmt.HEADER_SIZE)))  # (nothing walked yet: what lies there now)
        walk = FrameWalk(read, os.fstat(fd).st_size, at, next_offset=next_offset)
        for frame_position, header in walk:
            if header.base_offset >= plan.end:
                break
            at, next_offset = frame_position + header.frame_size, header.next_offset
            last = (frame_position, bytes(read(frame_position, fmt.HEADER_SIZE)))
            if header.base_offset >= covered:
                entry = txn_index.frame_entry(read, frame_position, header, segment_path)
                if entry is not None:
                    derived.append(entry)
        if walk.problem is not None and not walk.torn and next_offset < plan.end:
            raise CorruptBatchError(f"bad frame ({walk.problem}) below the high watermark",
                                    path=segment_path, position=walk.position, offset=next_offset)
        self._walks[plan.base] = (start, at, next_offset, tuple(derived), *last)
        if len(self._walks) > _MAX_WALKS:
            self._walks.pop(next(iter(self._walks)))
        return derived


_MAX_WALKS = 4  # segments whose frame walk is remembered (the last one or two are walked)


def _first_header(path: str) -> bytes | None:
    """The first frame header's bytes of a segment (None when missing)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        return os.pread(fd, fmt.HEADER_SIZE, 0)
    finally:
        os.close(fd)


def _identity(path: str) -> tuple[int, int, int] | None:
    """(inode, size, mtime) of a file, None when missing: what a cached read depends on."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)

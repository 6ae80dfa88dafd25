"""Reads of partitions' leader replicas for one evaluation: log ends and record timestamps,
each read once however many groups ask, and reused across evaluations while the segment
file they came from is unchanged.

A page that evaluates every group (the groups list, the sampler's group round) asks
the same partitions again and again: each group consuming a topic wants that
topic's log start / log end per partition and the timestamp of the record at its
committed offset. :class:`PartitionReads` answers from one open cluster and keeps,
for the life of one evaluation only, what it read:

- the log dir paths and topic metadata (one metadata query each, not one per
  partition);
- each partition's segment list and (log start, log end) once (:meth:`offsets`);
- the timestamps of each frame it decoded, so groups sitting inside the same
  batch cost one decode (:meth:`timestamp`), at most :data:`MAX_CACHED_FRAMES`.

Across evaluations, the two costly reads are memoized by segment file identity
(:mod:`kstream.tools.monitor.segment_memo`): the log end (a header scan of the active
segment, :data:`LOG_ENDS`) and a record's timestamp (a frame decode,
:data:`TIMESTAMPS`). Each evaluation still lists every partition's directory and
``stat``s the segment it asks about, so a rolled, grown, replaced or deleted segment is
read again: the figures are those a fresh :class:`~kstream.log.storage.log_reader.LogReader`
gives (the log end is :meth:`~kstream.log.storage.log_reader.LogReader.log_end_offset`, the
log start the first segment's base offset), never older than this evaluation. On a
quiet partition that is one ``listdir`` and one ``stat`` instead of a reader's set-up
(open, map, index, scan).

It is a snapshot: a record appended after a partition's first read is not seen by
this object. Callers make one per page or per sampler round and close it. Reads only;
not thread-safe (the module memos are).
"""

from __future__ import annotations

import bisect
import os

from kstream.errors import OffsetOutOfRangeError
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.metadata import TopicInfo
from kstream.log.storage import format as fmt
from kstream.log.storage.log_reader import LogReader
from kstream.log.storage.output import decode_frame
from kstream.log.storage.records import PayloadCodec
from kstream.log.storage.retention import list_segment_bases
from kstream.tools.monitor.segment_memo import Identity, SegmentMemo, identity

MAX_CACHED_FRAMES = 100_000
MAX_TOPICS = 100_000
MAX_MEMO_LOG_ENDS = 50_000
"""Active segments whose log end is kept across evaluations (one small entry each)."""
MAX_MEMO_TIMESTAMPS = 50_000
"""(segment, offset) record timestamps kept across evaluations (one int each)."""

_Key = tuple[str, int]
# base_offset, next_offset, timestamps, and each record's offset when the frame is sparse (cleaned)
_Frame = tuple[int, int, 'list[int | None] | int', 'list[int] | None']

LOG_ENDS: SegmentMemo[int] = SegmentMemo(MAX_MEMO_LOG_ENDS)
TIMESTAMPS: SegmentMemo[tuple[int | None] | None] = SegmentMemo(MAX_MEMO_TIMESTAMPS)


class PartitionReads:
    """Log ends and record timestamps of leader replicas; see the module docstring."""

    def __init__(self, cluster: Cluster):
        self._cluster = cluster
        self._paths: dict[int, str] | None = None
        self._infos: dict[str, TopicInfo] = {}
        # offsets(): the replica dir, its segment bases, and the active segment's identity
        # (the stat its log end came from; None when there was none).
        self._listings: dict[_Key, tuple[str, list[int], Identity | None]] = {}
        self._offsets: dict[_Key, tuple[int, int]] = {}
        # (topic, partition) -> frames decoded: their offsets and each record's timestamp, or
        # one int when every record carries the frame's max timestamp (log append time),
        # with the identity their segment file had before they were read.
        self._frames: dict[_Key, list[tuple[Identity, _Frame]]] = {}
        self._frame_count = 0
        self._codec = PayloadCodec()

    def topic(self, name: str) -> TopicInfo:
        """The topic's metadata, read once (TopicNotFoundError if there is none)."""
        info = self._infos.get(name)
        if info is None:
            if len(self._infos) >= MAX_TOPICS:
                self._infos.clear()
            info = self._infos[name] = self._cluster.topic(name)
        return info

    def leader_dir(self, topic: str, partition: int) -> str:
        if self._paths is None:
            self._paths = self._cluster.log_dir_paths()
        leader = self.topic(topic).partitions[partition].leader
        return os.path.join(self._paths[leader], fmt.replica_dir_name(topic, partition))

    def offsets(self, topic: str, partition: int) -> tuple[int, int]:
        """(log start offset, log end offset) of the partition's leader replica, as
        ``LogReader.log_start_offset`` / ``log_end_offset`` give them (0, 0 for a missing
        replica directory or an empty log)."""
        key = (topic, partition)
        found = self._offsets.get(key)
        if found is None:
            directory = self.leader_dir(topic, partition)
            try:
                bases = list_segment_bases(directory)
            except FileNotFoundError:
                bases = []  # as LogReader: a missing replica directory reads as no frames
            active: Identity | None = None
            if bases:
                end, active = self._log_end(directory, bases[-1])
                found = (bases[0], end)
            else:
                found = (0, 0)
            self._listings[key] = (directory, bases, active)
            self._offsets[key] = found
        return found

    def _log_end(self, directory: str, active_base: int) -> tuple[int, Identity | None]:
        def compute(_: Identity) -> int:
            reader = LogReader(directory, check_crcs=False)  # fresh: opened after the stat
            try:
                return reader.segment_end_offset(active_base)
            finally:
                reader.close()

        path = os.path.join(directory, fmt.segment_file_name(active_base))
        try:
            before = identity(path)
            return LOG_ENDS.get(path, None, compute, before), before
        except FileNotFoundError:
            # The segment went between the listing and the read (a topic deleted, a replica
            # moved): read the log as it is now, as without the memo.
            reader = LogReader(directory, check_crcs=False)
            try:
                return reader.log_end_offset(), None
            finally:
                reader.close()

    def timestamp(self, topic: str, partition: int, offset: int) -> int | None:
        """The timestamp (ms) of the record at ``offset``; None when there is none (deleted
        by retention, or at or beyond the log end)."""
        key = (topic, partition)
        self.offsets(topic, partition)  # lists the segments
        directory, bases, active = self._listings[key]
        if not bases or offset < bases[0]:
            return None  # gone (retention), or nothing written
        index = bisect.bisect_right(bases, offset) - 1
        # In the active segment (the usual place of a committed offset), the stat that gave
        # the log end names the file: the answer is as of that same snapshot.
        known = active if index == len(bases) - 1 else None
        try:
            found = TIMESTAMPS.get(os.path.join(directory, fmt.segment_file_name(bases[index])), offset,
                                   lambda before: self._read_timestamp(key, before, directory, offset),
                                   known)
        except FileNotFoundError:  # deleted meanwhile: read the log as it is now
            found = self._read_timestamp(key, None, directory, offset)
        return None if found is None else found[0]

    def _read_timestamp(self, key: _Key, before: Identity | None, directory: str, offset: int
                        ) -> tuple[int | None] | None:
        """(timestamp,) of the record at ``offset``; None when there is no such record.
        From a frame this evaluation decoded out of the same segment file (``before``: its
        identity), else read by a fresh reader and kept for this evaluation: groups sitting
        inside one batch cost one decode."""
        for read_from, frame in self._frames.get(key, ()):
            if read_from == before and frame[0] <= offset < frame[1]:
                return (_lookup(frame, offset),)
        reader = LogReader(directory, check_crcs=False)
        try:
            frames = reader.read(offset, 1)
        except OffsetOutOfRangeError:
            return None
        finally:
            reader.close()
        if not frames:
            return None
        if not frames[0].header.holds_records:  # a cleaner's filler: the next record's time
            return self._read_timestamp(key, before, directory, frames[0].header.next_offset)
        stored = decode_frame(self._codec, frames[0], frozenset({"timestamp"}))
        times: list[int | None] | int
        if stored.log_append_time or "timestamp" not in stored.batch.schema.names:
            times = stored.max_timestamp
        else:
            times = stored.batch.column("timestamp").to_pylist()
        offsets = None if stored.offsets is None else stored.offsets.tolist()
        frame = (stored.base_offset, frames[0].header.next_offset, times, offsets)
        if self._frame_count >= MAX_CACHED_FRAMES:
            self._frames.clear()
            self._frame_count = 0
        if before is not None:
            self._frames.setdefault(key, []).append((before, frame))
        self._frame_count += 1
        return (_lookup(frame, offset),) if frame[0] <= offset < frame[1] else None

    def close(self) -> None:
        self._frames.clear()
        self._frame_count = 0

    def __enter__(self) -> PartitionReads:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _lookup(frame: _Frame, offset: int) -> int | None:
    base, _, times, offsets = frame
    if isinstance(times, int):
        return times
    # (a sparse frame: the record at ``offset`` or, in a gap the cleaner left, the next one)
    index = offset - base if offsets is None else bisect.bisect_left(offsets, offset)
    value = times[index] if index < len(times) else None
    return None if value is None else int(value)

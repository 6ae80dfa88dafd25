"""Reads of partitions' leader replicas for one evaluation: log ends and record timestamps,
each read once however many groups ask.

A page that evaluates every group (the groups list, the sampler's group round) asks
the same partitions again and again: each group consuming a topic wants that
topic's log start / log end per partition and the timestamp of the record at its
committed offset. :class:`PartitionReads` answers from one open cluster and keeps,
for the life of one evaluation only, what it read:

- the log dir paths and topic metadata (one metadata query each, not one per
  partition);
- one :class:`~kstream.log.log_reader.LogReader` per partition, at most
  :data:`MAX_OPEN_READERS` open at once (least recently used closed first: each
  holds file descriptors);
- each partition's (log start, log end) once (:meth:`offsets`);
- the timestamps of each frame it decoded, so groups sitting inside the same
  batch cost one decode (:meth:`timestamp`), at most :data:`MAX_CACHED_FRAMES`.

It is a snapshot: a record appended after a partition's first read is not seen by
this object. Callers make one per page or per sampler round and close it (nothing
outlives the evaluation, so nothing goes stale). Reads only; not thread-safe.
"""

from __future__ import annotations

import os
from collections import OrderedDict

from kstream.errors import OffsetOutOfRangeError
from kstream.log import format as fmt
from kstream.log.cluster import Cluster
from kstream.log.log_reader import LogReader
from kstream.log.metadata import TopicInfo
from kstream.log.output import decode_frame
from kstream.log.records import PayloadCodec

MAX_OPEN_READERS = 64
MAX_CACHED_FRAMES = 100_000
MAX_TOPICS = 100_000

_Key = tuple[str, int]
_Frame = tuple[int, int, 'list[int | None] | int']  # base_offset, next_offset, timestamps


class PartitionReads:
    """Log ends and record timestamps of leader replicas; see the module docstring."""

    def __init__(self, cluster: Cluster):
        self._cluster = cluster
        self._paths: dict[int, str] | None = None
        self._infos: dict[str, TopicInfo] = {}
        self._readers: OrderedDict[_Key, LogReader] = OrderedDict()
        self._offsets: dict[_Key, tuple[int, int]] = {}
        # (topic, partition) -> frames decoded: their offsets and each record's timestamp, or
        # one int when every record carries the frame's max timestamp (log append time).
        self._frames: dict[_Key, list[_Frame]] = {}
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

    def _reader(self, key: _Key) -> LogReader:
        reader = self._readers.get(key)
        if reader is not None:
            self._readers.move_to_end(key)
            return reader
        reader = self._readers[key] = LogReader(self.leader_dir(*key), check_crcs=False)
        while len(self._readers) > MAX_OPEN_READERS:
            _, oldest = self._readers.popitem(last=False)
            oldest.close()
        return reader

    def offsets(self, topic: str, partition: int) -> tuple[int, int]:
        """(log start offset, log end offset) of the partition's leader replica."""
        key = (topic, partition)
        found = self._offsets.get(key)
        if found is None:
            reader = self._reader(key)
            end = reader.log_end_offset()  # (lists the segments: the start below is current)
            found = self._offsets[key] = (reader.log_start_offset(), end)
        return found

    def timestamp(self, topic: str, partition: int, offset: int) -> int | None:
        """The timestamp (ms) of the record at ``offset``; None when there is none (deleted
        by retention, or at or beyond the log end)."""
        key = (topic, partition)
        for frame in self._frames.get(key, ()):
            if frame[0] <= offset < frame[1]:
                return _lookup(frame, offset)
        try:
            frames = self._reader(key).read(offset, 1)
        except OffsetOutOfRangeError:
            return None
        if not frames:
            return None
        stored = decode_frame(self._codec, frames[0], frozenset({"timestamp"}))
        times: list[int | None] | int
        if stored.log_append_time or "timestamp" not in stored.batch.schema.names:
            times = stored.max_timestamp
        else:
            times = stored.batch.column("timestamp").to_pylist()
        frame = (stored.base_offset, frames[0].header.next_offset, times)
        if self._frame_count >= MAX_CACHED_FRAMES:
            self._frames.clear()
            self._frame_count = 0
        self._frames.setdefault(key, []).append(frame)
        self._frame_count += 1
        return _lookup(frame, offset) if frame[0] <= offset < frame[1] else None

    def close(self) -> None:
        for reader in self._readers.values():
            reader.close()
        self._readers.clear()

    def __enter__(self) -> PartitionReads:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _lookup(frame: _Frame, offset: int) -> int | None:
    base, _, times = frame
    if isinstance(times, int):
        return times
    index = offset - base
    value = times[index] if index < len(times) else None
    return None if value is None else int(value)

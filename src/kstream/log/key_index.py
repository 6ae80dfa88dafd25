"""The key index of one compacted partition: each key's latest visible record, by offset.

What :class:`kstream.client.table.Table` answers ``get(key)`` from (docs/TABLES.md).

Contract:

* **Derived, in memory, never persisted.** The index is a dict key -> offset of the key's
  latest record a read_committed reader sees (tombstones remove the key), built by scanning
  the partition through the engine's face (:func:`read_visible`: control frames, the
  cleaner's fillers and aborted transactions skipped, nothing past the LSO) and kept current
  from the last offset it indexed (:meth:`KeyIndex.catch_up`). Losing it costs a rebuild;
  nothing else depends on it. It writes no file: readers never create state
  (docs/DESIGN.md), so there is no checkpoint to validate or to go stale.
* **Offsets, not positions.** The log cleaner keeps every key's latest record below its
  end at its offset (it moves bytes, never offsets), so an indexed offset stays right across
  cleans; a byte position would not. A record is read back by offset (:meth:`record`): the
  segment's offset index finds its frame, the frame's own offsets (a cleaned, sparse frame
  too) its row.
* **Cleaning while indexing.** A clean that ends at C removes a key's older records because a
  newer one lies below C. A scan that ran while a clean swapped segments in (the partition
  lock's generation moved) may have read a cleaned segment without reaching that newer
  record, so :meth:`catch_up` reads on until it has indexed at least to the cleaner's end
  (its ``cleaner-offset-checkpoint``; one that exists but is damaged is a KStreamError naming
  it, never "never cleaned"). A snapshot index (``until``, a Table's ``as_of``)
  cannot read on: it refuses an end below where the cleaner has cleaned
  (:class:`OffsetOutOfRangeError` saying so), since the values it would need are gone.
* **Limits:** at most ``max_keys`` keys (ResourceExhaustedError past it, naming the limit);
  a catch-up reads ``read_bytes`` of the log per look.

Not thread-safe (one per Table, which locks around it). Takes no lock, writes nothing.
"""

from __future__ import annotations

import bisect
import functools
from array import array
from collections import OrderedDict
from collections.abc import Sequence

import pyarrow as pa

from kstream.errors import OffsetOutOfRangeError, ResourceExhaustedError
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.metadata import TopicInfo
from kstream.log.cluster.partition import Partition
from kstream.log.storage.cleaner.frame_rewrite import tombstones
from kstream.log.storage.cleaner_checkpoint import read_trusted_checkpoint
from kstream.log.storage.log_reader import LogReader
from kstream.log.storage.output import StoredBatch, decode_frame
from kstream.log.storage.records import RECORD_COLUMNS, PayloadCodec
from kstream.log.storage.segment import Frame
from kstream.log.transactions.isolation import READ_COMMITTED, Isolation
from kstream.log.transactions.store import TransactionStore
from kstream.log.visible_reads import READ_BYTES, read_visible

MAX_KEYS = 100_000_000
"""Most keys one partition's index holds (about 150 bytes of memory each)."""
FRAME_CACHE_BYTES = 64 << 20
"""Most payload bytes of decoded frames one index keeps for its lookups (checked once each)."""
TABLE_REMEDY = ("run `kstream topics clean {topic} --force` (the clean counts the partition as dirty and writes "
                "the checkpoint whole again), then read again; do not delete it: a snapshot below what the cleaner "
                "reduced would then answer from reduced records")
"""What a Table's error asks of a damaged cleaner checkpoint."""
CATCH_UP_ROUNDS = 16
"""Most scans one :meth:`KeyIndex.catch_up` makes while cleans keep swapping segments under it."""
_KEY_COLUMNS = frozenset({"key", "value"})


class KeyIndex:
    """key -> offset of its latest visible record in one partition of a compacted topic.

    ``until``: a snapshot index, never past that offset (a Table's ``as_of``); None: it follows
    the partition's LSO on each :meth:`catch_up`. See the module for the contract."""

    def __init__(self, cluster: Cluster, info: TopicInfo, partition: int, *, typed: bool,
                 until: int | None = None, max_keys: int = MAX_KEYS, read_bytes: int = READ_BYTES,
                 frame_cache_bytes: int = FRAME_CACHE_BYTES):
        self.topic = info.name
        self.partition = partition
        self.typed = typed
        self.until = until
        self.max_keys = max_keys
        self.read_bytes = read_bytes
        self._handle: Partition = cluster.partition(info, partition)
        self._isolation = Isolation(READ_COMMITTED, TransactionStore.for_cluster(cluster), info.name, partition,
                                    functools.partial(_leader_dir, self._handle),
                                    generation=self._handle.lock.read_generation)
        self._reader: LogReader = self._handle.reader()
        self._codec = PayloadCodec()
        self._latest: dict[bytes, int] = {}
        self.indexed_to: int | None = None  # the offset the next scan starts at (None: never scanned)
        self._files_generation = self._handle.lock.read_generation()
        # Decoded frames lookups read, by base offset (sorted list beside it for the search),
        # least recently used first; dropped whenever the reader is (the files changed).
        self._frames: OrderedDict[int, tuple[StoredBatch, int]] = OrderedDict()  # (frame, payload bytes)
        self._frame_bases: list[int] = []
        self._frame_bytes = 0
        self.frame_cache_bytes = frame_cache_bytes
        # Where each indexed frame that holds records is (noted by the scan): its base offset,
        # its segment's base and its position there, so a lookup reads it without a seek.
        # Valid while the files' generation holds (a clean moves frames): dropped with the reader.
        self._noted_bases = array("q")
        self._noted_segments = array("q")
        self._noted_positions = array("q")

    def __len__(self) -> int:
        """Keys that have a live (not deleted) latest record."""
        return len(self._latest)

    def offset_of(self, key: bytes) -> int | None:
        """The offset of ``key``'s latest record as far as indexed (None: absent or deleted)."""
        return self._latest.get(key)

    def forget(self, key: bytes, offset: int) -> None:
        """Drop ``key`` if it still points at ``offset`` (its record left the log: retention)."""
        if self._latest.get(key) == offset:
            del self._latest[key]

    # -- building -------------------------------------------------------------------------

    def catch_up(self) -> int:
        """Index the visible records from where the last scan ended to the LSO now (a snapshot:
        to ``until``, once). Returns the offset indexed to."""
        if self.until is not None and self.indexed_to is not None:
            return self.indexed_to  # a snapshot is built once
        generation = self._handle.lock.read_generation
        for _ in range(CATCH_UP_ROUNDS):
            seen = self._follow_files()
            high_watermark = self._handle.high_watermark() or 0
            end = self._isolation.end_offset(high_watermark)
            if self.until is not None:
                if end < self.until:
                    raise OffsetOutOfRangeError(
                        f"{self.topic}-{self.partition}: as_of offset {self.until} is past what a read_committed "
                        f"reader may read now (the LSO {end}, HW {high_watermark}): records below it are not "
                        f"written or not committed yet; ask for as_of <= {end}, or wait")
                end = self.until
            before = self.indexed_to
            self._scan(end, high_watermark)
            assert self.indexed_to is not None
            if self.indexed_to == before or generation() == seen:
                return self.indexed_to  # no file replaced while reading: what was read is whole
            cleaned_to = self._cleaned_to()
            if cleaned_to <= self.indexed_to:
                return self.indexed_to  # a roll, or a clean that ended where this scan had read
            if self.until is not None:
                raise self._cleaned_past(cleaned_to)
            # A clean ended past this scan: records it removed were replaced below its end; read on.
        raise OffsetOutOfRangeError(
            f"{self.topic}-{self.partition}: the log cleaner swapped segments during each of "
            f"{CATCH_UP_ROUNDS} scans of the key index; try again when it is less busy")

    def check_snapshot(self) -> None:
        """A snapshot index (``until``) refuses an end below where the cleaner has cleaned."""
        if self.until is None:
            return
        cleaned_to = self._cleaned_to()
        if cleaned_to > self.until:
            raise self._cleaned_past(cleaned_to)

    def _cleaned_to(self) -> int:
        """Where the cleaner has cleaned (0: never, its checkpoint missing). A checkpoint that
        exists but holds no offset is a KStreamError naming it (counting it as never cleaned
        would let a snapshot below the cleaned part, or a scan a clean cut short, answer)."""
        return read_trusted_checkpoint(self._handle.leader_dir, "a Table",
                                       TABLE_REMEDY.format(topic=self.topic)) or 0

    def _follow_files(self) -> int | None:
        """Read the files as they are now: after a clean swapped segments in (or the leader
        moved), a new reader, so no old segment stays mapped (and its disk space held). Returns
        the partition lock's generation."""
        generation = self._handle.lock.read_generation()
        # (A new leader or ISR bumps the generation too: the metadata is asked only then.)
        if generation != self._files_generation:
            self._handle.refresh_metadata()
            self._reader.close()
            self._reader = self._handle.reader()
            self._files_generation = generation
            self._frames.clear()
            self._frame_bases.clear()
            self._frame_bytes = 0
            for noted in (self._noted_bases, self._noted_segments, self._noted_positions):
                del noted[:]
        return generation

    def _cleaned_past(self, cleaned_to: int) -> OffsetOutOfRangeError:
        return OffsetOutOfRangeError(
            f"{self.topic}-{self.partition}: as_of offset {self.until} is below offset {cleaned_to}, where the "
            "log cleaner has cleaned: records replaced after it are gone from the log, so the values as of "
            f"{self.until} cannot be read; ask for as_of >= {cleaned_to} (or the latest values, without as_of)")

    def _scan(self, end: int, high_watermark: int) -> None:
        start = self._reader.log_start_offset() if self.indexed_to is None else self.indexed_to
        if self.indexed_to is None:
            self.check_snapshot()
        if end <= start:
            self.indexed_to = start
            return
        self._reader.refresh()
        log_start = self._reader.log_start_offset()
        if log_start > start:  # retention (compact,delete) removed the rest of what we had not read
            start = log_start
        columns = None if self.typed else _KEY_COLUMNS
        latest = self._latest
        for stored in read_visible(self._reader, self._isolation, start, end, high_watermark, self._codec,
                                   columns, self.read_bytes, self._note_frames):
            self._add(latest, stored)
        self.indexed_to = end

    def _note_frames(self, frames: Sequence[Frame]) -> None:
        """Note where each frame holding records is (what :meth:`record` reads without a seek)."""
        bases = self._reader.refresh()
        noted = self._noted_bases
        for frame in frames:
            header = frame.header
            if not header.holds_records or header.filler or (noted and header.base_offset <= noted[-1]):
                continue
            noted.append(header.base_offset)
            self._noted_segments.append(bases[bisect.bisect_right(bases, header.base_offset) - 1])
            self._noted_positions.append(frame.position)

    def _noted_frame(self, offset: int) -> Frame | None:
        at = bisect.bisect_right(self._noted_bases, offset) - 1
        if at < 0:
            return None
        return self._reader.read_noted(offset, self._noted_segments[at], self._noted_positions[at])

    def _add(self, latest: dict[bytes, int], stored: StoredBatch) -> None:
        batch = stored.batch
        if "key" not in batch.schema.names:
            return  # keyless records (written before the topic was compacted): no key to look up
        key_column = batch.column("key")
        keys = key_column.to_pylist()
        offsets = stored.row_offsets().tolist()
        dead = tombstones(batch, self.typed) if _may_hold_tombstones(batch, self.typed) else None
        if (dead is None or not dead.any()) and not key_column.null_count:
            latest.update(zip(keys, offsets, strict=True))
        else:  # tombstones, or keyless rows (written before the topic was compacted)
            deletes = dead.tolist() if dead is not None else [False] * len(keys)
            for key, offset, deleted in zip(keys, offsets, deletes, strict=True):
                if key is None:
                    continue
                if deleted:
                    latest.pop(key, None)
                else:
                    latest[key] = offset
        if len(latest) > self.max_keys:
            raise ResourceExhaustedError(
                f"{self.topic}-{self.partition} holds more than {self.max_keys} keys, the key index's limit "
                "(max_keys); raise it if this process has the memory (about 150 bytes a key), or add partitions")

    # -- reading --------------------------------------------------------------------------

    def record(self, offset: int) -> StoredBatch | None:
        """The one record at ``offset`` (a one-row batch), or None when the log no longer holds
        one there (the cleaner removed it for a newer one, or retention deleted it)."""
        self._follow_files()
        frame = self._cached_frame(offset)
        if frame is None:
            noted = self._noted_frame(offset)
            try:
                frames = [noted] if noted is not None else self._reader.read(offset, 1, end_offset=offset + 1)
            except OffsetOutOfRangeError:
                return None
            if not frames:
                self._reader.refresh()
                if offset < self._reader.log_start_offset():
                    return None
                raise OffsetOutOfRangeError(f"{self.topic}-{self.partition} has no data at offset {offset}, "
                                            "which its key index holds below the LSO")
            header = frames[0].header
            if not header.holds_records or header.filler or not header.base_offset <= offset < header.next_offset:
                return None  # a filler (cleaned away), or a marker
            frame = decode_frame(self._codec, frames[0])
            self._cache_frame(header.base_offset, frame, header.payload_size)
        stored = frame.slice_from(offset).until(offset + 1)
        if stored.batch.num_rows != 1 or stored.offset_of(0) != offset:
            return None  # a sparse frame without that offset (cleaned away)
        return stored

    def _cached_frame(self, offset: int) -> StoredBatch | None:
        at = bisect.bisect_right(self._frame_bases, offset) - 1
        if at < 0:
            return None
        base = self._frame_bases[at]
        frame = self._frames[base][0]
        if offset >= frame.next_offset:
            return None
        self._frames.move_to_end(base)
        return frame

    def _cache_frame(self, base: int, frame: StoredBatch, size: int) -> None:
        """Keep ``frame`` (``size``: its stored payload bytes, what the cache counts)."""
        if size > self.frame_cache_bytes:
            return
        while self._frame_bytes + size > self.frame_cache_bytes:
            old, (_, dropped_size) = self._frames.popitem(last=False)
            self._frame_bases.pop(bisect.bisect_left(self._frame_bases, old))
            self._frame_bytes -= dropped_size
        self._frames[base] = (frame, size)
        bisect.insort(self._frame_bases, base)
        self._frame_bytes += size

    def close(self) -> None:
        try:
            self._reader.close()
        finally:
            self._handle.close()


def _may_hold_tombstones(batch: pa.RecordBatch, typed: bool) -> bool:
    """Whether any row may be a tombstone (null value; typed: every value column null), from
    the columns' null counts alone: most batches hold none, and then no row is looked at."""
    if not typed:
        return "value" in batch.schema.names and batch.column("value").null_count > 0
    values = [name for name in batch.schema.names if name not in RECORD_COLUMNS]
    return all(batch.column(name).null_count > 0 for name in values)


def _leader_dir(handle: Partition) -> str:
    return handle.leader_dir

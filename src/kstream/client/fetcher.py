"""Fetching for a consumer: rounds over its partitions' logs.

A round reads, for each assigned partition with nothing buffered, frames
from its fetch offset (up to ``max.partition.fetch.bytes``;
``fetch.max.bytes`` in all) and queues them as decoded batches.

Reading is mostly checksumming. A round reads every partition's frames with
their payloads unchecked, then checks them all at once, split over the CPU's
cores (kstream.log.storage.checksums), before decoding any of them.

Bad bytes are never skipped, and never hide behind other partitions' data: a
partition whose next frame is corrupt gets the :class:`CorruptBatchError` as
its pending :attr:`PartitionFetch.error` in the round that finds it (after
the good frames before it were handed out), and stops there: it is not read
again until the consumer seeks it. The other partitions go on.

A fetch offset out of the log's range — below the log start offset
(retention deleted the segment under it) or past the log end offset (not
the high watermark: a position between the two is valid and waits, as
Kafka's is) — is not an error of the round either: the partition gets it as
its pending :attr:`PartitionFetch.out_of_range` and is not read until the
consumer applies ``auto.offset.reset`` (:meth:`PartitionFetch.reset_to`).

A tiered topic's partition (``tier.delta.path``) has a :class:`~kstream.tiering.lake_reader.LakeFetch`:
a fetch offset below the log start that the lake holds (from its first offset up to its lake
end) is read from the Delta table instead, a data file at a time, and the fetch offset moves
on from the lake end into the log without a seam (the union read, docs/TIERING.md). Only an
offset in neither is out of range.
"""

from __future__ import annotations

from collections import deque
from itertools import islice

import pyarrow as pa

from kstream.errors import CorruptBatchError, KStreamError, OffsetOutOfRangeError
from kstream.log.cluster.metadata import DataVersion
from kstream.log.cluster.partition import Partition
from kstream.log.storage.checksums import payloads_good
from kstream.log.storage.log_reader import LogReader
from kstream.log.storage.output import OutputBuilder, StoredBatch
from kstream.log.storage.records import PayloadCodec
from kstream.log.storage.segment import Frame
from kstream.log.transactions.isolation import READ_UNCOMMITTED, Isolation
from kstream.log.visible_reads import next_offset, visible_batches
from kstream.tiering.lake_reader import LakeFetch


class RecordsLag:
    """The Java consumer's records-lag metrics of one partition: high watermark (or LSO) minus
    the fetch position after each fetch that returned data."""

    __slots__ = ("count", "current", "maximum", "total")

    def __init__(self) -> None:
        self.current = self.maximum = self.total = self.count = 0

    def record(self, lag: int) -> None:
        self.current = lag
        self.maximum = max(self.maximum, lag)
        self.total += lag
        self.count += 1

    def metrics(self) -> dict[str, float]:
        return {"records-lag": self.current, "records-lag-max": self.maximum,
                "records-lag-avg": self.total / self.count if self.count else 0.0}


class PartitionFetch:
    """One assigned partition: its handle and reader, fetch offset and fetched-but-unreturned batches."""

    __slots__ = ("chunks", "eof_reported", "error", "fetch_offset", "fetched_end", "handle", "isolation", "lag",
                 "lake", "out_of_range", "output", "partition", "reader", "stopped", "topic", "typed")

    def __init__(self, topic: str, partition: int, handle: Partition, reader: LogReader, schema: pa.Schema,
                 typed: bool, fetch_offset: int = 0, isolation: Isolation | None = None,
                 lake: LakeFetch | None = None):
        self.lake = lake  # a tiered topic's Delta table: positions below the log start it holds
        self.isolation = isolation or Isolation(READ_UNCOMMITTED, None, topic, partition)
        self.topic = topic
        self.partition = partition
        self.handle = handle
        self.reader = reader
        self.fetch_offset = fetch_offset
        self.output = OutputBuilder(topic, partition, schema)
        self.typed = typed
        self.chunks: deque[StoredBatch] = deque()
        self.eof_reported = False
        self.lag = RecordsLag()
        self.error: CorruptBatchError | None = None  # found, not yet reported
        self.stopped = False  # at a corrupt frame, or out of range with no reset: not read until seek()
        self.out_of_range: OffsetOutOfRangeError | None = None  # found, auto.offset.reset not yet applied
        self.fetched_end: int | None = None  # the end the last fetch read up to (cached watermark)

    def stop_at(self, error: CorruptBatchError) -> None:
        """The next frame is corrupt: report it once, read no further."""
        self.error = error
        self.stopped = True

    def restart(self) -> None:
        """After a seek: read (and check) again."""
        self.error = None
        self.out_of_range = None
        self.stopped = False

    def check_past_end(self, end: int) -> bool:
        """Called when the fetch offset is past ``end`` (what may be read): True, with
        :attr:`out_of_range` set, if it is past the log end offset too."""
        log_end = self.reader.log_end_offset()
        if self.fetch_offset <= log_end:
            return False
        self.out_of_range = OffsetOutOfRangeError(
            f"offset {self.fetch_offset} is past the log end offset {log_end} of "
            f"{self.topic}-{self.partition}")
        return True

    def earliest_offset(self) -> int:
        """The first offset this consumer can read: the log start, or the lake's first offset
        below it (a tiered topic whose lake holds records)."""
        log_start = self.reader.log_start_offset()
        return log_start if self.lake is None else self.lake.start_offset(log_start)

    def read_lake(self, max_bytes: int) -> int:
        """Queue the lake's records from the fetch offset (which the lake holds); returns the
        bytes read."""
        assert self.lake is not None
        chunks, next_offset = self.lake.read(self.fetch_offset, max_bytes)
        self.chunks.extend(chunks)
        self.fetch_offset = next_offset
        self.eof_reported = False
        return sum(chunk.batch.nbytes for chunk in chunks)

    def reset_to(self, offset: int) -> None:
        """Move the fetch position (``auto.offset.reset`` after :attr:`out_of_range`)."""
        self.chunks.clear()
        self.restart()
        self.eof_reported = False
        self.fetch_offset = offset

    def high_watermark(self) -> int:
        """The HW (0 until a writer has published one), on every fetch round: the handle's
        (:meth:`Partition.high_watermark`, which rebuilds a HW a power cut took, the rule
        :func:`kstream.log.partition_bounds.bounds` applies; ~3 us, where a whole
        :func:`~kstream.log.partition_bounds.bounds` reads the log's ends too, ~300 us).
        The figures a consumer reports (watermarks, statistics) are bounds()'s."""
        return self.handle.high_watermark() or 0

    def visible_end(self, version: DataVersion | None = None) -> int:
        """How far this consumer may read: the HW, or the LSO under read_committed."""
        return self.isolation.end_offset(self.high_watermark(), version)

    def buffered(self) -> int:
        return sum(chunk.batch.num_rows for chunk in self.chunks)

    def follow_leader(self, check_crcs: bool) -> None:
        """After a metadata change: read from the partition's current leader."""
        if self.handle.refresh_metadata():
            self.reader.close()
            self.reader = self.handle.reader(check_crcs=check_crcs)

    def close(self) -> None:
        self.reader.close()
        self.handle.close()


class Fetcher:
    """Runs fetch rounds for one consumer. Not thread-safe."""

    def __init__(self, fetch_max_bytes: int, partition_max_bytes: int):
        self.fetch_max_bytes = fetch_max_bytes
        self.partition_max_bytes = partition_max_bytes
        self._codec = PayloadCodec()

    def fetch(self, partitions: list[PartitionFetch], version: DataVersion | None = None) -> bool:
        """Run one round; True if anything was read or a partition has an error to report
        (or an out-of-range position to reset).
        ``version``: the metadata's data version read for this round (transaction lookups
        are cached against it)."""
        budget = self.fetch_max_bytes
        lake_read = False
        failure: KStreamError | None = None
        reads: list[tuple[PartitionFetch, int, list[Frame]]] = []
        for fetch in partitions:
            if budget <= 0:
                break
            if fetch.chunks or fetch.stopped or fetch.out_of_range is not None:
                continue
            try:
                end = fetch.visible_end(version)
                if fetch.fetch_offset > end and fetch.check_past_end(end):
                    continue
                frames = fetch.reader.read(fetch.fetch_offset, min(self.partition_max_bytes, budget),
                                           end_offset=end, verify=False)
            except OffsetOutOfRangeError as err:  # before the log start offset
                if fetch.lake is not None and fetch.lake.covers(fetch.fetch_offset):
                    fetch.fetched_end = end  # (the cached watermark, as a log fetch's)
                    budget -= fetch.read_lake(min(self.partition_max_bytes, budget))
                    lake_read = True  # (a read of gaps only moves the position: read again)
                    continue
                fetch.out_of_range = err
                continue
            except CorruptBatchError as err:
                fetch.stop_at(err)
                continue
            except KStreamError as err:
                failure = failure or err
                continue
            fetch.fetched_end = end
            budget -= sum(frame.header.frame_size for frame in frames)
            reads.append((fetch, end, frames))
        verdicts = iter(payloads_good([frame for fetch, _, frames in reads if fetch.reader.check_crcs
                                       for frame in frames]))
        got = False
        for fetch, end, frames in reads:
            if fetch.reader.check_crcs:
                try:
                    frames = fetch.reader.keep_good(frames, list(islice(verdicts, len(frames))))
                except CorruptBatchError as err:
                    fetch.stop_at(err)
                    continue
                except KStreamError as err:
                    failure = failure or err
                    continue
            got = self._queue(fetch, end, frames, version) or got
        if failure is not None and not got and not lake_read:
            raise failure
        return got or lake_read or any(fetch.error is not None or fetch.out_of_range is not None
                                       for fetch in partitions)

    def _queue(self, fetch: PartitionFetch, end: int, frames: list[Frame], version: DataVersion | None) -> bool:
        """Decode a partition's checked frames into its buffer; True if any record became visible."""
        if not frames:
            return False
        got = False
        fetch.isolation.prepare(fetch.fetch_offset, version)
        for stored in visible_batches(frames, fetch.isolation, fetch.fetch_offset, end, self._codec):
            fetch.chunks.append(stored)
            fetch.fetch_offset = stored.next_offset  # (kept as it goes: a decode error leaves it right)
            got = True
        fetch.fetch_offset = next_offset(frames, fetch.fetch_offset, end)  # past markers and aborted frames
        fetch.eof_reported = False
        fetch.lag.record(max(0, end - fetch.fetch_offset))
        return got

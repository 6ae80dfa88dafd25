"""Idempotent producers: a partition remembers each producer's last batches, so a retry is
recognised and written once.

Contract (Kafka's, per partition):

* A batch with a producer id and a base sequence (an idempotent producer's)
  is checked under the partition lock before it is appended
  (:meth:`ProducerState.check_locked`). Against the producer's last
  :data:`BATCHES_PER_PRODUCER` batches here (epoch, first and last sequence,
  offsets):

  - the same epoch and sequences as one of them: a **duplicate** (a retry of a
    batch that was written but not acknowledged). Nothing is written; the
    original's offsets come back as the result.
  - an older epoch than the producer's last batch: :class:`FencedError`.
  - a newer epoch: its first sequence must be 0.
  - the same epoch: its first sequence must follow the last batch's last one,
    else :class:`OutOfOrderSequenceError` (records in between were lost).

  Frames without a sequence (plain, transactional, control) are not checked.

* The state is not stored anywhere: the frame headers carry producer id,
  epoch and base sequence, so it is rebuilt from the log. Each process keeps
  its own copy per partition handle and brings it up to date under the lock
  before a check: frames other processes appended since it last looked are
  read (headers only, from the leader: the headers that follow the frame it last knew, in
  the same segment file, while only appends happened); after anything other than an append
  (the lock's generation moved: a roll, a truncation, a leadership or ISR
  change) or on first use, it is rebuilt from the last :data:`REBUILD_RECORDS`
  offsets of the leader's log. So it survives restarts and is shared by every
  process, and an append by the process that checked costs no I/O.

* Limits: a retry is recognised while its original is among the producer's
  last 5 batches on the partition (hence ``max.in.flight.requests.per.connection``
  <= 5 for exactly-once retries, as in Kafka) and within the last
  :data:`REBUILD_RECORDS` offsets when this process has to rebuild. A producer
  id not found there is new to the partition: its batch is accepted as is.
  At most :data:`MAX_PRODUCERS` producer ids are kept per partition (the least
  recently written forgotten first).
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Protocol

from kstream.errors import CorruptBatchError, FencedError, LogDirOfflineError, OutOfOrderSequenceError
from kstream.log.storage import format as fmt
from kstream.log.storage.frames import FrameWalk, pread_from
from kstream.log.storage.log_reader import LogReader
from kstream.log.storage.partition_log import AppendResult, EncodedBatch

log = logging.getLogger(__name__)

BATCHES_PER_PRODUCER = 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN
MAX_PRODUCERS = 10_000
REBUILD_RECORDS = 1 << 14  # about 0.3 s to rebuild when every frame holds one record
SEQUENCE_MASK = 0x7FFFFFFF  # sequences are i32 >= 0 and wrap to 0
_READ_BYTES = 8 << 20


class _Placement(Protocol):
    @property
    def leader(self) -> int: ...


class _Lock(Protocol):
    @property
    def generation(self) -> int: ...


class GuardedPartition(Protocol):
    """What the producer state reads of the partition it guards, under the partition's lock (a
    :class:`kstream.log.cluster.partition.Partition`, a layer above this one: named by shape only)."""

    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...

    @property
    def info(self) -> _Placement: ...

    @property
    def lock(self) -> _Lock: ...

    @property
    def leader_dir(self) -> str: ...

    def log_end_offset_locked(self) -> int: ...


@dataclass(frozen=True, slots=True)
class BatchEntry:
    """One batch an idempotent producer wrote to this partition."""

    epoch: int
    first_sequence: int
    last_sequence: int
    base_offset: int
    record_count: int


def last_sequence(first: int, record_count: int) -> int:
    return (first + record_count - 1) & SEQUENCE_MASK


class ProducerState:
    """The idempotent producers of one partition as this process knows them (see module)."""

    def __init__(self) -> None:
        self._producers: OrderedDict[int, deque[BatchEntry]] = OrderedDict()
        self._end = -1  # log end offset of the leader up to which the state is complete
        self._token: tuple[int, int] | None = None  # (lock generation, leader) when _end was read
        # Where the frame at _end starts in the leader's log, while known: (segment base, position).
        self._tail: tuple[int, int] | None = None

    # -- under the partition lock -------------------------------------------------------

    def check_locked(self, partition: GuardedPartition, batch: EncodedBatch) -> AppendResult | None:
        """The original's result when ``batch`` is a duplicate; None to append it. Raises
        OutOfOrderSequenceError / FencedError for a batch that may not be written."""
        if batch.producer_id == fmt.NO_PRODUCER_ID or batch.base_sequence == fmt.NO_SEQUENCE:
            return None
        self._catch_up_locked(partition)
        entries = self._producers.get(batch.producer_id)
        if not entries:
            return None
        epoch, first = batch.producer_epoch, batch.base_sequence
        last = last_sequence(first, batch.record_count)
        for entry in entries:
            if (entry.epoch, entry.first_sequence, entry.last_sequence) == (epoch, first, last):
                return AppendResult(entry.base_offset, -1, -1, -1)
        latest = entries[-1]
        where = f"{partition.topic}-{partition.partition}"
        if epoch < latest.epoch:
            raise FencedError(
                f"producer {batch.producer_id} wrote to {where} with epoch {epoch}, but epoch "
                f"{latest.epoch} has written since; this producer is fenced, nothing was written")
        expected = 0 if epoch > latest.epoch else (latest.last_sequence + 1) & SEQUENCE_MASK
        if first != expected:
            raise OutOfOrderSequenceError(
                f"producer {batch.producer_id} (epoch {epoch}) sent sequence {first} to {where}, "
                f"expected {expected}: batches in between were lost; nothing was written. "
                "Close the producer and send the records again with a new one")
        return None

    def appended_locked(self, partition: GuardedPartition, batch: EncodedBatch, result: AppendResult) -> None:
        """Record a batch just appended to the leader (the state now ends after it)."""
        if batch.producer_id == fmt.NO_PRODUCER_ID or batch.base_sequence == fmt.NO_SEQUENCE:
            return
        if result.base_offset != self._end:  # the append failed over, or someone else wrote
            self._token = None  # rebuild at the next check
            return
        self._add(batch.producer_id, BatchEntry(batch.producer_epoch, batch.base_sequence,
                                                last_sequence(batch.base_sequence, batch.record_count),
                                                result.base_offset, batch.record_count))
        self._end = result.base_offset + batch.record_count
        self._token = self._current_token(partition)
        self._tail = (result.segment_base_offset, result.end_position)

    # -- keeping up with the log -------------------------------------------------------

    @staticmethod
    def _current_token(partition: GuardedPartition) -> tuple[int, int]:
        return partition.lock.generation, partition.info.leader

    def _catch_up_locked(self, partition: GuardedPartition) -> None:
        # The log end, not the HW, says whether anyone wrote since: acks=all appends publish
        # the HW only after their fsync, outside the lock. The append that follows needs the
        # caught-up log anyway, so this costs no extra reads.
        try:
            end = partition.log_end_offset_locked()  # opens the leader's log (may bump the generation)
        except LogDirOfflineError:
            self._reset()  # the append fails over (or fails) on its own
            return
        token = self._current_token(partition)
        if token == self._token and self._end == end:
            return  # nothing happened since this process last appended
        if token == self._token and end > self._end and self._walk_headers_locked(partition, end):
            return
        self._tail = None
        if token != self._token or end < self._end:
            self._producers.clear()
            start = max(0, end - REBUILD_RECORDS)
        else:
            start = self._end
        reader = LogReader(partition.leader_dir, check_crcs=False)
        try:
            start = max(start, reader.log_start_offset())
            while start < end:
                frames = reader.read(start, _READ_BYTES, end_offset=end, verify=False)
                if not frames:
                    break
                for frame in frames:
                    self._apply(frame.header)
                start = frames[-1].header.next_offset
        except (CorruptBatchError, OSError) as err:
            # A bad frame in the tail: what is before it is known, what is after it is not.
            log.warning("producer state of %s-%s rebuilt only up to offset %d: %s",
                        partition.topic, partition.partition, start, err)
        finally:
            reader.close()
        self._end = end
        self._token = token

    def _walk_headers_locked(self, partition: GuardedPartition, end: int) -> bool:
        """Catch up from where this process's last look ended by reading the frame headers
        that follow it in the same segment file (only appends happened since: the lock's
        generation did not move, so no roll, cut or replaced file). True when that reached
        ``end``; False (nothing applied) when anything differs: the caller reads the log."""
        if self._tail is None:
            return False
        base, position = self._tail
        try:
            fd = os.open(os.path.join(partition.leader_dir, fmt.segment_file_name(base)), os.O_RDONLY)
        except OSError:
            return False
        try:
            walk = FrameWalk(pread_from(fd), os.fstat(fd).st_size, position, next_offset=self._end)
            headers = []
            reached, at = self._end, position
            for frame_position, header in walk:
                if header.base_offset >= end:
                    break
                headers.append(header)
                reached, at = header.next_offset, frame_position + header.frame_size
        except OSError:
            return False
        finally:
            os.close(fd)
        if reached != end:
            return False
        for header in headers:
            self._apply(header)
        self._end, self._tail = end, (base, at)
        return True

    def _apply(self, header: fmt.FrameHeader) -> None:
        if header.producer_id == fmt.NO_PRODUCER_ID or header.base_sequence == fmt.NO_SEQUENCE \
                or header.attributes & fmt.CONTROL:
            return
        self._add(header.producer_id, BatchEntry(
            header.producer_epoch, header.base_sequence,
            last_sequence(header.base_sequence, header.record_count), header.base_offset,
            header.record_count))

    def _add(self, producer_id: int, entry: BatchEntry) -> None:
        entries = self._producers.get(producer_id)
        if entries is None:
            entries = self._producers[producer_id] = deque(maxlen=BATCHES_PER_PRODUCER)
            while len(self._producers) > MAX_PRODUCERS:
                self._producers.popitem(last=False)
        else:
            self._producers.move_to_end(producer_id)
        entries.append(entry)

    def _reset(self) -> None:
        self._producers.clear()
        self._end = -1
        self._token = None
        self._tail = None

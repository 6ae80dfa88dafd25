"""Offset for a timestamp: the one rule every reader of the engine asks (Kafka's ListOffsets by time).

:func:`offset_for_timestamp` answers, for one partition, *the earliest offset whose
record a reader at this isolation level is handed and whose timestamp is at or after
the target*. Written out:

* the offset lies in [log start, end): end is the high watermark under
  ``read_uncommitted`` and the last stable offset under ``read_committed`` (as Kafka's
  ``Partition.fetchOffsetForTimestamp`` drops a result at or past its "last fetchable
  offset"); below the log start nothing is left to find (retention deleted it);
* control frames (COMMIT/ABORT markers) never answer: they hold an offset but no record
  a consumer gets. Kafka's ``FileRecords.searchForTimestamp`` does not skip them, so a
  broker can answer with a marker's offset; kstream answers with the next record a
  consumer would be handed instead (in a LogAppendTime topic a marker carries its append
  time, so this is not a corner: the marker is often the first frame at that time);
* under ``read_committed`` the records of aborted transactions do not answer either (the
  reader skips them); Kafka's search counts them and leaves the skipping to the fetch.
  Under ``read_uncommitted`` they are records like any other;
* a record's timestamp is its own (CreateTime) or its frame's (LogAppendTime); timestamps
  need not grow with offsets: the answer is the *first offset* at or after the time,
  not the first offset after which every record is;
* None when no such record exists (past the last one, or every later one hidden): the
  callers map it to Kafka's -1 / null / "latest".

Which frames a reader is handed is :class:`kstream.log.transactions.isolation.Isolation`'s
rule (the same object the fetcher and the Spark reader use); the index-assisted start of
the scan is :meth:`kstream.log.storage.log_reader.LogReader.offset_for_timestamp`. The
Java reader's ``io.kstream.spark.read.TimestampLookup`` follows the same rule, and both
pass the one table of cases in tests/log/timestamp_cases.py (the shared vectors carry it
to the JUnit test). Reads only; writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from kstream._model import IsolationLevel
from kstream.log.cluster.partition import Partition
from kstream.log.storage.log_reader import LogReader
from kstream.log.storage.output import decode_frame, record_timestamps
from kstream.log.storage.records import PayloadCodec
from kstream.log.transactions.isolation import READ_UNCOMMITTED, Isolation
from kstream.log.transactions.store import TransactionStore

SCAN_BYTES = 16 << 20  # frame bytes one step of the scan maps (headers are what it looks at)


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    """What a lookup found: the record's offset and its timestamp (ms)."""

    offset: int
    timestamp_ms: int


def offset_for_timestamp(partition: Partition, timestamp_ms: int,
                         isolation_level: str | IsolationLevel = READ_UNCOMMITTED,
                         store: TransactionStore | None = None, reader: LogReader | None = None
                         ) -> TimestampOffset | None:
    """The earliest offset of ``partition`` (its leader) whose record a reader at
    ``isolation_level`` is handed and whose timestamp is >= ``timestamp_ms``; None if none
    (the rule in the module docstring). ``isolation_level``: "read_committed" or
    "read_uncommitted" (or the admin's :class:`IsolationLevel`).

    ``store`` (:meth:`TransactionStore.for_cluster`) lets read_committed apply the outcomes
    already fixed in the metadata, as every reader does; without it the files alone say
    which transactions are open or aborted (as the Java reader reads them). ``reader``: an
    open reader of the leader's replica to use (left open); else one is opened and closed.
    Raises CorruptBatchError on a bad frame met on the way, as a fetch would.
    """
    if isinstance(isolation_level, IsolationLevel):
        isolation_level = isolation_level.name.lower()
    own = reader is None
    if reader is None:
        reader = partition.reader()
    try:
        high_watermark = partition.high_watermark() or 0
        isolation = Isolation(isolation_level, store, partition.topic, partition.partition, partition.leader_dir)
        end = isolation.end_offset(high_watermark)
        first = reader.offset_for_timestamp(timestamp_ms)  # the first frame reaching the time, any kind
        if first is None:
            return None
        offset = max(first, reader.log_start_offset())
        isolation.prepare(offset, high_watermark=high_watermark)
        return _scan(reader, isolation, offset, end, timestamp_ms)
    finally:
        if own:
            reader.close()


def max_timestamp_offset(reader: LogReader, end: int) -> TimestampOffset | None:
    """Kafka's ``MAX_TIMESTAMP`` (``list_offsets``, ``kafka-get-offsets --time -3``): the first
    record in [log start, ``end``) carrying the largest timestamp; None if there is none.
    Read uncommitted, and control frames never answer (the module's rule): in a LogAppendTime
    topic a COMMIT marker is appended after its data, so it would otherwise win. The scan
    reads frame headers only, then decodes the one frame that holds the answer."""
    best = None
    offset = reader.log_start_offset()
    while offset < end:
        frames = reader.read(offset, SCAN_BYTES, end_offset=end, verify=False)
        if not frames:
            break
        for frame in frames:
            header = frame.header
            if header.holds_records and (  # (not a marker, nor a cleaner's filler)
                    best is None or header.max_timestamp > best.max_timestamp):
                best = header
        offset = frames[-1].header.next_offset
    if best is None:
        return None
    checked = reader.read(best.base_offset, 1, end_offset=end)[0]  # its payload checksum too
    stored = decode_frame(PayloadCodec(), checked, frozenset({"timestamp"}))
    timestamps = record_timestamps(stored)
    index = int(timestamps.argmax())
    return TimestampOffset(stored.offset_of(index), int(timestamps[index]))


def _scan(reader: LogReader, isolation: Isolation, offset: int, end: int, timestamp_ms: int
          ) -> TimestampOffset | None:
    """Walk frame headers from ``offset`` below ``end``; decode the first visible frame that
    reaches the time and take its first record that does."""
    codec = PayloadCodec()
    while offset < end:
        frames = reader.read(offset, SCAN_BYTES, end_offset=end, verify=False)
        if not frames:
            return None
        for frame in frames:
            header = frame.header
            if header.max_timestamp < timestamp_ms or not isolation.visible(header) or header.filler:
                continue
            checked = reader.read(header.base_offset, 1, end_offset=end)[0]  # its payload checksum too
            stored = decode_frame(codec, checked, frozenset({"timestamp"}))
            timestamps = record_timestamps(stored)
            hits = (timestamps >= timestamp_ms).nonzero()[0]
            if len(hits):  # always, unless the header's max timestamp overstates its records
                found = int(hits[0])
                return TimestampOffset(stored.offset_of(found), int(timestamps[found]))
        offset = frames[-1].header.next_offset
    return None

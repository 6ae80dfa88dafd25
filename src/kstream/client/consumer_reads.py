"""A Consumer's read loop: the next chunk of records to hand out, fetching and waiting as needed.

:class:`ReadLoop` turns round-robin over the assignment
(:class:`~kstream.client.consumer_assignment.Assignment`) and returns the
first unpaused partition with buffered records; with none, it runs a fetch
round (:class:`~kstream.client.fetcher.Fetcher`), and with nothing read,
waits on the directory watch (inotify) until a writer appends, the high
watermark moves, or the deadline passes. Each turn first lets the consumer
group run what is due (auto commit, a rebalance step), unless the Consumer
holds the group still (inside one ``consume()``).

A partition's pending events come out in the round that finds them, once
each: a corrupt frame as a Message whose ``error()`` is ``_BAD_MSG``, a
position out of the log's range after ``auto.offset.reset`` (``earliest`` /
``latest`` move it, with a warning; ``error`` gives an ``_AUTO_OFFSET_RESET``
Message, to ``error_cb`` too), and, with ``enable.partition.eof``, the end of
a partition. :meth:`ReadLoop.to_messages` turns one chunk into confluent
Messages for poll(). Not thread-safe: it lives in its Consumer's thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from itertools import repeat
from typing import Any

from kstream.client.consumer_assignment import Assignment
from kstream.client.consumer_group import GroupSession
from kstream.client.fetcher import Fetcher, PartitionFetch
from kstream.client.stats import ClientStats
from kstream.errors import ValueTooLargeError
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.metadata import DataVersion
from kstream.log.storage.change_notifier import ChangeNotifier
from kstream.log.storage.output import StoredBatch, to_python_records
from kstream.message import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    KafkaError,
    Message,
    MessageSource,
    make_message,
)

Chunk = tuple[PartitionFetch, StoredBatch]


class _FetchedSource(MessageSource):
    """What the records of one fetched batch share, with the epoch of the leader that wrote it."""

    __slots__ = ("leader_epoch",)

    def __init__(self, topic: str, partition: int, timestamp_type: int, leader_epoch: int | None):
        super().__init__(topic, partition, timestamp_type)
        self.leader_epoch = leader_epoch


class ReadLoop:
    """Finds the next chunk of one Consumer's records. See the module docstring.

    ``hold_group``: while True, no rebalance step runs (the Consumer sets it between the
    records of one consume()).
    """

    def __init__(self, cluster: Cluster, assignment: Assignment, notifier: ChangeNotifier,
                 options: Mapping[str, Any], logger: logging.Logger | logging.LoggerAdapter[Any],
                 group: GroupSession | None, stats: ClientStats | None):
        self._cluster = cluster
        self._assignment = assignment
        self._notifier = notifier
        self._fetcher = Fetcher(options["fetch.max.bytes"], options["max.partition.fetch.bytes"])
        self._metadata_version: DataVersion | None = None
        self._client_id = options["client.id"]
        self._reset = options["auto.offset.reset"]
        self._partition_eof = options["enable.partition.eof"]
        self._max_items = options["decode.max.items"]
        self._error_cb = options["error_cb"]
        self._log = logger
        self._group = group
        self._stats = stats
        self.hold_group = False

    def next_chunk(self, deadline: float | None, limit: int | None = None) -> Chunk | Message | None:
        """The next chunk to hand out (at most ``limit`` records; the rest stays buffered),
        an event Message, or None when the deadline (monotonic seconds; None: none) passed."""
        assigned = self._take_chunk_owner(deadline)
        if assigned is None or isinstance(assigned, Message):
            return assigned
        chunk = assigned.chunks.popleft()
        if limit is not None and chunk.batch.num_rows > limit:
            assigned.chunks.appendleft(chunk.rows_from(limit))
            chunk = chunk.head(limit)
        if self._stats is not None:
            self._stats.received(assigned.topic, assigned.partition, chunk.batch.num_rows, chunk.batch.nbytes)
        return assigned, chunk

    def _take_chunk_owner(self, deadline: float | None) -> PartitionFetch | Message | None:
        """A partition with buffered data (fetching, then waiting, as needed)."""
        assignment = self._assignment
        group = self._group
        while True:
            if group is not None and not self.hold_group:
                group.maintain()
            order = assignment.order
            if not order:
                if group is None or group.member_id is None:
                    if deadline is not None:
                        time.sleep(max(0.0, deadline - time.monotonic()))
                    return None
                now = time.monotonic()  # a member waiting for its assignment
                if deadline is not None and now >= deadline:
                    return None
                time.sleep(0.02 if deadline is None else min(0.02, deadline - now))
                continue
            paused = assignment.paused
            for _ in range(len(order)):
                key = order[assignment.next]
                assigned = assignment.partitions[key]
                assignment.next = (assignment.next + 1) % len(order)
                if paused and key in paused:
                    continue
                if assigned.chunks:
                    return assigned
                if assigned.error is not None:
                    return self._error_event(assigned)
                if assigned.out_of_range is not None:
                    event = self._reset_out_of_range(assigned)
                    if event is not None:
                        return event
            self._notifier.drain()
            if self._fetch():
                continue
            eof = self._eof_event()
            if eof is not None:
                return eof
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return None
            self._notifier.wait(self._notifier.max_sleep_s if deadline is None
                                else min(deadline - now, self._notifier.max_sleep_s))

    def _fetch(self) -> bool:
        """One fetch round over the assignment (see kstream.client.fetcher); True if anything was read."""
        version = self._cluster.metadata.data_version()
        if version != self._metadata_version:  # leaders may have moved (a log dir failed)
            self._metadata_version = version
            self._assignment.follow_leaders()
        assignment = self._assignment
        return self._fetcher.fetch([assignment.partitions[key] for key in assignment.order
                                    if key not in assignment.paused], version)

    def _error_event(self, assigned: PartitionFetch) -> Message:
        """The partition's corrupt frame as an error Message (reported once per detection, to
        error_cb too)."""
        error = assigned.error
        assert error is not None
        assigned.error = None
        kafka_error = KafkaError(KafkaError._BAD_MSG, str(error), error)
        self._log.error("consumer %s: %s", self._client_id, error)
        if self._error_cb is not None:
            self._error_cb(kafka_error)
        return make_message(assigned.topic, assigned.partition, assigned.fetch_offset, error=kafka_error)

    def _reset_out_of_range(self, assigned: PartitionFetch) -> Message | None:
        """Apply auto.offset.reset to a partition whose position is out of the log's range;
        with ``error``, the error event (reported once, to error_cb too; the partition then
        waits for a seek())."""
        error = assigned.out_of_range
        assert error is not None
        reset = self._reset
        if reset == "error":
            assigned.out_of_range = None
            assigned.stopped = True  # as librdkafka's fetch state NONE: until seek() or assign()
            kafka_error = KafkaError(KafkaError._AUTO_OFFSET_RESET,
                                     f"{error}; auto.offset.reset=error: seek() to a valid offset",
                                     exception=error)
            self._log.error("consumer %s: %s", self._client_id, kafka_error.str())
            if self._error_cb is not None:
                self._error_cb(kafka_error)
            return make_message(assigned.topic, assigned.partition, assigned.fetch_offset, error=kafka_error)
        offset = assigned.earliest_offset() if reset == "earliest" else assigned.visible_end()
        self._log.warning("consumer %s: %s; auto.offset.reset=%s moves %s-%d to offset %d",
                          self._client_id, error, reset, assigned.topic, assigned.partition, offset)
        assigned.reset_to(offset)
        return None

    def _eof_event(self) -> Message | None:
        if not self._partition_eof:
            return None
        assignment = self._assignment
        for key in assignment.order:
            assigned = assignment.partitions[key]
            if key in assignment.paused:
                continue
            if not assigned.eof_reported and not assigned.chunks and not assigned.stopped:
                assigned.eof_reported = True
                return make_message(assigned.topic, assigned.partition, assigned.fetch_offset,
                                    error=KafkaError(KafkaError._PARTITION_EOF, "end of partition"))
        return None

    def to_messages(self, assigned: PartitionFetch, chunk: StoredBatch) -> Iterator[Message]:
        """The chunk's records as Messages, in a list iterator (so a position can ask how many
        are left: ``length_hint``). A typed value too large for ``decode.max.items`` becomes an
        error Message for that record (as confluent's DeserializingConsumer on a value it cannot
        deserialize); the position goes on past it."""
        max_items = self._max_items
        keys, values, timestamps, headers, too_large = to_python_records(chunk, assigned.typed, max_items)
        n = chunk.batch.num_rows
        kind = TIMESTAMP_LOG_APPEND_TIME if chunk.log_append_time else TIMESTAMP_CREATE_TIME
        source = _FetchedSource(assigned.topic, assigned.partition, kind,
                                chunk.leader_epoch if chunk.leader_epoch >= 0 else None)
        messages = list(map(Message, zip(
            repeat(source, n), chunk.row_offsets().tolist() if chunk.offsets is not None
            else range(chunk.base_offset, chunk.base_offset + n), keys, values,
            headers, timestamps, strict=False)))
        for row, count in too_large.items():
            offset = chunk.offset_of(row)
            error = ValueTooLargeError(
                f"{assigned.topic}-{assigned.partition} offset {offset}: the typed value holds more than "
                f"{max_items} values (counted {count}; nested lists, maps, structs), more than "
                "decode.max.items lets poll() convert to Python; read it with poll_batch() (Arrow) or raise "
                "decode.max.items")
            self._log.error("consumer %s: %s", self._client_id, error)
            messages[row] = make_message(assigned.topic, assigned.partition, offset, messages[row].key(), None,
                                         messages[row].headers(), *messages[row].timestamp(),
                                         error=KafkaError(KafkaError._VALUE_DESERIALIZATION, str(error),
                                                          exception=error))
        return iter(messages)

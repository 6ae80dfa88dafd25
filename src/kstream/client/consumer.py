"""The Consumer: confluent-kafka's assign()/seek()/poll()/consume(), plus Arrow-native poll_batch().

A consumer reads the partitions assigned to it straight from the log files,
below each partition's high watermark, checking every batch's checksum
(``check.crcs``). Fetches take up to ``max.partition.fetch.bytes`` from a
partition and ``fetch.max.bytes`` in all, round-robin over the assignment.
With nothing to read, ``poll`` blocks on a directory watch (inotify) until a
writer appends or the timeout passes.

With ``group.id``, ``subscribe()`` joins the group (partitions come and go by
rebalance, see :mod:`kstream.client.consumer_group`), and ``commit()`` /
``committed()`` use the group's offsets in the cluster's Delta table.
``records_lag()`` reports, per partition, the high watermark minus the
position at the last fetch, as the Java client's records-lag metrics do.

A corrupt frame is reported on its partition, in the fetch round that finds
it, without stopping the others: ``poll()`` (and ``consume()``) return one
Message whose ``error()`` is a KafkaError ``_BAD_MSG`` (its ``exception`` the
:class:`CorruptBatchError` naming file, position and offset), and
``poll_batch()`` raises that CorruptBatchError. The partition stays at the bad
frame and is not read again until ``seek()`` (past it, or to it to check again).

A position out of the log's range (below the log start offset: retention
deleted it; past the log end offset: ``assign()`` far ahead, or a committed
offset beyond the log) takes ``auto.offset.reset``, as librdkafka does on
OFFSET_OUT_OF_RANGE: ``earliest``/``latest`` move it to the log start / the
end (a warning is logged), ``error`` reports it once, through ``error_cb``
and a Message whose ``error()`` is ``_AUTO_OFFSET_RESET`` (``poll_batch()``
raises the OffsetOutOfRangeError), and the partition is not read again until
``seek()``.

Not thread-safe, as confluent-kafka's Consumer is not for concurrent polls: use
a Consumer from one thread at a time (one per thread, or a lock of the
application's). Unlike the Producer (which several threads may share), its
fetch positions and group state take no lock.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from itertools import repeat
from operator import length_hint
from typing import Any

import pyarrow as pa

from kstream.client.callbacks import check_sasl_credentials
from kstream.client.cluster_metadata import ClusterMetadata, cluster_metadata
from kstream.client.config import client_options
from kstream.client.consumer_group import GroupSession, RebalanceCallback
from kstream.client.fetcher import Fetcher, PartitionFetch
from kstream.client.stats import ClientStats, PartitionView
from kstream.config.options import CONSUMER_OPTIONS
from kstream.errors import (
    ConfigError,
    KStreamError,
    NoOffsetError,
    OffsetOutOfRangeError,
    PartitionNotAssignedError,
    ValueTooLargeError,
)
from kstream.group_names import check_group_name
from kstream.groups.transactional_offsets import ConsumerGroupMetadata
from kstream.log import offset_for_timestamp
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.metadata import DataVersion
from kstream.log.cluster.partition import Partition
from kstream.log.partition_bounds import bounds
from kstream.log.storage.change_notifier import ChangeNotifier
from kstream.log.storage.output import (
    StoredBatch,
    output_schema,
    to_python_records,
)
from kstream.log.transactions.isolation import READ_COMMITTED, Isolation
from kstream.log.transactions.store import TransactionStore
from kstream.message import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    OFFSET_STORED,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    KafkaError,
    Message,
    MessageSource,
    TopicPartition,
    make_message,
    position_after,
)

log = logging.getLogger(__name__)
MAX_CONSUME_MESSAGES = 1_000_000


class _FetchedSource(MessageSource):
    """What the records of one fetched batch share, with the epoch of the leader that wrote it."""

    __slots__ = ("leader_epoch",)

    def __init__(self, topic: str, partition: int, timestamp_type: int, leader_epoch: int | None):
        super().__init__(topic, partition, timestamp_type)
        self.leader_epoch = leader_epoch


class Consumer:
    """Reads assigned partitions of a cluster. See the module docstring.

    Besides confluent-kafka's calls: store_offsets() with enable.auto.offset.store, pause() /
    resume(), incremental_assign() / incremental_unassign(), list_topics(); stats_cb, error_cb
    and logger in the config; any call after close() raises RuntimeError("Consumer closed"),
    as does any call on a subclass's instance whose ``__init__`` never called this one
    (the class-level ``_closed``: nothing was opened).
    """

    # An instance whose __init__ never ran reads these (poll()'s fast path) and then fails
    # in _check_open(); __init__ replaces them.
    _closed = True
    _stats: ClientStats | None = None
    _messages: Iterator[Message] = iter(())

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any):
        if config is None and not kwargs:
            raise TypeError("expected configuration dict (Consumer({}) uses $KSTREAM_CLUSTER or ./data)")
        options, broker = client_options(CONSUMER_OPTIONS, config, kwargs, "a Consumer")
        on_commit = options["on_commit"]
        if options["group.id"] is not None:
            check_group_name(options["group.id"], "option 'group.id'")
        self._cluster = Cluster.open(options.get("cluster"), broker)  # never creates one
        self._options = options
        self._metadata_version: DataVersion | None = None
        self._transaction_store: TransactionStore | None = None
        self._fetcher = Fetcher(options["fetch.max.bytes"], options["max.partition.fetch.bytes"])
        self._assigned: dict[tuple[str, int], PartitionFetch] = {}
        self._order: list[tuple[str, int]] = []
        self._next = 0
        self._notifier = ChangeNotifier(max_sleep_s=options["fetch.wait.max.ms"] / 1000.0)
        # The messages poll() hands out come from one chunk at a time.
        self._messages: Iterator[Message] = iter(())
        self._messages_owner: PartitionFetch | None = None
        self._messages_chunk: StoredBatch | None = None
        self._closed = False
        self._log = options["logger"] or log
        self._error_cb = options["error_cb"]
        self._oauth = options["oauth"]
        self._auto_store = options["enable.auto.offset.store"]
        self._stored: dict[tuple[str, int], TopicPartition] = {}  # store_offsets() (auto store off)
        self._paused: set[tuple[str, int]] = set()
        self._stats = (ClientStats("consumer", options["client.id"], options["statistics.interval.ms"],
                                   options["stats_cb"])
                       if options["stats_cb"] is not None and options["statistics.interval.ms"] > 0 else None)
        self._group = (GroupSession(self, options, on_commit, self._log)
                       if options["group.id"] is not None else None)
        self._hold_group = False

    @property
    def cluster(self) -> Cluster:
        return self._cluster

    # -- consumer groups ----------------------------------------------------------------

    @property
    def config(self) -> dict[str, str]:
        """The effective configuration, as confluent-kafka's read-only ``config``: a new dict
        of strings (defaults included, callbacks left out; see client_config.config_dump)."""
        return dict(self._options["config"])

    def _session(self, call: str) -> GroupSession:
        self._check_open()
        if self._group is None:
            raise ConfigError(f"{call} needs a consumer group: set group.id in the Consumer's config")
        return self._group

    def subscribe(self, topics: list[str], on_assign: RebalanceCallback | None = None,
                  on_revoke: RebalanceCallback | None = None, on_lost: RebalanceCallback | None = None
                  ) -> None:
        """Join ``group.id`` for ``topics`` (a name starting with '^' is a regex); partitions are
        assigned by rebalance, on a later poll()."""
        self._check_open()
        self._drop_assignment()
        self._session("subscribe()").subscribe(topics, on_assign, on_revoke, on_lost)

    def unsubscribe(self) -> None:
        """Leave the group (committing first with enable.auto.commit)."""
        self._check_open()
        if self._group is not None:
            self._group.unsubscribe()

    def memberid(self) -> str | None:
        """This member's id in its group (None before it joined, or without group.id)."""
        self._check_open()
        return self._group.member_id if self._group else None

    def commit(self, message: Message | None = None, offsets: list[TopicPartition] | None = None,
               asynchronous: bool = True) -> list[TopicPartition] | None:
        """Commit ``message``'s offset + 1, or ``offsets``, or every assigned position. Synchronous:
        returns the committed partitions (FencedError if the group moved on); asynchronous: the
        result goes to the ``on_commit(err, partitions)`` callback from a later poll().
        With nothing to commit (no assignment, or nothing stored with enable.auto.offset.store
        false) the commit fails with NoOffsetError (``_NO_OFFSET``), raised or given to on_commit."""
        self._check_open()
        session = self._session("commit()")
        if message is not None:
            partitions = [position_after(message)]
        elif offsets is not None:
            partitions = list(offsets)
        else:
            partitions = self.offsets_to_commit()
        if not partitions:
            error = NoOffsetError("nothing to commit: no partition is assigned"
                                  + ("" if self._auto_store else " with an offset stored by store_offsets()"))
            if not asynchronous:
                raise error
            session.report_commit(error, [])
            return None
        return session.commit(partitions, asynchronous)

    def offsets_to_commit(self) -> list[TopicPartition]:
        """What commit() without arguments and auto commit commit: every assigned position, or,
        with enable.auto.offset.store false, the offsets store_offsets() stored."""
        if self._auto_store:  # a partition without a position (OFFSET_INVALID) has nothing to commit
            return [tp for tp in self.position(self.assignment()) if tp.offset >= 0]
        return [self._stored[key] for key in self._order if key in self._stored]

    def store_offsets(self, message: Message | None = None, offsets: list[TopicPartition] | None = None
                      ) -> None:
        """Store ``message``'s offset + 1, or each of ``offsets``, as the offset the next
        commit() (or auto commit) commits for its partition. The partitions must be assigned
        (PartitionNotAssignedError, ``_UNKNOWN_PARTITION``, otherwise)."""
        self._check_open()
        if (message is None) == (offsets is None):
            raise TypeError("store_offsets() takes either message or offsets")
        if message is not None:
            partitions = [position_after(message)]
        else:
            assert offsets is not None
            partitions = list(offsets)
        for tp in partitions:
            if (tp.topic, tp.partition) not in self._assigned:
                raise PartitionNotAssignedError(
                    f"store_offsets(): {tp.topic}-{tp.partition} is not assigned to this consumer")
        for tp in partitions:
            self._stored[(tp.topic, tp.partition)] = TopicPartition(
                tp.topic, tp.partition, tp.offset, tp.metadata, tp.leader_epoch)

    def committed(self, partitions: list[TopicPartition], timeout: float | None = None
                  ) -> list[TopicPartition]:
        """The group's committed offset per partition (OFFSET_INVALID: none)."""
        self._check_open()
        return self._session("committed()").committed(partitions)

    def consumer_group_metadata(self) -> ConsumerGroupMetadata:
        """The group, member id and generation, for ``Producer.send_offsets_to_transaction``."""
        return self._session("consumer_group_metadata()").group_metadata()

    def records_lag(self) -> dict[TopicPartition, dict[str, float]]:
        """Per assigned partition: records-lag (HW minus position at the last fetch),
        records-lag-avg and records-lag-max over the fetches since it was assigned."""
        return {TopicPartition(t, p): self._assigned[(t, p)].lag.metrics() for t, p in self._order}

    # -- assignment ----------------------------------------------------------------

    def assign(self, partitions: list[TopicPartition]) -> None:
        """Replace the assignment. Offsets: >= 0 exact, OFFSET_BEGINNING, OFFSET_END, or
        anything else for ``auto.offset.reset``."""
        self._check_open()
        self._drop_assignment()
        self._add_partitions(partitions)

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        """Add partitions. Offsets as :meth:`assign`; with ``group.id``, OFFSET_STORED and
        OFFSET_INVALID start at the group's committed offset (as confluent-kafka does)."""
        self._add_partitions(partitions)

    # The public assignment calls may be overridden (upstream's own tests subclass Consumer
    # and change unassign()'s signature); kstream's internal calls use these private ones,
    # as confluent-kafka's C methods never call back into Python overrides.
    def _add_partitions(self, partitions: list[TopicPartition]) -> None:
        stored = self._stored_offsets(partitions)
        for tp in partitions:
            info = self._cluster.topic(tp.topic)
            handle = self._cluster.partition(info, tp.partition)
            schema = Cluster.topic_schema(info)
            isolation = Isolation(self._options["isolation.level"], self._transactions(), tp.topic, tp.partition,
                                  functools.partial(_leader_dir, handle))  # the leader's dir: it may move
            assigned = PartitionFetch(tp.topic, tp.partition, handle,
                                      handle.reader(check_crcs=self._options["check.crcs"]),
                                      output_schema(schema), schema is not None, isolation=isolation)
            assigned.fetch_offset = self._resolve(assigned, stored.get((tp.topic, tp.partition), tp.offset))
            key = (tp.topic, tp.partition)
            old = self._assigned.get(key)
            if old is None:
                self._order.append(key)
            else:  # assigned again: the new offset replaces the old position
                if self._messages_owner is old:
                    self._drop_messages()
                old.close()
            self._assigned[key] = assigned
            self._watch(handle)

    def _stored_offsets(self, partitions: list[TopicPartition]) -> dict[tuple[str, int], int]:
        wanted = [tp for tp in partitions if tp.offset in (OFFSET_STORED, OFFSET_INVALID)]
        if self._group is None or not wanted:
            return {}
        return {(tp.topic, tp.partition): tp.offset for tp in self._group.committed(wanted) if tp.offset >= 0}

    def _watch(self, handle: Partition) -> None:
        """Wake on new frames (the leader's dir) and on the high watermark moving (the lock
        file): an acks=all batch becomes readable only when its writer publishes the HW
        after the fsync, after the writes that woke the reader. The lock file is made when no
        writer made it yet (reading the HW does not make it; inotify needs it)."""
        self._notifier.watch(handle.leader_dir)
        self._notifier.watch(handle.lock.create_file())

    def _transactions(self) -> TransactionStore:
        if self._transaction_store is None:
            self._transaction_store = TransactionStore.for_cluster(self._cluster)
        return self._transaction_store

    def unassign(self) -> None:
        """Drop the whole assignment (stored offsets and pauses with it)."""
        self._check_open()
        self._drop_assignment()

    def _drop_assignment(self) -> None:
        for assigned in self._assigned.values():
            assigned.close()
        self._assigned.clear()
        self._order.clear()
        self._stored.clear()
        self._paused.clear()
        self._next = 0
        self._drop_messages()

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        """Remove ``partitions`` from the assignment; the others keep their positions."""
        self._check_open()
        for tp in partitions:
            key = (tp.topic, tp.partition)
            assigned = self._assigned.pop(key, None)
            if assigned is None:
                continue
            if self._messages_owner is assigned:
                self._drop_messages()
            assigned.close()
            self._order.remove(key)
            self._stored.pop(key, None)
            self._paused.discard(key)
        self._next = 0

    def assignment(self) -> list[TopicPartition]:
        """The assigned partitions, in assignment order (offsets unset)."""
        self._check_open()
        return [TopicPartition(t, p) for t, p in self._order]

    def pause(self, partitions: list[TopicPartition]) -> None:
        """Stop returning records of these assigned partitions (poll, consume, poll_batch)
        until :meth:`resume`; their positions stay where they are."""
        self._check_open()
        for tp in partitions:
            assigned = self._get(tp)
            if self._messages_owner is assigned:
                self._put_back_messages()
            self._paused.add((tp.topic, tp.partition))

    def resume(self, partitions: list[TopicPartition]) -> None:
        """Return records of paused partitions again, from their positions."""
        self._check_open()
        for tp in partitions:
            self._get(tp)
            self._paused.discard((tp.topic, tp.partition))

    def set_sasl_credentials(self, username: str, password: str) -> None:
        """Accepted and ignored: an embedded log has no broker to authenticate to."""
        self._check_open()
        check_sasl_credentials(username, password)

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        """confluent-kafka's ClusterMetadata: log dirs as brokers, the cluster's topics (or
        ``topic`` alone; a missing one has error UNKNOWN_TOPIC_OR_PART)."""
        if self._closed:  # confluent's wording: list_topics belongs to its shared client handle
            raise RuntimeError("Handle has been closed")
        return cluster_metadata(self._cluster, topic)

    def _resolve(self, assigned: PartitionFetch, offset: int) -> int:
        if offset == OFFSET_BEGINNING:
            return assigned.reader.log_start_offset()
        if offset == OFFSET_END:
            return assigned.visible_end()
        if offset >= 0:
            return offset
        reset = self._options["auto.offset.reset"]
        if reset == "error":
            # As librdkafka: no exception here, but the one-time _AUTO_OFFSET_RESET event
            # from poll() (see _reset_out_of_range); no position until seek().
            assigned.out_of_range = OffsetOutOfRangeError(
                f"no committed offset (no valid position) for {assigned.topic}-{assigned.partition}")
            return OFFSET_INVALID
        return assigned.reader.log_start_offset() if reset == "earliest" else assigned.visible_end()

    def seek(self, partition: TopicPartition) -> None:
        """Set the next offset to read for an assigned partition (also resumes one stopped
        at a corrupt frame)."""
        self._check_open()
        assigned = self._get(partition)
        if self._messages_owner is assigned:
            self._drop_messages()
        assigned.chunks.clear()
        assigned.restart()
        assigned.eof_reported = False
        assigned.fetch_offset = self._resolve(assigned, partition.offset)

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """The offset of the next record poll() returns, per partition (OFFSET_INVALID for a
        partition not assigned, as librdkafka has no position for it)."""
        self._check_open()
        result = []
        for tp in partitions:
            assigned = self._assigned.get((tp.topic, tp.partition))
            if assigned is None:
                result.append(TopicPartition(tp.topic, tp.partition, OFFSET_INVALID))
                continue
            position = assigned.fetch_offset - assigned.buffered()
            if self._messages_owner is assigned:
                position -= length_hint(self._messages)
            result.append(TopicPartition(tp.topic, tp.partition, position))
        return result

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float | None = None,
                              cached: bool = False) -> tuple[int, int]:
        """(low, high): log start offset and high watermark. ``cached``: the values as of this
        consumer's last fetch of an assigned partition, (OFFSET_INVALID, OFFSET_INVALID) before
        any (librdkafka's cache is filled by fetch responses)."""
        self._check_open()
        if cached:
            assigned = self._assigned.get((partition.topic, partition.partition))
            if assigned is None or assigned.fetched_end is None:
                return OFFSET_INVALID, OFFSET_INVALID
            return assigned.reader.log_start_offset(), assigned.fetched_end
        with self._fetch_for(partition) as fetch:
            found = bounds(self._cluster, fetch.topic, fetch.partition, handle=fetch.handle,
                           store=fetch.isolation.store)
            return found.log_start_offset, found.high_watermark

    def offsets_for_times(self, partitions: list[TopicPartition], timeout: float | None = None
                          ) -> list[TopicPartition]:
        """Per partition, the earliest offset whose timestamp is >= tp.offset (ms) among the
        records this consumer would be handed (isolation.level); -1 if none
        (:func:`kstream.log.offset_for_timestamp`)."""
        self._check_open()
        result = []
        level = self._options["isolation.level"]
        for tp in partitions:
            with self._fetch_for(tp) as fetch:
                store = self._transactions() if level == READ_COMMITTED else None
                found = offset_for_timestamp(fetch.handle, tp.offset, level, store, fetch.reader)
            result.append(TopicPartition(tp.topic, tp.partition, -1 if found is None else found.offset))
        return result

    @contextmanager
    def _fetch_for(self, tp: TopicPartition) -> Iterator[PartitionFetch]:
        """The assigned partition, or a temporary handle to an unassigned one."""
        assigned = self._assigned.get((tp.topic, tp.partition))
        if assigned is not None:
            yield assigned
            return
        info = self._cluster.topic(tp.topic)
        handle = self._cluster.partition(info, tp.partition)
        temporary = PartitionFetch(tp.topic, tp.partition, handle, handle.reader(), output_schema(None), False)
        try:
            yield temporary
        finally:
            temporary.close()

    def _get(self, tp: TopicPartition) -> PartitionFetch:
        assigned = self._assigned.get((tp.topic, tp.partition))
        if assigned is None:
            raise PartitionNotAssignedError(f"{tp.topic}-{tp.partition} is not assigned to this "
                                            "consumer; assign() it first")
        return assigned

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Consumer closed")

    # -- per-record API ----------------------------------------------------------------

    def poll(self, timeout: float | None = None) -> Message | None:
        """The next record, or None when none arrives within ``timeout`` seconds (None: forever).
        Serves stats_cb when due."""
        if self._stats is not None:
            self._serve_callbacks()
        try:
            return next(self._messages)
        except StopIteration:
            pass
        return self._poll_slow(timeout)

    def _poll_slow(self, timeout: float | None) -> Message | None:
        self._check_open()
        self._serve_callbacks()
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        while True:
            assigned = self._take_chunk_owner(deadline)
            if assigned is None:
                return None
            if isinstance(assigned, Message):
                return assigned
            chunk = assigned.chunks.popleft()
            if self._stats is not None:
                self._stats.received(assigned.topic, assigned.partition, chunk.batch.num_rows,
                                     chunk.batch.nbytes)
            self._messages_owner = assigned
            self._messages_chunk = chunk
            self._messages = self._to_messages(assigned, chunk)
            try:
                return next(self._messages)
            except StopIteration:
                continue

    def consume(self, num_messages: int = 1, timeout: float | None = -1) -> list[Message]:
        """Up to ``num_messages`` (0..1000000) records, waiting at most ``timeout`` seconds
        (-1 or None: forever)."""
        self._check_open()
        if isinstance(num_messages, bool) or not isinstance(num_messages, int) \
                or not 0 <= num_messages <= MAX_CONSUME_MESSAGES:
            raise ValueError("num_messages must be between 0 and 1000000 (1M)")
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        result: list[Message] = []
        try:
            while len(result) < num_messages:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                message = self.poll(remaining)
                if message is None:
                    break
                result.append(message)
                # No rebalance between records of one consume(): a revoke now would take
                # partitions away before the caller could commit what it was handed.
                self._hold_group = True
                if deadline is not None and time.monotonic() >= deadline and result:
                    break
        finally:
            self._hold_group = False
        return result

    def _to_messages(self, assigned: PartitionFetch, chunk: StoredBatch) -> Iterator[Message]:
        max_items = self._options["decode.max.items"]
        keys, values, timestamps, headers, too_large = to_python_records(chunk, assigned.typed, max_items)
        n = chunk.batch.num_rows
        kind = TIMESTAMP_LOG_APPEND_TIME if chunk.log_append_time else TIMESTAMP_CREATE_TIME
        source = _FetchedSource(assigned.topic, assigned.partition, kind,
                                chunk.leader_epoch if chunk.leader_epoch >= 0 else None)
        messages = list(map(Message, zip(
            repeat(source, n), range(chunk.base_offset, chunk.base_offset + n), keys, values,
            headers, timestamps, strict=False)))
        for row, count in too_large.items():
            # As confluent's DeserializingConsumer on a value it cannot deserialize: an error
            # for that record, and the position goes on past it (poll_batch() still reads it).
            offset = chunk.base_offset + row
            error = ValueTooLargeError(
                f"{assigned.topic}-{assigned.partition} offset {offset}: the typed value holds more than "
                f"{max_items} values (counted {count}; nested lists, maps, structs), more than "
                "decode.max.items lets poll() convert to Python; read it with poll_batch() (Arrow) or raise "
                "decode.max.items")
            self._log.error("consumer %s: %s", self._options["client.id"], error)
            messages[row] = make_message(assigned.topic, assigned.partition, offset, messages[row].key(), None,
                                         messages[row].headers(), *messages[row].timestamp(),
                                         error=KafkaError(KafkaError._VALUE_DESERIALIZATION, str(error),
                                                          exception=error))
        # A list iterator, so position() can ask how many are left (length_hint).
        return iter(messages)

    # -- Arrow API ---------------------------------------------------------------------------

    def poll_batch(self, max_records: int | None = None, timeout: float | None = None
                   ) -> pa.RecordBatch | None:
        """Up to ``max_records`` (default ``max.poll.records``) records of one partition as one
        Arrow batch with key/value (or typed columns), topic, partition, offset, timestamp,
        timestampType and headers; None when nothing arrives within ``timeout`` seconds."""
        self._check_open()
        self._serve_callbacks()
        limit = max_records or self._options["max.poll.records"]
        self._put_back_messages()
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        while True:
            assigned = self._take_chunk_owner(deadline)
            if assigned is None:
                return None
            if isinstance(assigned, Message):  # an EOF event has no batch form; an error raises
                error = assigned.error()
                if error is not None and error.exception is not None:
                    raise error.exception
                continue
            chunk = assigned.chunks.popleft()
            if chunk.batch.num_rows > limit:
                assigned.chunks.appendleft(chunk.slice_from(chunk.base_offset + limit))
                chunk = chunk.head(limit)
            if self._stats is not None:
                self._stats.received(assigned.topic, assigned.partition, chunk.batch.num_rows,
                                     chunk.batch.nbytes)
            return assigned.output.build(chunk)

    # -- fetching -------------------------------------------------------------------------------

    def _take_chunk_owner(self, deadline: float | None) -> PartitionFetch | Message | None:
        """A partition with buffered data (fetching, then waiting, as needed)."""
        while True:
            if self._group is not None and not self._hold_group:
                self._group.maintain()
            if not self._order:
                if self._group is None or self._group.member_id is None:
                    if deadline is not None:
                        time.sleep(max(0.0, deadline - time.monotonic()))
                    return None
                now = time.monotonic()  # a member waiting for its assignment
                if deadline is not None and now >= deadline:
                    return None
                time.sleep(0.02 if deadline is None else min(0.02, deadline - now))
                continue
            for _ in range(len(self._order)):
                key = self._order[self._next]
                assigned = self._assigned[key]
                self._next = (self._next + 1) % len(self._order)
                if self._paused and key in self._paused:
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
            for key in self._order:
                self._assigned[key].follow_leader(self._options["check.crcs"])
                self._watch(self._assigned[key].handle)
        return self._fetcher.fetch([self._assigned[key] for key in self._order
                                    if key not in self._paused], version)

    def _error_event(self, assigned: PartitionFetch) -> Message:
        """The partition's corrupt frame as an error Message (reported once per detection, to
        error_cb too)."""
        error = assigned.error
        assert error is not None
        assigned.error = None
        kafka_error = KafkaError(KafkaError._BAD_MSG, str(error), error)
        self._log.error("consumer %s: %s", self._options["client.id"], error)
        if self._error_cb is not None:
            self._error_cb(kafka_error)
        return make_message(assigned.topic, assigned.partition, assigned.fetch_offset, error=kafka_error)

    def _reset_out_of_range(self, assigned: PartitionFetch) -> Message | None:
        """Apply auto.offset.reset to a partition whose position is out of the log's range;
        with ``error``, the error event (reported once, to error_cb too; the partition then
        waits for a seek())."""
        error = assigned.out_of_range
        assert error is not None
        reset = self._options["auto.offset.reset"]
        if reset == "error":
            assigned.out_of_range = None
            assigned.stopped = True  # as librdkafka's fetch state NONE: until seek() or assign()
            kafka_error = KafkaError(KafkaError._AUTO_OFFSET_RESET,
                                     f"{error}; auto.offset.reset=error: seek() to a valid offset",
                                     exception=error)
            self._log.error("consumer %s: %s", self._options["client.id"], kafka_error.str())
            if self._error_cb is not None:
                self._error_cb(kafka_error)
            return make_message(assigned.topic, assigned.partition, assigned.fetch_offset, error=kafka_error)
        offset = assigned.reader.log_start_offset() if reset == "earliest" else assigned.visible_end()
        self._log.warning("consumer %s: %s; auto.offset.reset=%s moves %s-%d to offset %d",
                          self._options["client.id"], error, reset, assigned.topic, assigned.partition, offset)
        assigned.reset_to(offset)
        return None

    def _eof_event(self) -> Message | None:
        if not self._options["enable.partition.eof"]:
            return None
        for key in self._order:
            assigned = self._assigned[key]
            if key in self._paused:
                continue
            if not assigned.eof_reported and not assigned.chunks and not assigned.stopped:
                assigned.eof_reported = True
                return make_message(assigned.topic, assigned.partition, assigned.fetch_offset,
                                    error=KafkaError(KafkaError._PARTITION_EOF, "end of partition"))
        return None

    def _put_back_messages(self) -> None:
        """Return the records of the chunk poll() is handing out, not yet returned, to their
        partition's buffer (so a batch read or a pause does not lose them)."""
        if self._messages_owner is not None and self._messages_chunk is not None:
            owner, chunk = self._messages_owner, self._messages_chunk
            remaining = length_hint(self._messages)
            self._drop_messages()
            if remaining:
                owner.chunks.appendleft(chunk.slice_from(chunk.next_offset - remaining))

    def _serve_callbacks(self) -> None:
        """stats_cb when statistics.interval.ms has passed, oauth_cb when a token is due
        (poll, consume, poll_batch)."""
        if self._oauth is not None:
            self._oauth.refresh_if_due(self._log, self._error_cb)
        if self._stats is not None and self._stats.due():
            self._stats.maybe_emit(self._stats_document)

    def _stats_document(self) -> dict[str, Any]:
        assert self._stats is not None
        committed: dict[tuple[str, int], int] = {}
        if self._group is not None and self._order:
            try:
                # statistics never wait on another process's open transaction (poll() would block)
                committed = {(tp.topic, tp.partition): tp.offset
                             for tp in self._group.committed(self.assignment(), require_stable=False)}
            except KStreamError as err:
                self._log.warning("statistics: committed offsets of group %s unavailable: %s",
                                  self._options["group.id"], err)
        views = []
        positions = self.position(self.assignment())
        for tp in positions:
            key = (tp.topic, tp.partition)
            assigned = self._assigned[key]
            stored = self._stored.get(key)
            found = bounds(self._cluster, tp.topic, tp.partition, handle=assigned.handle,
                           store=assigned.isolation.store)
            views.append(PartitionView(
                tp.topic, tp.partition, leader=assigned.handle.info.leader,
                next_offset=assigned.fetch_offset, app_offset=tp.offset,
                stored_offset=tp.offset if self._auto_store else (stored.offset if stored else -1),
                committed_offset=max(-1, committed.get(key, -1)),
                lo_offset=found.log_start_offset, hi_offset=found.high_watermark,
                ls_offset=assigned.visible_end()))
        cgrp = None
        if self._group is not None:
            cgrp = {"state": "up" if self._group.member_id else "init",
                    "join_state": "steady" if self._order else "init", "stateage": 0,
                    "rebalance_age": 0, "rebalance_cnt": 0, "rebalance_reason": "",
                    "assignment_size": len(self._order)}
        return self._stats.document(views, cgrp=cgrp)

    def _drop_messages(self) -> None:
        self._messages = iter(())
        self._messages_owner = None
        self._messages_chunk = None

    def close(self) -> None:
        """Leave the group (committing first with enable.auto.commit) and release files.
        A second close() does nothing; any other call on a closed consumer raises
        RuntimeError("Consumer closed"), as confluent-kafka's does."""
        if self._closed:
            return
        if self._group is not None:
            self._group.close()
        self._drop_assignment()
        self._closed = True
        self._notifier.close()
        self._cluster.close()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _leader_dir(handle: Partition) -> str:
    return handle.leader_dir

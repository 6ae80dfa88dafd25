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

The Consumer is the confluent API surface and the owner of the records poll()
is handing out one by one (the one cursor every position counts); the work is
in its parts: the assignment and positions
(:mod:`kstream.client.consumer_assignment`), the read loop over the fetcher
(:mod:`kstream.client.consumer_reads`), the group
(:mod:`kstream.client.consumer_group`, which sees the Consumer only through a
:class:`~kstream.client.consumer_group.GroupMember`), and watermarks, offsets
for times, lag and statistics (:mod:`kstream.client.consumer_lookups`).
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Iterator, Mapping
from operator import length_hint
from typing import Any

import pyarrow as pa

from kstream.client.callbacks import check_sasl_credentials
from kstream.client.cluster_metadata import ClusterMetadata, cluster_metadata
from kstream.client.config import client_options
from kstream.client.consumer_assignment import Assignment
from kstream.client.consumer_group import GroupMember, GroupSession, RebalanceCallback
from kstream.client.consumer_lookups import PartitionLookups
from kstream.client.consumer_reads import ReadLoop
from kstream.client.fetcher import PartitionFetch
from kstream.client.stats import ClientStats
from kstream.config.options import CONSUMER_OPTIONS
from kstream.errors import ConfigError, NoOffsetError, PartitionNotAssignedError
from kstream.group_names import check_group_name
from kstream.groups.transactional_offsets import ConsumerGroupMetadata
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage.change_notifier import ChangeNotifier
from kstream.log.storage.output import StoredBatch
from kstream.message import OFFSET_INVALID, OFFSET_STORED, Message, TopicPartition, position_after

log = logging.getLogger(__name__)
MAX_CONSUME_MESSAGES = 1_000_000

def _release_files(assignment: Assignment, notifier: ChangeNotifier, cluster: Cluster) -> None:
    """What close() releases, for a consumer freed without it (the group is left to time out)."""
    assignment.clear()
    notifier.close()
    cluster.close()


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
        if options["group.id"] is not None:
            check_group_name(options["group.id"], "option 'group.id'")
        self._cluster = Cluster.open(options.get("cluster"), broker)  # never creates one
        self._options = options
        self._notifier = ChangeNotifier(max_sleep_s=options["fetch.wait.max.ms"] / 1000.0)
        self._assignment = Assignment(self._cluster, options, self._notifier)
        # The messages poll() hands out come from one chunk at a time.
        self._messages: Iterator[Message] = iter(())
        self._messages_owner: PartitionFetch | None = None
        self._messages_chunk: StoredBatch | None = None
        self._closed = False
        self._log = options["logger"] or log
        self._error_cb = options["error_cb"]
        self._oauth = options["oauth"]
        self._auto_store = options["enable.auto.offset.store"]
        self._stats = (ClientStats("consumer", options["client.id"], options["statistics.interval.ms"],
                                   options["stats_cb"])
                       if options["stats_cb"] is not None and options["statistics.interval.ms"] > 0 else None)
        # The group gets the private calls, not the public ones a subclass may override.
        member = GroupMember(self, self._assignment.topic_partitions, self._add_partitions,
                             self._drop_assignment, self._offsets_to_commit)
        self._group = (GroupSession(self._cluster, member, options, options["on_commit"], self._log)
                       if options["group.id"] is not None else None)
        self._reads = ReadLoop(self._cluster, self._assignment, self._notifier, options, self._log,
                               self._group, self._stats)
        self._lookups = PartitionLookups(self._cluster, self._assignment, options, self._log, self._group)
        # A consumer dropped without close() releases its files when it is freed (confluent-kafka
        # programs often never close): nothing else can be reading through them by then.
        weakref.finalize(self, _release_files, self._assignment, self._notifier, self._cluster).atexit = False

    @property
    def cluster(self) -> Cluster:
        return self._cluster

    @property
    def config(self) -> dict[str, str]:
        """The effective configuration, as confluent-kafka's read-only ``config``: a new dict
        of strings (defaults included, callbacks left out; see kstream.client.config.config_dump)."""
        return dict(self._options["config"])

    # -- consumer groups ----------------------------------------------------------------

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
            error = NoOffsetError(self._nothing_to_commit())
            if not asynchronous:
                raise error
            session.report_commit(error, [])
            return None
        return session.commit(partitions, asynchronous)

    def _nothing_to_commit(self) -> str:
        """Why commit() found nothing, and what to do."""
        if not self._assignment.order:
            return ("nothing to commit: no partition is assigned to this consumer yet (a group may still be "
                    "rebalancing, waiting for a member that was not closed to rejoin or leave): poll() until "
                    "records arrive, and commit those")
        if self._auto_store:
            return "nothing to commit: no assigned partition has a position yet; poll() or seek() first"
        return "nothing to commit: no offset stored by store_offsets() since the assignment"

    def offsets_to_commit(self) -> list[TopicPartition]:
        """What commit() without arguments and auto commit commit: every assigned position, or,
        with enable.auto.offset.store false, the offsets store_offsets() stored."""
        return self._offsets_to_commit()

    def _offsets_to_commit(self) -> list[TopicPartition]:
        if self._auto_store:  # a partition without a position (OFFSET_INVALID) has nothing to commit
            return [tp for tp in self._positions(self._assignment.topic_partitions()) if tp.offset >= 0]
        stored = self._assignment.stored
        return [stored[key] for key in self._assignment.order if key in stored]

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
            if (tp.topic, tp.partition) not in self._assignment.partitions:
                raise PartitionNotAssignedError(
                    f"store_offsets(): {tp.topic}-{tp.partition} is not assigned to this consumer")
        for tp in partitions:
            self._assignment.stored[(tp.topic, tp.partition)] = TopicPartition(
                tp.topic, tp.partition, tp.offset, tp.metadata, tp.leader_epoch)

    def committed(self, partitions: list[TopicPartition], timeout: float | None = None
                  ) -> list[TopicPartition]:
        """The group's committed offset per partition (OFFSET_INVALID: none)."""
        self._check_open()
        return self._session("committed()").committed(partitions)

    def consumer_group_metadata(self) -> ConsumerGroupMetadata:
        """The group, member id and generation, for ``Producer.send_offsets_to_transaction``."""
        return self._session("consumer_group_metadata()").group_metadata()

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
        wanted = [tp for tp in partitions if tp.offset in (OFFSET_STORED, OFFSET_INVALID)]
        committed = ({(tp.topic, tp.partition): tp.offset for tp in self._group.committed(wanted) if tp.offset >= 0}
                     if self._group is not None and wanted else {})
        for old in self._assignment.add(partitions, committed):
            if self._messages_owner is old:  # assigned again: the new offset replaces the old position
                self._drop_messages()

    def unassign(self) -> None:
        """Drop the whole assignment (stored offsets and pauses with it)."""
        self._check_open()
        self._drop_assignment()

    def _drop_assignment(self) -> None:
        self._assignment.clear()
        self._drop_messages()

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        """Remove ``partitions`` from the assignment; the others keep their positions."""
        self._check_open()
        for tp in partitions:
            removed = self._assignment.remove(tp)
            if removed is not None and self._messages_owner is removed:
                self._drop_messages()
        self._assignment.next = 0

    def assignment(self) -> list[TopicPartition]:
        """The assigned partitions, in assignment order (offsets unset)."""
        self._check_open()
        return self._assignment.topic_partitions()

    def pause(self, partitions: list[TopicPartition]) -> None:
        """Stop returning records of these assigned partitions (poll, consume, poll_batch)
        until :meth:`resume`; their positions stay where they are."""
        self._check_open()
        for tp in partitions:
            assigned = self._assignment.get(tp)
            if self._messages_owner is assigned:
                self._put_back_messages()
            self._assignment.paused.add((tp.topic, tp.partition))

    def resume(self, partitions: list[TopicPartition]) -> None:
        """Return records of paused partitions again, from their positions."""
        self._check_open()
        for tp in partitions:
            self._assignment.get(tp)
            self._assignment.paused.discard((tp.topic, tp.partition))

    def seek(self, partition: TopicPartition) -> None:
        """Set the next offset to read for an assigned partition (also resumes one stopped
        at a corrupt frame)."""
        self._check_open()
        assigned = self._assignment.get(partition)
        if self._messages_owner is assigned:
            self._drop_messages()
        self._assignment.seek(assigned, partition.offset)

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """The offset of the next record poll() returns, per partition (OFFSET_INVALID for a
        partition not assigned, as librdkafka has no position for it)."""
        self._check_open()
        return self._positions(partitions)

    def _positions(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        result = []
        for tp in partitions:
            assigned = self._assignment.partitions.get((tp.topic, tp.partition))
            if assigned is None:
                result.append(TopicPartition(tp.topic, tp.partition, OFFSET_INVALID))
                continue
            result.append(TopicPartition(tp.topic, tp.partition, self._next_record_offset(assigned)))
        return result

    def _next_record_offset(self, assigned: PartitionFetch) -> int:
        """Where the next record poll() hands out of ``assigned`` is (offsets may have gaps: a
        compacted topic's cleaned frames, transaction markers)."""
        if self._messages_owner is assigned and self._messages_chunk is not None:
            remaining = length_hint(self._messages)
            if remaining:
                chunk = self._messages_chunk
                return chunk.offset_of(chunk.batch.num_rows - remaining)
        if assigned.chunks:
            return assigned.chunks[0].base_offset
        return assigned.fetch_offset

    # -- lookups ----------------------------------------------------------------------

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

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float | None = None,
                              cached: bool = False) -> tuple[int, int]:
        """(low, high): log start offset and high watermark. ``cached``: the values as of this
        consumer's last fetch of an assigned partition, (OFFSET_INVALID, OFFSET_INVALID) before
        any (librdkafka's cache is filled by fetch responses)."""
        self._check_open()
        return self._lookups.watermarks(partition, cached)

    def offsets_for_times(self, partitions: list[TopicPartition], timeout: float | None = None
                          ) -> list[TopicPartition]:
        """Per partition, the earliest offset whose timestamp is >= tp.offset (ms) among the
        records this consumer would be handed (isolation.level); -1 if none
        (:func:`kstream.log.offset_for_timestamp`)."""
        self._check_open()
        return self._lookups.offsets_for_times(partitions)

    def records_lag(self) -> dict[TopicPartition, dict[str, float]]:
        """Per assigned partition: records-lag (HW minus position at the last fetch),
        records-lag-avg and records-lag-max over the fetches since it was assigned."""
        return self._lookups.records_lag()

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
            got = self._reads.next_chunk(deadline)
            if got is None or isinstance(got, Message):
                return got
            assigned, chunk = got
            self._messages_owner = assigned
            self._messages_chunk = chunk
            self._messages = self._reads.to_messages(assigned, chunk)
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
                self._reads.hold_group = True
                if deadline is not None and time.monotonic() >= deadline and result:
                    break
        finally:
            self._reads.hold_group = False
        return result

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
            got = self._reads.next_chunk(deadline, limit)
            if got is None:
                return None
            if isinstance(got, Message):  # an EOF event has no batch form; an error raises
                error = got.error()
                if error is not None and error.exception is not None:
                    raise error.exception
                continue
            assigned, chunk = got
            return assigned.output.build(chunk)

    # -- the records poll() is handing out ---------------------------------------------------

    def _put_back_messages(self) -> None:
        """Return the records of the chunk poll() is handing out, not yet returned, to their
        partition's buffer (so a batch read or a pause does not lose them)."""
        if self._messages_owner is not None and self._messages_chunk is not None:
            owner, chunk = self._messages_owner, self._messages_chunk
            remaining = length_hint(self._messages)
            self._drop_messages()
            if remaining:
                owner.chunks.appendleft(chunk.rows_from(chunk.batch.num_rows - remaining))

    def _drop_messages(self) -> None:
        self._messages = iter(())
        self._messages_owner = None
        self._messages_chunk = None

    def _serve_callbacks(self) -> None:
        """stats_cb when statistics.interval.ms has passed, oauth_cb when a token is due
        (poll, consume, poll_batch)."""
        if self._oauth is not None:
            self._oauth.refresh_if_due(self._log, self._error_cb)
        if self._stats is not None and self._stats.due():
            self._stats.maybe_emit(self._stats_document)

    def _stats_document(self) -> dict[str, Any]:
        assert self._stats is not None
        return self._lookups.statistics(self._stats, self._positions(self._assignment.topic_partitions()))

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

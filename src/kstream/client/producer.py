"""The Producer: confluent-kafka's produce()/poll()/flush(), plus Arrow-native produce_batch().

Records collect per partition in an open batch; a batch goes to the log when
it reaches ``batch.size`` bytes, when ``linger.ms`` has passed (noticed by the
next produce(), poll() or flush()), or on flush(). With ``acks=all`` a batch
whose linger.ms passed still waits while its partition's previous batch is
being fsynced (a second fsync could not finish first): records produced
meanwhile join it (group commit). Unkeyed records stick to one partition
until ``batch.size`` bytes went to it (KIP-794). Batches are written in the
calling thread; as with confluent-kafka, call poll() regularly and flush()
before exit. Delivery reports (``on_delivery(err, msg)``) are served by poll()
and flush(). With ``acks=all`` a record is reported delivered only after its
batch is fsynced on the partition's in-sync replicas (at least
``min.insync.replicas`` of them). Those fsyncs run on background threads
while produce() goes on, up to ``max.in.flight.requests.per.connection``
batches (a transactional producer waits for each); reports keep the order
of the batches.

With ``enable.idempotence`` (the default) every batch carries the producer's
id, epoch and a per-partition sequence; the id is taken from the cluster's
metadata at the first send (so creating a Producer writes nothing). A batch that fails with
NotEnoughReplicas or a failed log dir, written or not, is sent again with
the same sequence, up to ``retries`` times, ``retry.backoff.ms`` apart,
within ``delivery.timeout.ms``; the log recognises a batch it already has
(:mod:`kstream.log.storage.producer_state`) and the delivery report gives the
original offsets, so a retry never duplicates. A batch that still fails is
reported failed and the producer moves to a new epoch (its sequences restart).

Thread safety: as confluent-kafka's, one Producer may be shared by any number
of threads. One lock (``_lock``) covers its state: produce() holds it only
to append the record to the open batch (and to send a full one), every send,
flush() and transaction call hold it across the batches they write, so
sequence numbers and batch contents stay consistent. Delivery callbacks,
``error_cb`` and ``stats_cb`` run in the thread that calls poll()/flush(),
after the lock is released: a callback may call produce(). A transaction
holds whatever any thread produced before commit_transaction() took the lock.
close() while other threads produce: records produce() accepted before it are
written, later calls raise the closed error. Any number of producers in any
number of processes may write to the same partitions at once.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, cast, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kstream.client.callbacks import check_sasl_credentials
from kstream.client.cluster_metadata import ClusterMetadata, cluster_metadata
from kstream.client.config import open_client
from kstream.client.confluent_batch import produce_dicts
from kstream.client.partitioner import StickyPartitioner, partition_for_key, partitions_for_keys
from kstream.client.producer_transactions import ProducerTransactions
from kstream.client.stats import ClientStats, PartitionView
from kstream.client.typed_values import TypedValues
from kstream.config.options import PRODUCER_OPTIONS
from kstream.errors import (
    InvalidHeaderError,
    InvalidRecordError,
    KStreamError,
    LogDirOfflineError,
    NotEnoughReplicasError,
    PartitionNotFoundError,
    PartitionOfflineError,
    RecordTooLargeError,
    TopicExistsError,
    TopicNotFoundError,
)
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.metadata import TopicInfo
from kstream.log.cluster.partition import Partition
from kstream.log.storage import format as fmt
from kstream.log.storage.partition_log import EncodedBatch
from kstream.log.storage.records import (
    HEADER_TYPE,
    Payload,
    PayloadCodec,
    batch_from_records,
    timestamp_range,
    to_stored_batch,
)
from kstream.log.storage.thread_pool import LazyThreadPool
from kstream.message import TIMESTAMP_CREATE_TIME, KafkaError, Message, MessageSource, TopicPartition

_time = time.time
DeliveryCallback = Callable[[KafkaError | None, Any], None]
_RECORD_OVERHEAD_BYTES = 16  # offsets and timestamp per record in the Arrow batch
_SYNC_THREADS = 4  # a producer's background acks=all fsyncs (replicas x batches in flight share them)
_RETRIABLE = (NotEnoughReplicasError, LogDirOfflineError)


def _retriable(error: BaseException) -> bool:
    """Whether resending the same batch may succeed: not when the partition is offline (its
    last in-sync replica's log dir must be brought back by an operator first)."""
    return isinstance(error, _RETRIABLE) and not isinstance(error, PartitionOfflineError)
_MAX_EPOCH = 0x7FFF  # producer_epoch is an i16 in the frame header
# librdkafka's codes for records purge() dropped (kstream.error names them; the fallbacks keep
# this module working against a KafkaError without them).
_PURGE_QUEUE = getattr(KafkaError, "_PURGE_QUEUE", -152)
_PURGE_INFLIGHT = getattr(KafkaError, "_PURGE_INFLIGHT", -151)
log = logging.getLogger(__name__)


# A piece of a stored batch that fits one frame, with its payload when cutting had to encode it.
Piece = tuple[pa.RecordBatch, Payload | None]


@dataclass(frozen=True, slots=True)
class BatchResult:
    """Where one produced batch landed."""

    topic: str
    partition: int
    base_offset: int
    record_count: int


class _OpenBatch:
    """Records waiting for one partition's next batch.

    Values and timestamps (float seconds) are kept per record; keys and
    headers only from the first record that has one, and delivery callbacks
    by record index (the common unkeyed path appends two items per record).
    """

    __slots__ = ("callbacks", "deadline", "headers", "keys", "size", "timestamps", "values")

    def __init__(self, deadline: float):
        self.values: list[Any] = []
        self.timestamps: list[float] = []
        self.keys: list[bytes | None] | None = None
        self.headers: list[Any] | None = None
        self.callbacks: dict[int, DeliveryCallback] | None = None  # record index -> callback
        self.size = 0
        self.deadline = deadline

    def add_extras(self, key: bytes | None, headers: Any) -> None:
        """Record the key/headers of the record just appended."""
        index = len(self.values) - 1
        self.keys = _sparse_append(self.keys, key, index)
        self.headers = _sparse_append(self.headers, headers, index)


def _sparse_append(column: list[Any] | None, value: Any, index: int) -> list[Any] | None:
    """Append ``value`` as item ``index`` of a column kept only once some value is not None."""
    if column is None:
        if value is None:
            return None
        column = [None] * index
    column.append(value)
    return column


class _TopicState:
    """What a producer keeps per topic: metadata, partition handles, open batches."""

    __slots__ = (
        "batches",
        "info",
        "max_frame_bytes",
        "num_partitions",
        "partitions",
        "schema",
        "sticky",
        "sticky_bytes",
        "typed",
    )

    def __init__(self, info: TopicInfo, schema: pa.Schema | None, max_frame_bytes: int):
        self.info = info
        self.num_partitions = info.num_partitions
        self.schema = schema
        self.typed = None if schema is None else TypedValues(info.name, schema)
        self.partitions: list[Partition | None] = [None] * info.num_partitions
        self.batches: list[_OpenBatch | None] = [None] * info.num_partitions
        self.sticky = 0
        self.sticky_bytes = 0  # sent to the sticky partition since it was chosen
        self.max_frame_bytes = max_frame_bytes


@dataclass(slots=True)
class _InFlight:
    """An acks=all batch written to its partition, its replicas' fsyncs still running."""

    handle: Partition
    in_sync: list[int]
    syncs: list[Future[bool]]
    topic: str
    partition: int
    batch: _OpenBatch
    offsets: list[tuple[int, int]]
    timestamps_ms: np.ndarray
    sent: list[EncodedBatch]  # the frames as written (with their sequences), for a retry

    def done(self) -> bool:
        return all(sync.done() for sync in self.syncs)


class _ClosedBatches:
    """The open batches of a closed producer's topics: any look-up raises the closed error
    (so produce() needs no closed check of its own on every record)."""

    def __getitem__(self, partition: int) -> _OpenBatch | None:
        raise RuntimeError("Producer has been closed")


_CLOSED = cast("list[_OpenBatch | None]", _ClosedBatches())


class _NeverOpened:
    """The hooks of a Producer whose ``__init__`` never ran (a subclass that skips it): closed."""

    closed = True


class Producer:
    """Writes records to topics of a cluster. See the module docstring for the contract."""

    # An instance whose __init__ never ran reads these class-level values: every call fails
    # in _check_open() with RuntimeError("Producer has been closed") and len() is 0, as
    # confluent-kafka's Producer does. __init__ replaces them (the mapping is read-only).
    _hooks = cast("_Hooks", _NeverOpened())
    _topics = cast("dict[str, _TopicState]", MappingProxyType({}))
    _reports: list[tuple[list[DeliveryCallback], KafkaError | None, list[Any]]] = cast("list[Any]", ())
    _in_flight = cast("deque[_InFlight]", ())
    _lock = threading.RLock()  # (only guards the read-only values above)

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any):
        if config is None and not kwargs:
            raise TypeError("expected configuration dict (Producer({}) uses $KSTREAM_CLUSTER or ./data)")
        options, self._cluster = open_client(PRODUCER_OPTIONS, config, kwargs, "a Producer")
        self._options = options
        self._hooks = _Hooks(options)
        self._default_delivery: DeliveryCallback | None = options["on_delivery"]  # see _take_batch
        self._acks = options["acks"]
        self._batch_size = options["batch.size"]
        self._linger_s = options["linger.ms"] / 1000.0
        self._max_record_bytes = options["message.max.bytes"]
        self._codec = PayloadCodec(options["compression.type"])
        self._attributes = fmt.CODECS[options["compression.type"]]
        self._topics = {}
        self._sticky = StickyPartitioner()
        self._next_deadline = float("inf")
        self._reports = []
        self._producer_id = fmt.NO_PRODUCER_ID
        self._producer_epoch = -1
        self._sequences: dict[tuple[str, int], int] = {}
        self._open_handles: OrderedDict[tuple[str, int], _TopicState] = OrderedDict()
        self._lingering: dict[tuple[str, int], _TopicState] = {}  # open batches, oldest first
        self._max_open = options["open.partitions.max"]
        self._transactions: ProducerTransactions | None = None
        self._sink_txn: Any = None
        self._in_flight = deque()
        self._max_in_flight = options["max.in.flight.requests.per.connection"]
        self._syncers = LazyThreadPool(_SYNC_THREADS, "kstream-ack")
        self._retries = options["retries"]
        self._retry_backoff_s = options["retry.backoff.ms"] / 1000.0
        self._delivery_timeout_s = options["delivery.timeout.ms"] / 1000.0
        # Over everything above that changes (see the module docstring). Reentrant so that a
        # locked method may call another; user callbacks are never called while it is held.
        self._lock = threading.RLock()
        if options["transactional.id"]:
            self._transactions = ProducerTransactions(self._cluster, options["transactional.id"])
        # An idempotent producer takes its producer id at its first send (_append), as Kafka's
        # client does: creating a Producer reads the metadata and writes nothing to it.
        self._idempotent = bool(options["enable.idempotence"]) and self._transactions is None

    @property
    def cluster(self) -> Cluster:
        return self._cluster

    @property
    def config(self) -> dict[str, str]:
        """The effective configuration, as confluent-kafka's read-only ``config``: a new dict
        of strings (defaults included, callbacks left out; see client_config.config_dump)."""
        return dict(self._options["config"])

    # -- per-record API -----------------------------------------------------------

    def produce(self, topic: str, value: Any = None, key: Any = None, partition: int | None = -1,
                on_delivery: DeliveryCallback | None = None, timestamp: int = 0,
                headers: Any = None, callback: DeliveryCallback | None = None) -> None:
        """Queue one record; it is sent with its partition's batch (see module docstring).

        ``partition`` -1 (confluent-kafka's PARTITION_UA) or None lets the partitioner
        choose; any other value outside the topic's partitions raises PartitionNotFoundError.
        A typed topic's value is checked against its schema here: a record that does not fit
        is refused and the records queued with it are unaffected.
        """
        # The hot path of the per-record API: keep it to a few dozen bytecodes.
        try:
            state = self._topics[topic]  # (a subscript is cheaper than a .get() call)
        except KeyError:
            state = self._open_topic(topic)
        if state.typed is not None:
            size = state.typed.check(value)  # a record that does not fit is refused here, alone
        elif value.__class__ is bytes:
            size = len(value)
        elif value is None:
            size = 0
        else:
            value = _to_bytes(value, "value")
            size = len(value)
        if key is not None and key.__class__ is not bytes:
            key = _to_bytes(key, "key")
        if partition == -1 or partition is None:
            if key is None:
                partition = state.sticky
            else:
                partition = partition_for_key(key, state.num_partitions)
        elif partition.__class__ is not int or not 0 <= partition < state.num_partitions:
            partition = _checked_partition(topic, state.num_partitions, partition)
        if key is not None:
            size += len(key)
        if headers is not None:
            headers = _headers_list(headers)  # before the batch changes: a bad header queues nothing
        if size > self._max_record_bytes:
            raise RecordTooLargeError(
                f"record of {size} bytes to topic {topic!r} exceeds message.max.bytes "
                f"({self._max_record_bytes}); raise message.max.bytes or split the record")
        now = _time()
        # The producer's lock, from here to the end (everything above only read). acquire()/
        # release() rather than `with`: a `with` costs twice as much, on every record.
        lock = self._lock
        lock.acquire()
        try:
            batch = state.batches[partition]  # RuntimeError if close() ran meanwhile (_CLOSED)
            if batch is None:
                batch = state.batches[partition] = _OpenBatch(now + self._linger_s)
                self._lingering[(topic, partition)] = state
                if batch.deadline < self._next_deadline:
                    self._next_deadline = batch.deadline
            batch.values.append(value)
            batch.timestamps.append(now if timestamp == 0 else timestamp / 1000.0)
            if key is not None or headers is not None or batch.keys is not None or batch.headers is not None:
                batch.add_extras(key, headers)
            handler = on_delivery if on_delivery is not None else callback
            if handler is not None:
                if batch.callbacks is None:
                    batch.callbacks = {}
                batch.callbacks[len(batch.values) - 1] = handler
            batch.size += size + _RECORD_OVERHEAD_BYTES
            if batch.size >= self._batch_size:
                self._send(state, partition)
            elif now >= self._next_deadline:
                self._send_expired(now, hold_when_full=True)
        finally:
            lock.release()

    def poll(self, timeout: float | None = None) -> int:
        """Serve delivery reports (and error_cb, stats_cb), sending batches whose linger.ms
        passed; returns how many reports were served.

        With nothing to report, waits up to ``timeout`` seconds (None: 0) for a
        lingering batch to come due, as confluent-kafka's poll waits for events.
        """
        self._check_open()
        now = time.time()
        with self._lock:
            self._check_open()
            self._send_expired(now)
            self._settle(wait=False)
            waiting = not self._reports and timeout
            next_deadline = self._next_deadline
        if waiting:  # (sleeping without the lock: other threads go on producing)
            assert timeout is not None
            end = now + timeout
            if next_deadline < end:
                time.sleep(max(0.0, next_deadline - now))
                with self._lock:
                    self._check_open()
                    self._send_expired(time.time())
            else:
                time.sleep(timeout)
        return self._serve_reports()

    def flush(self, timeout: float | None = None) -> int:
        """Send every open batch and serve all delivery reports; returns the records still
        waiting (0: batches are written in the calling thread, so nothing is left).

        As librdkafka's, it goes on while other threads produce (or callbacks it serves do),
        until nothing is waiting or ``timeout`` seconds (None or negative: no limit) have
        passed; each round holds the lock only while it sends what is queued.
        """
        self._check_open()
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        while True:
            with self._lock:
                if self._hooks.closed:  # another thread's close() flushed everything
                    return 0
                self._flush_locked()
            self._serve_reports()
            left = len(self)
            if not left or (deadline is not None and time.monotonic() >= deadline):
                return left

    def _flush_locked(self) -> None:
        """Send every open batch and settle every batch in flight (the lock held throughout,
        so this ends however fast other threads produce)."""
        while self._lingering:
            (_, partition), state = next(iter(self._lingering.items()))
            self._send(state, partition)
        self._next_deadline = float("inf")
        self._settle(wait=True)

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        """Drop records not sent yet (``in_queue``): their delivery callbacks get
        KafkaError ``_PURGE_QUEUE`` from the next poll()/flush(), and they are never written.

        ``in_flight``: batches already written whose acks=all fsyncs are still running cannot
        be taken back from the log; they are settled (waited for with ``blocking``, else those
        finished) and reported as they turned out, delivered or failed.
        """
        self._check_open()
        with self._lock:
            self._purge_locked(in_queue, in_flight, blocking)

    def _purge_locked(self, in_queue: bool, in_flight: bool, blocking: bool) -> None:
        self._check_open()
        if in_queue:
            error = KafkaError(_PURGE_QUEUE, "Local: Purged in queue")
            for state in self._topics.values():
                for partition, open_batch in enumerate(state.batches):
                    if open_batch is None:
                        continue
                    batch = self._take_batch(state, partition)
                    if batch.callbacks is not None:
                        self._queue_reports(state.info.name, partition, batch, [],
                                            np.zeros(len(batch.values), np.int64), error)
            self._lingering.clear()
            self._next_deadline = float("inf")
        if in_flight:
            self._settle(wait=blocking)

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        """confluent-kafka's ClusterMetadata: log dirs as brokers, the cluster's topics (or
        ``topic`` alone; a missing one has error UNKNOWN_TOPIC_OR_PART)."""
        with self._lock:  # (close() closes the cluster under it)
            self._check_open()
            return cluster_metadata(self._cluster, topic)

    def set_sasl_credentials(self, username: str, password: str) -> None:
        """Accepted and ignored: an embedded log has no broker to authenticate to."""
        check_sasl_credentials(username, password)

    def __bool__(self) -> bool:
        return True

    def __len__(self) -> int:
        """Records not yet sent or not yet reported."""
        with self._lock:
            waiting = sum(len(b.values) for s in self._topics.values() for b in s.batches if b is not None)
            syncing = sum(len(f.batch.values) for f in self._in_flight)
            return waiting + syncing + sum(len(callbacks) for callbacks, _, _ in self._reports)

    # -- Arrow API ---------------------------------------------------------------------

    @overload
    def produce_batch(self, topic: str, data: pa.Table | pa.RecordBatch, partition: int | None = -1
                      ) -> list[BatchResult]: ...

    @overload
    def produce_batch(self, topic: str, data: list[dict[str, Any]], partition: int | None = -1,
                      on_delivery: DeliveryCallback | None = None, callback: DeliveryCallback | None = None
                      ) -> int: ...

    def produce_batch(self, topic: str, data: Any, partition: int | None = -1,
                      on_delivery: DeliveryCallback | None = None, callback: DeliveryCallback | None = None
                      ) -> list[BatchResult] | int:
        """Append a table's rows (columns key/value/headers/timestamp/partition, or a typed
        topic's columns); returns where each stored batch landed. (Given a list of dicts
        instead, this is confluent-kafka's produce_batch: see :mod:`kstream.client.confluent_batch`.)

        Rows go to ``partition`` if given, else to their ``partition`` column, else to
        the murmur2 partition of their key, else to the sticky partition (-1 or None, as
        the argument or in the column, lets the partitioner choose; any other value outside
        the topic's partitions raises PartitionNotFoundError). The whole input is checked
        before anything is written.
        """
        if not isinstance(data, (pa.Table, pa.RecordBatch)):
            return produce_dicts(self, topic, data, partition,
                                 on_delivery if on_delivery is not None else callback)
        state = self._topics.get(topic) or self._open_topic(topic)
        table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
        if "topic" in table.column_names:
            raise InvalidRecordError("produce_batch(topic, table) takes the topic as an argument; "
                                     "drop the 'topic' column")
        routes = self._route(state, table, partition)
        if "partition" in table.column_names:
            table = table.drop_columns(["partition"])
        now_ms = int(time.time() * 1000)
        planned: list[tuple[int, Piece]] = []
        for target, rows in routes:
            part = table.take(rows) if rows is not None else table
            for chunk in part.combine_chunks().to_batches():
                stored = to_stored_batch(chunk, state.schema)
                planned.extend((target, piece) for piece in self._pieces(state, stored))
        # Everything is checked and cut to fit: from here on only the disk can fail.
        with self._lock:
            self._check_open()
            return self._write_planned(state, planned, now_ms, partition)

    def _write_planned(self, state: _TopicState, planned: list[tuple[int, Piece]], now_ms: int,
                       partition: int | None) -> list[BatchResult]:
        topic = state.info.name
        touched = sorted({target for target, _ in planned})
        for target in touched:  # keep per-partition order with produce()
            if state.batches[target] is not None:
                self._send(state, target)
        results = []
        sent: dict[int, list[EncodedBatch]] = {}
        for target, (piece, payload) in planned:
            base = self._append(state, target, self._encode(piece, now_ms, payload), defer_fsync=True,
                                sent=sent.setdefault(target, []))
            results.append(BatchResult(topic, target, base, piece.num_rows))
        if self._acks == "all":  # one fsync per partition for the whole call (group commit)
            for target in touched:
                handle = self._partition(state, target)
                try:
                    handle.flush_acked()
                except _RETRIABLE as err:
                    if not sent[target]:
                        raise
                    for i, encoded in enumerate(sent[target]):  # the log keeps the first copies
                        self._retrying(functools.partial(self._resend_one, handle, encoded),
                                       first_error=err if i == 0 else None)
        if (partition is None or partition == -1) and planned:
            self._next_sticky(state)
        return results

    def _route(self, state: _TopicState, table: pa.Table, partition: int | None
               ) -> list[tuple[int, np.ndarray | None]]:
        n = state.num_partitions
        if partition is not None and partition != -1:
            return [(_checked_partition(state.info.name, n, partition), None)]
        if "partition" not in table.column_names and "key" not in table.column_names:
            return [(state.sticky, None)]
        targets = np.full(table.num_rows, -1, dtype=np.int32)
        if "partition" in table.column_names:
            column = table.column("partition")
            if not pa.types.is_integer(column.type):
                raise InvalidRecordError(f"column 'partition' has type {column.type}; expected an integer")
            # Range-check in the column's own type: a cast first would wrap 2**32+1 to 1.
            low, high = pc.min_max(column).values()
            for value in (low.as_py(), high.as_py()):
                if value is not None and not -1 <= value < n:
                    raise _bad_partition(state.info.name, n, value, " (column 'partition')")
            targets = column.fill_null(-1).to_numpy().astype(np.int32)
        if "key" in table.column_names and (targets < 0).any():
            keys = table.column("key").combine_chunks()
            if keys.type not in (pa.binary(), pa.string(), pa.large_binary(), pa.large_string()):
                raise InvalidRecordError(f"column 'key' has type {keys.type}; expected binary or string")
            keyed = partitions_for_keys(keys, n)
            targets = np.where(targets < 0, keyed, targets)
        if (targets < 0).all():
            return [(state.sticky, None)]
        targets = np.where(targets < 0, state.sticky, targets)
        return [(int(p), np.nonzero(targets == p)[0]) for p in np.unique(targets)]

    def _pieces(self, state: _TopicState, batch: pa.RecordBatch) -> list[Piece]:
        """Cut a stored batch into pieces whose frames fit the topic's message.max.bytes.

        Sizes come from Arrow's exact IPC size computation; a compressed size is only known by
        compressing, so that payload comes back with its piece and is not encoded again. A
        single record that cannot fit raises RecordTooLargeError.
        """
        if batch.num_rows == 0:
            return []
        payload = None
        if self._codec.compression == "none":
            frame_bytes = fmt.HEADER_SIZE + self._codec.encoded_size(batch)  # exact
        else:
            payload = self._codec.encode(batch)
            frame_bytes = fmt.HEADER_SIZE + payload.size
        if frame_bytes <= state.max_frame_bytes:
            return [(batch, payload)]
        if batch.num_rows == 1:
            raise RecordTooLargeError(
                f"a record of {frame_bytes} bytes (stored) exceeds topic {state.info.name!r}'s "
                f"message.max.bytes ({state.max_frame_bytes}); raise it with "
                f"`kstream topics alter {state.info.name} --config message.max.bytes=N`")
        pieces = min(batch.num_rows, -(-frame_bytes // state.max_frame_bytes) + 1)
        rows = -(-batch.num_rows // pieces)
        return [p for i in range(0, batch.num_rows, rows) for p in self._pieces(state, batch.slice(i, rows))]

    # -- sending --------------------------------------------------------------------------

    def _open_topic(self, topic: str) -> _TopicState:
        self._check_open()
        if not isinstance(topic, str):
            raise TypeError(f"topic must be a str, got {type(topic).__name__}")
        with self._lock:
            self._check_open()
            state = self._topics.get(topic)  # another thread may have opened it meanwhile
            return state if state is not None else self._open_topic_locked(topic)

    def _open_topic_locked(self, topic: str) -> _TopicState:
        info = self._topic_info(topic)
        config = self._cluster.log_config(info)
        state = _TopicState(info, Cluster.topic_schema(info), config.message_max_bytes)
        state.sticky = (partition_for_key(b"", info.num_partitions) if self._hooks.null_key_hashed
                        else self._sticky.partition(topic, info.num_partitions))
        self._topics[topic] = state
        return state

    def _next_sticky(self, state: _TopicState) -> None:
        """After a batch to the sticky partition: move on (murmur2: unkeyed records stay on the
        partition of an empty key, as librdkafka's murmur2 partitioner puts them)."""
        if self._hooks.null_key_hashed:
            return
        self._sticky.batch_sent(state.info.name, state.num_partitions, state.sticky)
        state.sticky = self._sticky.partition(state.info.name, state.num_partitions)

    def _topic_info(self, topic: str) -> TopicInfo:
        """The topic's metadata; with the cluster's auto.create.topics.enable, a missing topic
        is created first (num.partitions, default.replication.factor), as a Kafka broker does."""
        try:
            return self._cluster.topic(topic)
        except TopicNotFoundError:
            if not self._cluster.config.get("auto.create.topics.enable"):
                raise
        try:
            info = self._cluster.create_topic(topic)
            assert info is not None  # None only for validate_only
            self._hooks.log.info("auto-created topic %r (auto.create.topics.enable)", topic)
            return info
        except TopicExistsError:  # another producer created it first
            return self._cluster.topic(topic)

    def _partition(self, state: _TopicState, partition: int) -> Partition:
        handle = state.partitions[partition]
        key = (state.info.name, partition)
        if handle is None:
            handle = state.partitions[partition] = self._cluster.partition(state.info, partition)
            self._open_handles[key] = state
            while len(self._open_handles) > self._max_open:  # bound open files
                self._settle(wait=True)  # no fsync may still run on a handle we close
                (_topic, evicted), owner = self._open_handles.popitem(last=False)
                old = owner.partitions[evicted]
                owner.partitions[evicted] = None
                if old is not None:
                    old.close()
        else:
            self._open_handles.move_to_end(key)
        return handle

    def _encode(self, batch: pa.RecordBatch, now_ms: int, payload: Payload | None = None) -> EncodedBatch:
        low, high = timestamp_range(batch, now_ms)
        if payload is None:
            payload = self._codec.encode(batch)
        return EncodedBatch(payload, batch.num_rows, low, high, self._attributes)

    def _append(self, state: _TopicState, partition: int, encoded: EncodedBatch,
                defer_fsync: bool = False, sent: list[EncodedBatch] | None = None) -> int:
        # A Spark sink task's transaction (decided by the driver), or this producer's own.
        txn = self._sink_txn or (self._transactions.current() if self._transactions is not None else None)
        if txn is not None:
            encoded = dataclasses.replace(encoded, attributes=encoded.attributes | fmt.TRANSACTIONAL,
                                          producer_id=txn.producer_id, producer_epoch=txn.epoch)
            return self._partition(state, partition).append(encoded, self._acks, txn=txn,
                                                            defer_fsync=defer_fsync).base_offset
        if self._idempotent:
            if self._producer_id == fmt.NO_PRODUCER_ID:
                self._producer_id = self._cluster.metadata.next_counter("producer_id")
                self._producer_epoch = 0
            key = (state.info.name, partition)
            sequence = self._sequences.get(key, 0)
            encoded = dataclasses.replace(encoded, producer_id=self._producer_id,
                                          producer_epoch=self._producer_epoch, base_sequence=sequence)
            self._sequences[key] = (sequence + encoded.record_count) & 0x7FFFFFFF
            if sent is not None:
                sent.append(encoded)
            return self._retrying(lambda: self._partition(state, partition).append(
                encoded, self._acks, defer_fsync=defer_fsync).base_offset)
        return self._partition(state, partition).append(encoded, self._acks, defer_fsync=defer_fsync).base_offset

    def _retrying(self, send: Callable[[], int], first_error: KStreamError | None = None) -> int:
        """Run an idempotent ``send`` until it succeeds, retrying retriable errors (the same
        frame, so the log drops what it already has) within retries / delivery.timeout.ms.
        A batch given up makes this producer move to a new epoch: its sequence is spent."""
        deadline = time.monotonic() + self._delivery_timeout_s
        attempt = 0
        error = first_error
        while True:
            if error is not None:
                attempt += 1
                if not _retriable(error) or attempt > self._retries \
                        or time.monotonic() + self._retry_backoff_s > deadline:
                    self._new_epoch()
                    if isinstance(error, PartitionOfflineError) and first_error is not None \
                            and first_error is not error:
                        # The first failure took the partition offline: it says what happened
                        # (e.g. no space left on device) and what to do.
                        raise first_error from error
                    raise error
                time.sleep(self._retry_backoff_s)
            try:
                return send()
            except KStreamError as err:
                error = err

    def _new_epoch(self) -> None:
        """Restart sequences after a batch was given up (Kafka bumps the epoch then too)."""
        self._sequences.clear()
        if self._producer_epoch < _MAX_EPOCH:
            self._producer_epoch += 1
        else:
            self._producer_id = self._cluster.metadata.next_counter("producer_id")
            self._producer_epoch = 0

    def _take_batch(self, state: _TopicState, partition: int) -> _OpenBatch:
        """Take a partition's open batch off it; records produced without a delivery callback
        get the config's ``on_delivery`` here (once per batch, not in produce())."""
        batch = state.batches[partition]
        assert batch is not None
        state.batches[partition] = None
        default = self._default_delivery
        if default is not None and (batch.callbacks is None or len(batch.callbacks) < len(batch.values)):
            given = batch.callbacks or {}
            batch.callbacks = {i: given.get(i, default) for i in range(len(batch.values))}
        return batch

    def _send(self, state: _TopicState, partition: int) -> None:
        batch = self._take_batch(state, partition)
        del self._lingering[(state.info.name, partition)]
        if partition == state.sticky:
            # KIP-794: move on once batch.size bytes went to the sticky partition, not after
            # every batch: a small batch (linger.ms=0, or one sent while an fsync ran) would
            # otherwise send the next records to another partition, in small batches too.
            state.sticky_bytes += batch.size
            if state.sticky_bytes >= self._batch_size:
                state.sticky_bytes = 0
                self._next_sticky(state)
        seconds = pa.array(batch.timestamps, pa.float64()).to_numpy()
        timestamps_ms = np.rint(seconds * 1000).astype(np.int64)
        if state.schema is None:
            stored = batch_from_records(batch.values, batch.keys, timestamps_ms, batch.headers)
        else:
            stored = _typed_batch(state.schema, batch, timestamps_ms)
        now_ms = int(time.time() * 1000)
        offsets: list[tuple[int, int]] = []
        sent: list[EncodedBatch] = []
        error: KafkaError | None = None
        pipelined = self._acks == "all" and self._transactions is None and self._sink_txn is None
        try:
            start = 0
            for piece, payload in self._pieces(state, stored):
                encoded = self._encode(piece, now_ms, payload)
                offsets.append((start, self._append(state, partition, encoded, defer_fsync=pipelined,
                                                    sent=sent)))
                start += piece.num_rows
        except KStreamError as err:
            if batch.callbacks is None:
                raise
            error = KafkaError(_error_code(err), str(err), err)
            self._hooks.errors.append(error)
        if error is None and self._hooks.stats is not None:
            self._hooks.stats.sent(state.info.name, partition, len(batch.values), batch.size)
        if pipelined and error is None:
            self._sync_in_background(state, partition, batch, offsets, timestamps_ms, sent)
        elif batch.callbacks is not None:
            self._settle(wait=True)  # reports keep the order of the batches
            self._queue_reports(state.info.name, partition, batch, offsets, timestamps_ms, error)

    # -- acks=all: fsyncs in the background ----------------------------------------------------

    def _sync_in_background(self, state: _TopicState, partition: int, batch: _OpenBatch,
                            offsets: list[tuple[int, int]], timestamps_ms: np.ndarray,
                            sent: list[EncodedBatch]) -> None:
        """Start fsyncing the batch just written on its in-sync replicas; its reports (or its
        NotEnoughReplicas error) come when :meth:`_settle` finds the fsyncs done."""
        handle = self._partition(state, partition)
        in_sync = list(handle.info.isr)
        syncs = [self._syncers.get().submit(handle.sync_replica, replica) for replica in in_sync]
        start, base = offsets[-1]
        _publish_when_synced(handle, syncs, base + len(batch.values) - start)
        self._in_flight.append(_InFlight(handle, in_sync, syncs, state.info.name, partition, batch,
                                         offsets, timestamps_ms, sent))
        if len(self._in_flight) > self._max_in_flight:
            self._settle(wait=True, keep=self._max_in_flight)

    def _settle(self, wait: bool, keep: int = 0) -> None:
        """Acknowledge in-flight batches, oldest first, whose fsyncs finished (``wait``: wait
        for them, leaving at most ``keep`` in flight). A replica whose fsync failed takes its
        log dir offline; too few fsynced replicas make the batch's error NotEnoughReplicas."""
        while len(self._in_flight) > keep:
            head = self._in_flight[0]
            if not wait and not head.done():
                return
            self._in_flight.popleft()
            synced = [sync.result() for sync in head.syncs]
            error: KafkaError | None = None
            try:
                try:
                    head.handle.require_synced(head.handle.settle_syncs(head.in_sync, synced),
                                               f"the batch at offset {head.offsets[0][1]}")
                    # Visible before it is reported (the fsync threads may not have published yet).
                    start, base = head.offsets[-1]
                    head.handle.publish_high_watermark(base + len(head.batch.values) - start)
                except KStreamError as err:
                    if not head.sent:
                        raise
                    self._resend(head, err)
            except KStreamError as err:
                if head.batch.callbacks is None:
                    raise
                error = KafkaError(_error_code(err), str(err), err)
                self._hooks.errors.append(error)
            if head.batch.callbacks is not None:
                self._queue_reports(head.topic, head.partition, head.batch, head.offsets,
                                    head.timestamps_ms, error)

    def _resend(self, head: _InFlight, error: KStreamError) -> None:
        """Retry an idempotent batch written but not acknowledged: the same frames, fsynced
        this time; the log keeps the first copy and the reports get its offsets."""
        bounds = [start for start, _ in head.offsets]
        for i, encoded in enumerate(head.sent):
            base = self._retrying(functools.partial(self._resend_one, head.handle, encoded),
                                  first_error=error if i == 0 else None)
            head.offsets[i] = (bounds[i], base)

    def _resend_one(self, handle: Partition, encoded: EncodedBatch) -> int:
        return handle.append(encoded, self._acks).base_offset

    def _queue_reports(self, topic: str, partition: int, batch: _OpenBatch,
                       offsets: list[tuple[int, int]], timestamps_ms: np.ndarray,
                       error: KafkaError | None) -> None:
        """Delivery reports for the records that asked for one, served by the next poll()."""
        assert batch.callbacks is not None
        keys = batch.keys or [None] * len(batch.values)
        headers = batch.headers or [None] * len(batch.values)
        base_of = [-1] * len(batch.values)  # offset of each record (-1: not delivered)
        bounds = [*offsets, (len(batch.values), -1)]
        for (start, base), (end, _) in itertools.pairwise(bounds):
            for i in range(start, end):
                base_of[i] = base + i - start
        callbacks, records = [], []
        # librdkafka's latency: produce() to acknowledgement, here from when the record's batch
        # was opened (at most linger.ms before the record itself was produced).
        source = _DeliverySource(topic, partition, error, time.time() - (batch.deadline - self._linger_s))
        for i, cb in batch.callbacks.items():
            callbacks.append(cb)
            records.append(Message((source, base_of[i] if error is None else -1, keys[i],
                                    batch.values[i], headers[i], int(timestamps_ms[i]))))
        self._reports.append((callbacks, error, records))

    def _send_expired(self, now: float, hold_when_full: bool = False) -> None:
        """Send the batches whose linger.ms passed. Open batches are kept in creation order,
        which is deadline order (linger.ms is the same for all), so this is O(expired).

        ``hold_when_full`` (produce()): a due batch stays open and goes on collecting records
        while its partition still has an acks=all batch being fsynced, or while
        ``max.in.flight`` batches are: Kafka's sender leaves a ready batch in its accumulator
        until it may send, and here a second fsync of the same files could not finish before
        the first anyway (group commit). It goes when the fsync is done or the batch reaches
        batch.size. Without this, linger.ms=0 with acks=all wrote and fsynced nearly every
        record alone. poll() and flush() send regardless, waiting for a slot as before."""
        if now < self._next_deadline:
            return
        due: list[tuple[_TopicState, int]] = []
        next_deadline = float("inf")
        for (_topic, partition), state in self._lingering.items():
            batch = state.batches[partition]
            assert batch is not None
            if batch.deadline > now:
                next_deadline = batch.deadline
                break
            due.append((state, partition))
        held = False
        for state, partition in due:
            if hold_when_full and self._must_hold(state.info.name, partition):
                held = True  # (due still: the next produce() looks again)
                continue
            self._send(state, partition)
        self._next_deadline = now if held else next_deadline

    def _must_hold(self, topic: str, partition: int) -> bool:
        """Whether a due acks=all batch of ``topic``/``partition`` should wait (see
        :meth:`_send_expired`), settling the in-flight batches already synced."""
        if not self._in_flight:
            return False
        self._settle(wait=False)
        if len(self._in_flight) >= self._max_in_flight:
            return True
        return any(f.partition == partition and f.topic == topic and not f.done() for f in self._in_flight)

    def _serve_reports(self) -> int:
        """Call error_cb, stats_cb and the delivery callbacks queued so far, in this thread and
        without the lock (a callback may produce; another thread's poll() serves later ones)."""
        hooks = self._hooks
        if hooks.oauth is not None:
            hooks.oauth.refresh_if_due(hooks.log, hooks.error_cb)
        with self._lock:
            errors, hooks.errors = hooks.errors, []
            reports, self._reports = self._reports, []
            stats = None if hooks.stats is None else hooks.stats.render_if_due(self._stats_document)
        served = 0
        try:
            while errors:
                failure = errors.pop(0)
                hooks.log.warning("producer %s: %s", self._options["client.id"], failure.str())
                if hooks.error_cb is not None:
                    hooks.error_cb(failure)
            if stats is not None:
                assert hooks.stats is not None
                hooks.stats.callback(stats)
            while reports:
                callbacks, error, records = reports.pop(0)
                for cb, record in zip(callbacks, records, strict=False):
                    assert cb is not None
                    cb(error, record)
                    served += 1
        except BaseException:
            with self._lock:  # a callback raised: what was not served yet is first in line again
                hooks.errors[:0] = errors
                self._reports[:0] = reports
            raise
        return served

    # -- transactions (transactional.id) --------------------------------------------------

    def init_transactions(self, timeout: float | None = None) -> None:
        """Register this transactional id with a new epoch: older instances are fenced and a
        transaction they left open is aborted."""
        with self._lock:
            self._transactional().init()

    def begin_transaction(self) -> None:
        with self._lock:
            self._transactional().begin()

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Send everything produced in the transaction, then commit it on every partition.
        With other threads producing: the transaction holds every record produced before this
        call took the producer's lock; records produced after wait for the next transaction."""
        with self._lock:
            transactions = self._transactional()
            transactions.current()
            self._flush_locked()
            transactions.end(commit=True)
        self._serve_reports()

    def send_offsets_to_transaction(self, positions: list[TopicPartition], group_metadata: Any,
                                    timeout: float | None = None) -> None:
        """Commit the consumer's ``positions`` (next offsets to read) for the group of
        ``group_metadata`` (``Consumer.consumer_group_metadata()``) with the open transaction:
        both or neither (consume-transform-produce exactly once; docs/TRANSACTIONS.md).
        IllegalGenerationError if the consumer lost its partitions meanwhile: abort then."""
        with self._lock:
            self._transactional().send_offsets(positions, group_metadata)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Drop records not sent yet and abort what was: read_committed readers never see it."""
        with self._lock:
            transactions = self._transactional()
            transactions.current()
            for state in self._topics.values():
                state.batches = [None] * state.num_partitions
            self._lingering.clear()
            self._next_deadline = float("inf")
            transactions.end(commit=False)

    def bind_sink_transaction(self, writer: Any) -> None:
        """Internal (the Spark sink): write every frame into the task's transaction."""
        with self._lock:
            self._sink_txn = writer

    def _transactional(self) -> ProducerTransactions:
        self._check_open()
        if self._transactions is None:
            raise KStreamError("this producer has no transactional.id; set one to use transactions")
        return self._transactions

    def _stats_document(self) -> dict[str, Any]:
        assert self._hooks.stats is not None
        views = []
        for (topic, partition) in sorted(self._hooks.stats.tx):
            state = self._topics.get(topic)
            handle = state.partitions[partition] if state is not None else None
            batch = state.batches[partition] if state is not None else None
            view = PartitionView(topic, partition, msgq_cnt=len(batch.values) if batch else 0)
            if handle is not None:
                view.leader = handle.info.leader
                view.hi_offset = handle.high_watermark() or 0
            views.append(view)
        waiting = [b for s in self._topics.values() for b in s.batches if b is not None]
        return self._hooks.stats.document(views, msg_cnt=len(self),
                                    msg_size=sum(b.size for b in waiting))

    def _check_open(self) -> None:
        if self._hooks.closed:
            raise RuntimeError("Producer has been closed")

    def close(self, timeout: float | None = None) -> bool:
        """Flush, fsync what this producer wrote (a clean shutdown: the next writer
        to open these partitions has no tail to re-check), then release files; returns
        True, as confluent-kafka's does. A second close() does nothing (and returns True).

        Other threads may be producing: what they produced before close() took the lock is
        written, their later calls raise RuntimeError("Producer has been closed"). The last
        delivery reports are served after the producer closed (a callback that produces
        then gets that error)."""
        with self._lock:
            if self._hooks.closed:
                return True
            self._flush_locked()
        self._serve_reports()  # (its callbacks may produce: sent below)
        with self._lock:
            if self._hooks.closed:
                return True
            self._flush_locked()
            self._hooks.closed = True
            for state in self._topics.values():
                state.batches = _CLOSED  # for produce() calls already past their first check
                for handle in state.partitions:
                    if handle is not None:
                        _flush_and_close(handle)
            self._topics.clear()
            self._syncers.shutdown(wait=True)
            if self._transactions is not None:
                self._transactions.close()
            self._cluster.close()
        self._serve_reports()
        return True

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Hooks:
    """A producer's callbacks and state kept off the per-record path (a Producer with more than
    30 attributes loses CPython's fast attribute lookups, which produce() lives on)."""

    __slots__ = ("closed", "error_cb", "errors", "log", "null_key_hashed", "oauth", "stats")

    def __init__(self, options: Mapping[str, Any]):
        self.log: logging.Logger | logging.LoggerAdapter[Any] = options["logger"] or log
        self.error_cb: Callable[[KafkaError], None] | None = options["error_cb"]
        self.errors: list[KafkaError] = []  # for error_cb, served by poll()/flush()
        self.oauth = options["oauth"]
        self.stats = (ClientStats("producer", options["client.id"], options["statistics.interval.ms"],
                                  options["stats_cb"])
                      if options["stats_cb"] is not None and options["statistics.interval.ms"] > 0 else None)
        self.closed = False
        self.null_key_hashed = options["partitioner"] == "murmur2"  # librdkafka's murmur2: one partition


class _DeliverySource(MessageSource):
    """What the delivery reports of one batch share, with librdkafka's latency (seconds)."""

    __slots__ = ("latency",)

    def __init__(self, topic: str, partition: int, error: KafkaError | None, latency: float):
        super().__init__(topic, partition, TIMESTAMP_CREATE_TIME, error)
        self.latency = latency


def _publish_when_synced(handle: Partition, syncs: list[Future[bool]], end: int) -> None:
    """Once the last fsync of a batch returns, on that fsync's thread: if enough replicas
    fsynced it (min.insync.replicas), move the high watermark past it, so readers see it
    without waiting for this producer's next poll(). Errors are left to :meth:`Producer._settle`."""
    remaining = [len(syncs)]
    guard = threading.Lock()

    def done(_: Future[bool]) -> None:
        with guard:
            remaining[0] -= 1
            if remaining[0]:
                return
        synced = sum(1 for sync in syncs if not sync.cancelled() and sync.exception() is None and sync.result())
        if synced >= handle.config.min_insync_replicas:
            try:
                handle.publish_high_watermark(end)
            except (KStreamError, OSError):
                pass  # the batch is settled (and its error reported) on the producer's thread

    for sync in syncs:
        sync.add_done_callback(done)


def _to_bytes(value: Any, what: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise InvalidRecordError(f"record {what} must be bytes or str, got {type(value).__name__}")


def _checked_partition(topic: str, count: int, partition: Any) -> int:
    """An explicit partition number (an int, or a NumPy integer) of the topic, else
    PartitionNotFoundError. -1 and None (the partitioner chooses) are handled by callers."""
    if isinstance(partition, bool) or not isinstance(partition, (int, np.integer)):
        raise _bad_partition(topic, count, partition)
    if not 0 <= partition < count:
        raise _bad_partition(topic, count, partition)
    return int(partition)


def _bad_partition(topic: str, count: int, partition: Any, where: str = "") -> PartitionNotFoundError:
    return PartitionNotFoundError(
        f"partition {partition!r}{where} is not a partition of topic {topic!r}, which has "
        f"partitions 0..{count - 1}; give one of those, or -1 (or None) to let the partitioner choose")


def _headers_list(headers: Any) -> list[tuple[str, bytes | None]]:
    """Headers as stored: a dict, or a list of (name, value) pairs; values bytes, str or None.
    Anything else raises InvalidHeaderError (a TypeError, as confluent-kafka raises)."""
    if isinstance(headers, Mapping):
        items = list(headers.items())
    elif isinstance(headers, list):
        items = headers
    else:
        raise InvalidHeaderError(f"headers must be a list of (name, value) tuples or a dict, "
                                 f"got {type(headers).__name__}")
    result = []
    for item in items:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise InvalidHeaderError(f"a header must be a (name, value) tuple, got {item!r}")
        name, data = item
        if not isinstance(name, str):
            raise InvalidHeaderError(f"header name must be a str, got {type(name).__name__}")
        if data is not None and not isinstance(data, (bytes, str, bytearray, memoryview)):
            raise InvalidHeaderError(f"record header value must be bytes or str (or None), got "
                                     f"{type(data).__name__} for header {name!r}")
        result.append((name, None if data is None else _to_bytes(data, "header value")))
    return result


def _typed_batch(schema: pa.Schema, batch: _OpenBatch, timestamps_ms: np.ndarray) -> pa.RecordBatch:
    try:
        columns = pa.RecordBatch.from_pylist(batch.values, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
        raise InvalidRecordError(f"a record does not match the topic's schema {schema}: {err}") from err
    table = columns.append_column("timestamp", pa.array(timestamps_ms))
    if batch.keys is not None:
        table = table.append_column("key", pa.array(batch.keys, pa.binary()))
    if batch.headers is not None:
        table = table.append_column("headers", pa.array(batch.headers, HEADER_TYPE))
    return to_stored_batch(table, schema)


def _flush_and_close(handle: Partition) -> None:
    """fsync a partition at close, then release it. A partition deleted since this producer
    opened it has nothing left to make durable (its records went with the topic): that is
    no failure of close()."""
    try:
        handle.flush()
    except TopicNotFoundError as err:
        log.info("not flushing %s-%d at close: %s", handle.info.topic, handle.info.partition, err)
    finally:
        handle.close()


def _error_code(err: KStreamError) -> int:
    """The code a delivery report carries: the error's own (MSG_SIZE_TOO_LARGE,
    UNKNOWN_TOPIC_OR_PART for a partition deleted under the producer, ...), UNKNOWN for a
    plain KStreamError (``_FAIL``), as before codes were carried."""
    code = err.error.code()
    return KafkaError.UNKNOWN if code == KafkaError._FAIL else code

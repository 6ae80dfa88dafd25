"""The Producer: confluent-kafka's produce()/poll()/flush(), plus Arrow-native produce_batch().

Records collect per partition in an open batch; a batch goes to the log when
it reaches ``batch.size`` bytes, when ``linger.ms`` has passed, or on flush().
With ``acks=all`` a batch whose linger.ms passed still waits while its
partition's previous batch is being fsynced (a second fsync could not finish
first): records produced meanwhile join it (group commit). Unkeyed records
stick to one partition until ``batch.size`` bytes went to it (KIP-794).
Batches are written by the calling thread (produce(), poll(), flush()), and a
batch that comes due while the application makes no call (its linger.ms
passed, or the fsync it was held for finished) by the producer's background
sender (:mod:`~kstream.client.producer_send_thread`, like librdkafka's broker
thread). As with confluent-kafka, call poll() regularly and flush() before
exit: delivery reports (``on_delivery(err, msg)``) are served by poll() and
flush() only, on the thread that calls them. With ``acks=all`` a record is reported delivered only after its
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

The background sender takes the same lock for each of its passes and calls no
user callback; a batch without delivery callbacks that fails there is raised
by the application's next poll() or flush() (or close()).

This module is the public face and the per-record path (produce() touches only
the Producer's own attributes and its topics' open batches). The parts it
delegates to, each made once in ``__init__``: batch assembly and encoding
(:mod:`~kstream.client.producer_batches`), topics, sticky partitions and
routing (:mod:`~kstream.client.producer_routing`), the partition-handle cache
(:mod:`~kstream.client.partition_handles`), appends with idempotence,
transactions and retries (:mod:`~kstream.client.producer_sender`), the acks=all
fsync pipeline (:mod:`~kstream.client.producer_pipeline`), the background
sender (:mod:`~kstream.client.producer_send_thread`) and the delivery reports
and other callbacks (:mod:`~kstream.client.delivery_reports`).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, cast, overload

import numpy as np
import pyarrow as pa

from kstream.client.callbacks import check_sasl_credentials
from kstream.client.cluster_metadata import ClusterMetadata, cluster_metadata
from kstream.client.config import open_client
from kstream.client.confluent_batch import produce_dicts
from kstream.client.delivery_reports import DeliveryReports
from kstream.client.partition_handles import PartitionHandles
from kstream.client.partitioner import partition_for_key
from kstream.client.producer_batches import (
    CLOSED,
    RECORD_OVERHEAD_BYTES,
    BatchEncoder,
    DeliveryCallback,
    OpenBatch,
    Piece,
    TopicState,
    headers_list,
    to_bytes,
)
from kstream.client.producer_pipeline import AckPipeline
from kstream.client.producer_routing import TopicRouter, checked_partition, plan_table
from kstream.client.producer_send_thread import SendThread
from kstream.client.producer_sender import BatchResult, BatchSender
from kstream.client.producer_transactions import ProducerTransactions
from kstream.config.librdkafka import normalize
from kstream.config.options import PRODUCER_OPTIONS
from kstream.errors import ConfigError, KStreamError, RecordTooLargeError
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage.partition_log import EncodedBatch
from kstream.log.storage.records import keyless_refused
from kstream.message import KafkaError, TopicPartition

__all__ = ["BatchResult", "DeliveryCallback", "Producer"]

_time = time.time
# librdkafka's codes for records purge() dropped (kstream.error names them; the fallbacks keep
# this module working against a KafkaError without them).
_PURGE_QUEUE = getattr(KafkaError, "_PURGE_QUEUE", -152)
_PURGE_INFLIGHT = getattr(KafkaError, "_PURGE_INFLIGHT", -151)


def _release_files(topics: dict[str, TopicState], pipeline: AckPipeline, cluster: Cluster) -> None:
    """Close the handles of a producer freed without close(): first its fsync threads stop,
    the fsyncs in flight finishing (each publishes the high watermark it earned), so no
    thread uses a handle once it is closed; unflushed batches are dropped, as librdkafka
    drops a destroyed producer's queue. Runs on the thread that dropped the last reference
    (the send thread's, after a pass): no call of the producer is running then."""
    pipeline.shutdown()
    for state in topics.values():
        for number, handle in enumerate(state.partitions):
            if handle is not None:
                state.partitions[number] = None
                handle.close()
    cluster.close()


def _settle_all(pipeline: weakref.ref[AckPipeline]) -> Callable[[], None]:
    def settle() -> None:
        alive = pipeline()
        if alive is not None:
            alive.settle(wait=True)
    return settle


class _NeverOpened:
    """The parts of a Producer whose ``__init__`` never ran (a subclass that skips it): nothing
    waiting, nothing in flight."""

    pending = ()
    in_flight = ()

    def records(self) -> int:
        return 0

    def waiting(self) -> int:
        return 0


def _check_explicit_idempotence(given: Mapping[str, Any]) -> None:
    """librdkafka's rule (and the Java client's): ``enable.idempotence`` set to true by the
    application needs ``acks=all`` and at most 5 requests in flight; anything else is refused at
    construction. kstream's own default is idempotence on (with any acks): only an explicit
    true is held to the rule, as it would be by confluent-kafka. Names are librdkafka's too
    (``request.required.acks``, ``max.in.flight``): the rule reads them as the producer will."""
    explicit, _ = normalize(given, PRODUCER_OPTIONS)

    def value(name: str) -> Any:
        return PRODUCER_OPTIONS[name].parse(explicit[name])

    if "enable.idempotence" not in explicit or not value("enable.idempotence"):
        return
    if "acks" in explicit and value("acks") != "all":
        raise ConfigError(f"`acks` must be set to `all` when `enable.idempotence` is true (got acks="
                          f"{explicit['acks']!r}); drop acks, or drop enable.idempotence (kstream's "
                          "producer is idempotent by default, with any acks)")
    in_flight = "max.in.flight.requests.per.connection"
    if in_flight in explicit and value(in_flight) > 5:
        raise ConfigError(f"`max.in.flight.requests.per.connection` must be set <= 5 when "
                          f"`enable.idempotence` is true (got {explicit[in_flight]!r})")


def _check_transactional_timeouts(given: Mapping[str, Any]) -> bool:
    """librdkafka's rule for a transactional producer: ``message.timeout.ms`` (kstream's
    ``delivery.timeout.ms``) set by the application may not exceed ``transaction.timeout.ms``
    (a record must be delivered or failed before its transaction times out); refused at
    construction. Returns whether the application set it (if not, it defaults to the
    transaction timeout, see ``__init__``)."""
    explicit, _ = normalize(given, PRODUCER_OPTIONS)
    given_delivery = "delivery.timeout.ms" in explicit
    if not explicit.get("transactional.id") or not given_delivery:
        return given_delivery
    delivery_ms = PRODUCER_OPTIONS["delivery.timeout.ms"].parse(explicit["delivery.timeout.ms"])
    transaction_ms = PRODUCER_OPTIONS["transaction.timeout.ms"].parse(
        explicit.get("transaction.timeout.ms", PRODUCER_OPTIONS["transaction.timeout.ms"].default))
    if delivery_ms > transaction_ms:
        raise ConfigError(f"`message.timeout.ms` must be set <= `transaction.timeout.ms` (got delivery.timeout.ms="
                          f"{delivery_ms}, transaction.timeout.ms={transaction_ms}): a transactional producer's "
                          "records must be delivered within its transaction; lower message.timeout.ms "
                          "(delivery.timeout.ms), raise transaction.timeout.ms, or leave message.timeout.ms unset "
                          "(it then defaults to transaction.timeout.ms)")
    return given_delivery


class Producer:
    """Writes records to topics of a cluster. See the module docstring for the contract."""

    # An instance whose __init__ never ran reads these class-level values: every call fails
    # in _check_open() with RuntimeError("Producer has been closed") and len() is 0, as
    # confluent-kafka's Producer does. __init__ replaces them (the mapping is read-only).
    _closed = True
    _topics = cast("dict[str, TopicState]", MappingProxyType({}))
    _reports = cast("DeliveryReports", _NeverOpened())
    _pipeline = cast("AckPipeline", _NeverOpened())
    _lock = threading.RLock()  # (only guards the read-only values above)

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any):
        if config is None and not kwargs:
            raise TypeError("expected configuration dict (Producer({}) uses $KSTREAM_CLUSTER or ./data)")
        _check_explicit_idempotence({**(config or {}), **kwargs})
        delivery_timeout_given = _check_transactional_timeouts({**(config or {}), **kwargs})
        options, self._cluster = open_client(PRODUCER_OPTIONS, config, kwargs, "a Producer")
        if options["transactional.id"] and not delivery_timeout_given:
            # librdkafka: a transactional producer's message.timeout.ms defaults to its transaction.timeout.ms.
            options["delivery.timeout.ms"] = options["transaction.timeout.ms"]
            options["config"]["delivery.timeout.ms"] = str(options["delivery.timeout.ms"])
        self._options = options
        self._closed = False
        self._default_delivery: DeliveryCallback | None = options["on_delivery"]  # see _take_batch
        self._acks = options["acks"]
        self._batch_size = options["batch.size"]
        self._linger_s = options["linger.ms"] / 1000.0
        self._max_record_bytes = options["message.max.bytes"]
        self._topics = {}
        self._next_deadline = float("inf")
        self._lingering: dict[tuple[str, int], TopicState] = {}  # open batches, oldest first
        # While produce() holds due batches (see _send_expired): the pipeline's finished-fsync
        # count then (-1: nothing held) and the deadline of the next batch to come due.
        self._held_finished = -1
        self._held_recheck = float("inf")
        self._transactions: ProducerTransactions | None = None
        if options["transactional.id"]:
            self._transactions = ProducerTransactions(self._cluster, options["transactional.id"],
                                                      options["transaction.timeout.ms"])
        # The parts, each in its own module, none holding a reference back to the producer.
        self._encoder = BatchEncoder(options["compression.type"])
        self._reports = DeliveryReports(options, self._linger_s)
        self._router = TopicRouter(self._cluster, options["partitioner"], self._reports.log)
        self._handles = PartitionHandles(self._cluster, options["open.partitions.max"])
        self._sender = BatchSender(self._cluster, options, self._handles, self._transactions)
        self._pipeline = AckPipeline(options["max.in.flight.requests.per.connection"], self._sender,
                                     self._reports)
        # The cache settles the fsyncs in flight before it closes a handle. Through a weak
        # reference: the parts form no cycle (handles -> pipeline -> sender -> handles), so a
        # Producer dropped without close() is freed at once, its fsync threads with it.
        self._handles.before_close = _settle_all(weakref.ref(self._pipeline))
        # A producer dropped without close() (confluent-kafka's has no close(): programs written
        # for it never call ours) releases its files when it is freed, as rd_kafka_destroy would.
        weakref.finalize(self, _release_files, self._topics, self._pipeline, self._cluster).atexit = False
        # Sends what comes due while the application makes no call (a linger.ms deadline, a held
        # batch whose partition's fsync finished); holds the producer weakly (no cycle either).
        self._send_thread = SendThread(weakref.WeakMethod(self._send_pass))
        self._background_error: Exception | None = None  # raised by the next poll()/flush()
        # Over everything above that changes (see the module docstring). Reentrant so that a
        # locked method may call another; user callbacks are never called while it is held.
        self._lock = threading.RLock()

    @property
    def cluster(self) -> Cluster:
        return self._cluster

    @property
    def config(self) -> dict[str, str]:
        """The effective configuration, as confluent-kafka's read-only ``config``: a new dict
        of strings (defaults included, callbacks left out; see kstream.client.config.config_dump)."""
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
            value = to_bytes(value, "value")
            size = len(value)
        if key is not None and key.__class__ is not bytes:
            key = to_bytes(key, "key")
        elif key is None and state.compacted is not None:
            raise keyless_refused(topic, state.compacted, "this record")
        if partition == -1 or partition is None:
            if key is None:
                partition = state.sticky
            else:
                partition = partition_for_key(key, state.num_partitions)
        elif partition.__class__ is not int or not 0 <= partition < state.num_partitions:
            partition = checked_partition(topic, state.num_partitions, partition)
        if key is not None:
            size += len(key)
        if headers is not None:
            headers = headers_list(headers)  # before the batch changes: a bad header queues nothing
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
            batch = state.batches[partition]  # RuntimeError if close() ran meanwhile (CLOSED)
            if batch is None:
                batch = state.batches[partition] = OpenBatch(now + self._linger_s)
                self._lingering[(topic, partition)] = state
                if batch.deadline < self._next_deadline:
                    self._next_deadline = batch.deadline
                    if self._linger_s:  # (linger.ms=0: due now, this call sends or holds it)
                        self._send_thread.wake_at(batch.deadline)
                elif batch.deadline < self._held_recheck:
                    self._held_recheck = batch.deadline  # (while batches are held)
                    if self._linger_s:
                        self._send_thread.wake_at(batch.deadline)
            batch.values.append(value)
            batch.timestamps.append(now if timestamp == 0 else timestamp / 1000.0)
            if key is not None or headers is not None or batch.keys is not None or batch.headers is not None:
                batch.add_extras(key, headers)
            handler = on_delivery if on_delivery is not None else callback
            if handler is not None:
                if batch.callbacks is None:
                    batch.callbacks = {}
                batch.callbacks[len(batch.values) - 1] = handler
            batch.size += size + RECORD_OVERHEAD_BYTES
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
            # Held as produce() holds it: `produce(); poll(0)` per record, confluent-kafka's own
            # loop, otherwise wrote every record alone at acks=all (one fsync each, then a wait
            # for a free slot: about 700 records/s here, whatever the rate asked).
            self._raise_background_error()
            self._send_expired(now, hold_when_full=True)
            self._pipeline.settle(wait=False)
            waiting = not self._reports.pending and timeout
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
                if self._closed:  # another thread's close() flushed everything
                    return 0
                self._raise_background_error()
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
        self._held_finished = -1
        self._pipeline.finished.wake = None  # (nothing held)
        self._pipeline.settle(wait=True)

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
                        self._reports.queue(state.info.name, partition, batch, [],
                                            np.zeros(len(batch.values), np.int64), error)
            self._lingering.clear()
            self._next_deadline = float("inf")
            self._held_finished = -1
            self._pipeline.finished.wake = None  # (nothing held)
        if in_flight:
            self._pipeline.settle(wait=blocking)

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
            return waiting + self._pipeline.records() + self._reports.waiting()

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
            return produce_dicts(self.produce, topic, data, partition,
                                 on_delivery if on_delivery is not None else callback)
        state = self._topics.get(topic) or self._open_topic(topic)
        table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
        planned, now_ms = plan_table(self._encoder, state, table, partition)
        # Everything is checked and cut to fit: from here on only the disk can fail.
        with self._lock:
            self._check_open()
            return self._write_planned(state, planned, now_ms, partition)

    def _write_planned(self, state: TopicState, planned: list[tuple[int, Piece]], now_ms: int,
                       partition: int | None) -> list[BatchResult]:
        for target in sorted({target for target, _ in planned}):  # keep per-partition order with produce()
            if state.batches[target] is not None:
                self._send(state, target)
        results = self._sender.write_planned(state, planned, self._encoder.encode, now_ms)
        if (partition is None or partition == -1) and planned:
            self._router.next_sticky(state)
        return results

    # -- sending --------------------------------------------------------------------------

    def _open_topic(self, topic: str) -> TopicState:
        self._check_open()
        if not isinstance(topic, str):
            raise TypeError(f"topic must be a str, got {type(topic).__name__}")
        with self._lock:
            self._check_open()
            state = self._topics.get(topic)  # another thread may have opened it meanwhile
            if state is None:
                state = self._topics[topic] = self._router.open(topic)
            return state

    def _take_batch(self, state: TopicState, partition: int) -> OpenBatch:
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

    def _send(self, state: TopicState, partition: int) -> None:
        batch = self._take_batch(state, partition)
        del self._lingering[(state.info.name, partition)]
        if partition == state.sticky:
            # KIP-794: move on once batch.size bytes went to the sticky partition, not after
            # every batch: a small batch (linger.ms=0, or one sent while an fsync ran) would
            # otherwise send the next records to another partition, in small batches too.
            state.sticky_bytes += batch.size
            if state.sticky_bytes >= self._batch_size:
                state.sticky_bytes = 0
                self._router.next_sticky(state)
        encoder, sender = self._encoder, self._sender
        stored, timestamps_ms = encoder.stored(state.schema, batch)
        now_ms = int(time.time() * 1000)
        offsets: list[tuple[int, int]] = []
        sent: list[EncodedBatch] = []
        error: KafkaError | None = None
        pipelined = self._acks == "all" and not sender.in_transaction()
        try:
            start = 0
            for piece, payload in encoder.pieces(state, stored):
                encoded = encoder.encode(piece, now_ms, payload)
                offsets.append((start, sender.append(state, partition, encoded, defer_fsync=pipelined,
                                                     sent=sent)))
                start += piece.num_rows
        except KStreamError as err:
            if batch.callbacks is None:
                raise
            error = self._reports.failed(err)
        if error is None and self._reports.stats is not None:
            self._reports.stats.sent(state.info.name, partition, len(batch.values), batch.size)
        if pipelined and error is None:
            self._pipeline.start(sender.partition(state, partition), state.info.name, partition, batch,
                                 offsets, timestamps_ms, sent)
        elif batch.callbacks is not None:
            self._pipeline.settle(wait=True)  # reports keep the order of the batches
            self._reports.queue(state.info.name, partition, batch, offsets, timestamps_ms, error)

    def _send_expired(self, now: float, hold_when_full: bool = False) -> None:
        """Send the batches whose linger.ms passed. Open batches are kept in creation order,
        which is deadline order (linger.ms is the same for all), so this is O(expired).

        ``hold_when_full`` (produce()): a due batch stays open and goes on collecting records
        while its partition still has an acks=all batch being fsynced, or while
        ``max.in.flight`` batches are: Kafka's sender leaves a ready batch in its accumulator
        until it may send, and here a second fsync of the same files could not finish before
        the first anyway (group commit). It goes when the fsync is done or the batch reaches
        batch.size. Without this, linger.ms=0 with acks=all wrote and fsynced nearly every
        record alone. poll() holds it too, except after it waited (a poll(timeout) sends what is
        due when it wakes), and flush() sends regardless, waiting for a slot.

        While batches are held, every produce() comes here; it returns at once unless an fsync
        finished or another batch came due since it last looked (nothing else can free a held
        batch), rather than asking the pipeline again on every record. While a batch is held,
        the fsync that finishes next wakes the background sender, which sends it then, whether
        or not the application calls again."""
        if now < self._next_deadline:
            return
        finished = self._pipeline.finished.count  # (read before looking: a later fsync is seen next time)
        if hold_when_full and finished == self._held_finished and now < self._held_recheck:
            return
        due: list[tuple[TopicState, int]] = []
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
            if hold_when_full and self._pipeline.must_hold(state.info.name, partition):
                held = True  # (due still: the next produce() or the background sender looks again)
                continue
            self._send(state, partition)
        finished_syncs = self._pipeline.finished
        if held:
            # The next fsync to finish wakes the background sender, which sends what is held then;
            # one that finished since ``finished`` was read (maybe before this line) wakes it now.
            finished_syncs.wake = self._send_thread.wake
            if finished_syncs.count != finished:
                self._send_thread.wake()
        else:
            finished_syncs.wake = None  # (nothing held: an fsync wakes nobody)
        self._next_deadline = now if held else next_deadline
        self._held_finished = finished if held else -1
        self._held_recheck = next_deadline

    def _send_pass(self) -> float | None:
        """The background sender's pass (:mod:`~kstream.client.producer_send_thread`): what
        poll(0) does, without its callbacks: send the batches due (holding those whose
        partition is still being fsynced) and settle the batches fsynced; returns when to look
        again (None: closed). An error with nowhere to be reported (a batch without delivery
        callbacks that fails, or anything unexpected) is raised by the application's next poll()
        or flush() (or close())."""
        with self._lock:
            if self._closed:
                return None
            try:
                self._send_expired(time.time(), hold_when_full=True)
                self._pipeline.settle(wait=False)
            except Exception as err:  # (any: on this thread it would only end the thread, unseen)
                if self._background_error is None:
                    self._background_error = err
            return self._held_recheck if self._held_finished >= 0 else self._next_deadline

    def _raise_background_error(self) -> None:
        """Raise (once) the error of a batch the background sender sent and that failed."""
        error, self._background_error = self._background_error, None
        if error is not None:
            raise error

    def _serve_reports(self) -> int:
        """Serve what is queued for the callbacks (:meth:`DeliveryReports.serve`), without the lock."""
        return self._reports.serve(self._lock, self._stats_document)

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
            self._held_finished = -1
            self._pipeline.finished.wake = None  # (nothing held)
            transactions.end(commit=False)

    def bind_sink_transaction(self, writer: Any) -> None:
        """Internal (the Spark sink): write every frame into the task's transaction."""
        with self._lock:
            self._sender.sink_txn = writer

    def _transactional(self) -> ProducerTransactions:
        self._check_open()
        if self._transactions is None:
            raise KStreamError("this producer has no transactional.id; set one to use transactions")
        return self._transactions

    def _stats_document(self) -> dict[str, Any]:
        return self._reports.stats_document(self._topics.values(), len(self))

    def _check_open(self) -> None:
        if self._closed:
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
            if self._closed:
                return True
            self._flush_locked()
        self._serve_reports()  # (its callbacks may produce: sent below)
        with self._lock:
            if self._closed:
                return True
            self._flush_locked()
            self._closed = True
            for state in self._topics.values():
                state.batches = CLOSED  # for produce() calls already past their first check
            self._handles.close_all(self._topics.values())
            self._topics.clear()
            self._send_thread.stop()
            self._pipeline.shutdown()
            if self._transactions is not None:
                self._transactions.close()
            self._cluster.close()
        self._serve_reports()
        self._raise_background_error()  # (closed all the same)
        return True

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""kstream -> Apache Kafka, at least once, or exactly once with Kafka transactions.

The contract (at least once, the default): every record committed in a kstream partition (read_committed) reaches the
Kafka topic of the same name and partition, in order, with its key, value, headers and
timestamp, at least once: a mirror killed between a Kafka write and its commit writes
those records again when it restarts (Kafka's idempotent producer removes its own
retries, not a restarted mirror's re-send).

How: a kstream consumer of the group ``__mirror.<name>`` that only ``assign()``s reads
Arrow batches (``poll_batch``); a confluent-kafka producer with ``acks=all`` and
``enable.idempotence=true`` writes each record to the same partition. Every
``chunk_records`` records (or when the source is idle) the mirror calls ``flush()``,
checks that every delivery succeeded, and only then commits the consumer's positions as
the group's offsets in kstream. A failed delivery stops the mirror before the commit.

Offset syncs (MM2's OffsetSync, for the translation of group offsets, offset_syncs.py): the
record at the start of each partition's run, the first after a gap in the kstream offsets
(markers, aborted or compacted records) and the last of each batch sent carry a delivery
callback of their own that receives their Kafka offset; after a flush confirmed them, their
``(kstream offset, Kafka offset)`` syncs are appended to the kstream topic
``__mirror.<name>.offset-syncs`` in the source cluster (as MM2 keeps its syncs beside the
source by default), and only then are the positions committed.

Exactly once (``exactly_once``, ``--exactly-once``; kafka_transactions.py, KIP-618's way):
the producer is transactional (``transactional.id`` ``__mirror.<name>``) and each chunk is one
Kafka transaction: the records, then (after flush() confirmed them and their offset syncs are
appended in kstream) the positions as the Kafka group ``__mirror.<name>``'s offsets, sent in
the same transaction, then the commit; the kstream group's commit follows. On start,
init_transactions() fences and aborts an earlier run, and each partition starts at the greater
of its Kafka and its kstream position (the kstream one is ahead only after an at-least-once run
of the same name, which committed it after Kafka confirmed the records); a kstream group behind
Kafka (a kill between the two commits) is moved up to it first. Each transaction's first record
per partition is a sync too: Kafka's commit markers take an offset between two chunks.
Crash points (tests, ``KSTREAM_CRASH_AT``): ``mirror.into-kafka.flushed`` (records confirmed,
syncs written; with exactly_once mid-transaction), ``mirror.into-kafka.kafka-committed``
(exactly_once: the Kafka transaction committed, the kstream group not yet),
``mirror.into-kafka.committed`` (the chunk done: between chunks).

Typed kstream topics (typed_values.py): each record's value columns become one JSON object, and
two headers (``kstream.value.encoding``, ``kstream.value.schema``) follow the record's own.
Record timestamps are sent as CreateTime; a Kafka topic with
``message.timestamp.type=LogAppendTime`` replaces them with its append time.
"""

from __future__ import annotations

import threading
from typing import Any, TextIO

import numpy as np
import pyarrow as pa

from kstream.client.producer import Producer
from kstream.log.storage.faults import crash_point
from kstream.message import OFFSET_BEGINNING, TopicPartition
from kstream.mirror.errors import MirrorError
from kstream.mirror.kafka_side import KafkaSide
from kstream.mirror.kafka_transactions import KafkaTransactions
from kstream.mirror.kstream_side import KstreamSide, committed_positions
from kstream.mirror.offset_syncs import OffsetSync
from kstream.mirror.options import OFFSET_SYNCS_CONFIG, MirrorOptions
from kstream.mirror.progress import Progress
from kstream.mirror.status import heartbeats
from kstream.mirror.topic_configs import kstream_to_kafka
from kstream.mirror.typed_values import JsonValues, value_schema

TopicPartitionKey = tuple[str, int]


class IntoKafka:
    """One mirror run from a kstream cluster (``options.source``) into Kafka (``options.target``)."""

    def __init__(self, options: MirrorOptions, stream: TextIO | None = None):
        assert not options.source.is_kafka and options.target.is_kafka
        self.options = options
        self.progress = Progress(options.name, stream, options.progress_interval_s)
        # the producer's delivery callback is this dict's __setitem__ (C, no Python call per
        # record): a success sets [None], a failure [its KafkaError]; cleared at each flush
        self._delivered: dict[Any, Any] = {}
        # records whose Kafka offset becomes a sync: (topic, partition, kstream offset, their own
        # delivery dict, filled the same way), since the last flush
        self._sync_records: list[tuple[str, int, int, dict[Any, Any]]] = []
        self._last_sent: dict[TopicPartitionKey, int] = {}  # kstream offset of the last record sent, this run
        self._transactions: KafkaTransactions | None = None  # with options.exactly_once
        self._typed: dict[str, JsonValues] = {}  # the typed topics copied, by name

    def prepare(self, kstream: KstreamSide, kafka: KafkaSide) -> dict[str, int]:
        """The topics to copy with their partition counts, made on Kafka where missing.
        Everything is checked before anything is created: a bad input writes nothing."""
        topics = kstream.selected(self.options)
        details = {topic: kstream.describe(topic) for topic in topics}
        # a typed topic's values become JSON; a column type without an encoding is refused here
        typed = {topic: JsonValues(topic, d.schema) for topic, d in details.items() if d.schema is not None}
        existing = kafka.partition_counts()
        for topic, count in topics.items():
            if topic in existing and existing[topic] != count:
                raise MirrorError(f"topic {topic!r} has {count} partitions in kstream cluster {kstream.path} but "
                                  f"{existing[topic]} on Apache Kafka at {kafka.bootstrap}; a mirror keeps partition "
                                  "numbers, so make the counts equal (or mirror into another topic)")
        for topic, count in topics.items():
            if topic not in existing:
                config, _ = kstream_to_kafka(details[topic].config)
                kafka.create_topic(topic, count, config)
        kstream.create_topic(self.options.offset_syncs_topic, 1, OFFSET_SYNCS_CONFIG)
        self._typed = typed
        return topics

    def run(self, stop: threading.Event | None = None) -> Progress:
        """Copy until ``stop`` is set (continuous) or, with ``until_end``, up to each partition's
        last stable offset at start. What was sent is flushed and committed before returning."""
        stop = stop or threading.Event()
        options = self.options
        kstream = KstreamSide(options.source.address)
        kafka = KafkaSide(options.target.address, options.timeout_s)
        try:
            topics = self.prepare(kstream, kafka)
            partitions = [(t, p) for t, n in topics.items() for p in range(n)]
            with heartbeats(self.progress, kstream.path, options, "into-kafka"):  # into the console's view
                consumer = kstream.group_consumer(options.group, **{"max.poll.records": options.chunk_records})
                try:
                    self._copy(kstream, kafka, consumer, partitions, stop)
                finally:
                    consumer.close()
        finally:
            kstream.close()
        self.progress.maybe_print(None, force=True)
        return self.progress

    def _copy(self, kstream: KstreamSide, kafka: KafkaSide, consumer: Any, partitions: list[TopicPartitionKey],
              stop: threading.Event) -> None:
        options, progress = self.options, self.progress
        positions = {tp: offset for tp, (offset, _) in committed_positions(consumer, partitions).items()}
        transactional_id = options.transactional_id if options.exactly_once else None
        producer = kafka.producer(self._delivered.__setitem__, transactional_id=transactional_id)
        self._syncs_producer = Producer({"cluster": kstream.path})
        try:
            if options.exactly_once:
                self._transactions = KafkaTransactions(kafka, producer, options)
                in_kafka = self._transactions.start(partitions)
                self.progress.targets.update(self._transactions.kafka_offsets)
                positions = self._reconcile(consumer, positions, in_kafka)
            progress.positions.update(positions)
            progress.ends.update(kstream.end_offsets(partitions))
            ends = dict(progress.ends) if options.until_end else None
            todo = [tp for tp in partitions if ends is None or positions.get(tp, 0) < ends[tp]]
            if todo:
                consumer.assign([TopicPartition(t, p, positions.get((t, p), OFFSET_BEGINNING)) for t, p in todo])
                self._loop(kstream, producer, consumer, set(todo), ends, stop)
        except BaseException as err:
            transactions = self._transactions
            if transactions is not None:
                # a fenced producer fails in its callbacks and poll() too (confluent-kafka may raise a
                # SystemError there): the abort's own error says whether a newer run took over
                failure = transactions.abort()
                if failure is not None and transactions.is_fenced(failure):
                    raise transactions.fenced_error() from err
            raise
        finally:
            if self._transactions is not None:
                self._transactions.close()
            producer.flush(options.timeout_s)
            self._syncs_producer.close()

    def _loop(self, kstream: KstreamSide, producer: Any, consumer: Any, remaining: set[TopicPartitionKey],
              ends: dict[TopicPartitionKey, int] | None, stop: threading.Event) -> None:
        options, progress, transactions = self.options, self.progress, self._transactions
        pending: dict[TopicPartitionKey, int] = {}  # records sent since the last commit, per partition
        while remaining and not stop.is_set():
            batch = consumer.poll_batch(options.chunk_records, options.poll_timeout_s)
            if batch is not None:
                self._send(producer, batch, ends, pending)
            if pending and (batch is None or sum(pending.values()) >= options.chunk_records
                            or (transactions is not None and transactions.due())):
                self._flush_and_commit(producer, consumer, pending, ends)
            if ends is not None:
                for tp in consumer.position([TopicPartition(t, p) for t, p in remaining]):
                    if tp.offset >= ends[(tp.topic, tp.partition)]:
                        remaining.discard((tp.topic, tp.partition))
            progress.maybe_print(kstream.end_offsets)
        if pending:
            self._flush_and_commit(producer, consumer, pending, ends)

    def _reconcile(self, consumer: Any, in_kstream: dict[TopicPartitionKey, int],
                   in_kafka: dict[TopicPartitionKey, int]) -> dict[TopicPartitionKey, int]:
        """Each partition's start: the greater of its kstream and its Kafka position. Both only
        ever name records Kafka has (the kstream group is written after Kafka's commit, or after
        an at-least-once run's confirmed flush); a kstream group behind Kafka (a kill between the
        two commits) is moved up to it, so `kstream mirror offsets` and the progress agree."""
        behind = [TopicPartition(t, p, offset) for (t, p), offset in sorted(in_kafka.items())
                  if offset > in_kstream.get((t, p), -1)]
        if behind:
            consumer.commit(offsets=behind, asynchronous=False)
        return {**in_kstream, **{(tp.topic, tp.partition): tp.offset for tp in behind}}

    def _send(self, producer: Any, batch: Any, ends: dict[TopicPartitionKey, int] | None,
              pending: dict[TopicPartitionKey, int]) -> None:
        """Produce one Arrow batch (one partition) to Kafka, each record to its own partition.
        With ``until_end``, records at or past the end at start are not this run's."""
        n = batch.num_rows
        topic, partition = batch.column("topic")[0].as_py(), batch.column("partition")[0].as_py()
        offsets = batch.column("offset").to_numpy()
        if ends is not None and n and offsets[-1] >= ends[(topic, partition)]:
            n = int((offsets < ends[(topic, partition)]).sum())  # offsets ascend: a prefix is this run's
        if n == 0:
            return
        if self._transactions is not None:
            self._transactions.begin()  # the chunk's transaction, at its first record
        stamps = batch.column("timestamp")
        if pa.types.is_timestamp(stamps.type):
            stamps = stamps.cast(pa.timestamp("ms", tz=stamps.type.tz)).cast(pa.int64())
        keys = batch.column("key").slice(0, n).to_pylist()
        headers = _headers(batch.column("headers").slice(0, n))
        typed = self._typed.get(topic)
        if typed is None:
            values = batch.column("value").slice(0, n).to_pylist()
        else:
            schema = value_schema(batch.schema)
            if schema != typed.schema:  # the schema evolved since the start: its new columns
                typed = self._typed[topic] = JsonValues(topic, schema)
            values = typed.encode(batch.slice(0, n), partition, int(offsets[0]))
            headers = [typed.headers if h is None else [*h, *typed.headers] for h in headers]
        callbacks = self._sync_callbacks(topic, partition, offsets[:n])
        produce = producer.produce
        sent = 0
        for key, value, stamp, header, callback in zip(keys, values, stamps.slice(0, n).to_pylist(), headers,
                                                       callbacks, strict=True):
            while True:
                try:
                    produce(topic, value, key, partition, timestamp=stamp or 0, headers=header, on_delivery=callback)
                    break
                except BufferError:  # the producer's queue is full: let it send, then go on
                    producer.poll(0.05)
            sent += 1
        pending[(topic, partition)] = pending.get((topic, partition), 0) + sent
        producer.poll(0)

    def _sync_callbacks(self, topic: str, partition: int, offsets: np.ndarray) -> list[Any]:
        """Each record's own delivery callback: a dict's __setitem__ for the records that become
        syncs (the first of the run, the first after a gap, the last), None (the producer's) else."""
        key = (topic, partition)
        callbacks: list[Any] = [None] * len(offsets)
        previous = self._last_sent.get(key)
        marks = set((np.flatnonzero(np.diff(offsets) != 1) + 1).tolist())
        if previous is None or int(offsets[0]) != previous + 1:
            marks.add(0)
        marks.add(len(offsets) - 1)
        for i in sorted(marks):
            box: dict[Any, Any] = {}
            callbacks[i] = box.__setitem__
            self._sync_records.append((topic, partition, int(offsets[i]), box))
        self._last_sent[key] = int(offsets[-1])
        return callbacks

    def _flush_and_commit(self, producer: Any, consumer: Any, pending: dict[TopicPartitionKey, int],
                          ends: dict[TopicPartitionKey, int] | None) -> None:
        """At least once: the kstream positions are committed only once Kafka confirmed every
        record, and after the offset syncs of what was sent are appended. Exactly once: the
        same, with the Kafka transaction (records and positions) committed in between."""
        transactions = self._transactions
        left = producer.flush(self.options.timeout_s)
        errors = [(e, m) for d in (self._delivered, *(box for *_, box in self._sync_records)) for e, m in d.items()
                  if e is not None]
        if transactions is not None and any(transactions.is_fenced(e) for e, _ in errors):
            raise transactions.fenced_error()
        if left or errors:
            why = "; ".join(f"{m.topic()}[{m.partition()}]: {e.str()}" for e, m in errors[:10]) or "flush timed out"
            raise MirrorError(f"Apache Kafka at {self.options.target.address} did not confirm "
                              f"{left or len(errors)} record(s) ({why}); "
                              "nothing past the last commit is marked copied: run the mirror again")
        self._delivered.clear()
        kafka_ends = self._write_syncs()
        crash_point("mirror.into-kafka.flushed")
        positions = consumer.position([TopicPartition(t, p) for t, p in pending])
        if ends is not None:  # records read past the end at start were not sent: the next run's
            positions = [TopicPartition(tp.topic, tp.partition, min(tp.offset, ends[(tp.topic, tp.partition)]))
                         for tp in positions]
        if transactions is not None:
            transactions.commit([(tp.topic, tp.partition, kafka_ends[(tp.topic, tp.partition)], tp.offset)
                                 for tp in positions])
            self.progress.transactions += 1
            self._last_sent.clear()  # the next transaction's first record per partition is a sync
            crash_point("mirror.into-kafka.kafka-committed")
        consumer.commit(offsets=positions, asynchronous=False)
        crash_point("mirror.into-kafka.committed")
        for tp in positions:
            self.progress.copied((tp.topic, tp.partition), pending[(tp.topic, tp.partition)], tp.offset,
                                 kafka_ends.get((tp.topic, tp.partition)))
        pending.clear()

    def _write_syncs(self) -> dict[TopicPartitionKey, int]:
        """The confirmed sync records as offset syncs in the kstream source cluster; returns each
        partition's Kafka offset after its last record sent (the last record of a batch is a sync)."""
        syncs = [OffsetSync(topic, partition, source_offset, box[None].offset())
                 for topic, partition, source_offset, box in self._sync_records]
        self._sync_records.clear()
        if syncs:
            self._syncs_producer.produce_batch(self.options.offset_syncs_topic, pa.table({
                "key": [f"{s.topic}/{s.partition}".encode() for s in syncs],
                "value": [s.to_json() for s in syncs]}), partition=0)
        ends: dict[TopicPartitionKey, int] = {}
        for sync in syncs:
            key = (sync.topic, sync.partition)
            ends[key] = max(ends.get(key, 0), sync.target_offset + 1)
        return ends


def _headers(column: pa.Array) -> list[list[tuple[str, bytes | None]] | None]:
    """A headers column as produce()'s lists of (key, value), None where a record has none;
    through the flat children (a struct per header to a dict would cost a dict per header)."""
    if column.null_count == len(column):
        return [None] * len(column)
    flat = column.flatten()  # the headers of the (sliced) rows, in order
    pairs = list(zip(flat.field("key").to_pylist(), flat.field("value").to_pylist(), strict=True))
    bounds = column.offsets.to_numpy()
    bounds = (bounds - bounds[0]).tolist()
    return [pairs[bounds[i]:bounds[i + 1]] or None for i in range(len(column))]

"""Apache Kafka -> kstream, exactly once.

The contract (MM2's MirrorSourceTask with KIP-618's exactly-once, on kstream's own
transactions): a record committed in a source partition appears in the kstream topic of
the same name and partition exactly once, in source order, with its key, value, headers
and timestamp, whenever and however often the mirror is killed and restarted.

How: the mirror reads Kafka with a read_committed consumer that only ``assign()``s and
never commits on Kafka. Its positions (the next Kafka offset to copy, per source
partition) are kept in the kstream group ``__mirror.<name>``, written by
``send_offsets_to_transaction`` in the same kstream transaction as the records they
cover: a transaction is committed with both or with neither. A kstream group offset is
an offset of the kstream partition (at most its log end), so the committed offset is the
kstream side's next offset and the Kafka position rides in its metadata
(``{"source_offset": N}``, :func:`position_metadata`): each commit is also the
partition's latest offset sync. On start the mirror's
transactional producer (``transactional.id`` ``__mirror.<name>``) fences and aborts
whatever a killed run left open, the mirror reads the group's committed offsets and
seeks there. Nothing between a commit and the next read of those offsets can lose or
repeat a record.

Offsets: kstream gives each appended record the next offset of its partition (and its own
transaction markers take one each), so Kafka's offsets (with gaps at markers and
compacted records) are not kept 1:1. The translation is recorded as offset syncs, as
MM2's OffsetSync: a record (source offset, target offset) per partition in the kstream
topic ``__mirror.<name>.offset-syncs``, written in the same transaction, whenever
``source - target`` differs from the partition's last sync (docs/MIRROR.md).

Timestamps: each record keeps its source timestamp as its kstream timestamp; a Kafka
LogAppendTime timestamp (the source broker's append time) is kept as the record's
CreateTime in kstream, as MM2 does (the kstream topic's own message.timestamp.type
still applies).

Typed targets: a kstream topic that exists with a schema before the mirror starts gets each
Kafka record's value decoded as one JSON object of its columns (typed_values.py, the encoding
the mirror writes into Kafka); a record that does not decode stops the mirror before its chunk
commits. Topics the mirror creates are bytes topics.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.compute as pc

from kstream.client.producer import Producer
from kstream.log.storage.records import HEADER_TYPE
from kstream.message import TopicPartition
from kstream.mirror.errors import MirrorError
from kstream.mirror.kafka_side import KafkaSide
from kstream.mirror.kstream_side import KstreamSide, committed_positions
from kstream.mirror.options import OFFSET_SYNCS_CONFIG, MirrorOptions
from kstream.mirror.progress import Progress
from kstream.mirror.status import heartbeats
from kstream.mirror.topic_configs import kafka_to_kstream
from kstream.mirror.typed_values import JsonValues, strip_value_headers

log = logging.getLogger(__name__)

TopicPartitionKey = tuple[str, int]
_SCHEMA = pa.schema([pa.field("key", pa.binary()), pa.field("value", pa.binary()),
                     pa.field("timestamp", pa.int64()), pa.field("headers", HEADER_TYPE)])


class IntoKstream:
    """One mirror run from Kafka (``options.source``) into a kstream cluster (``options.target``)."""

    def __init__(self, options: MirrorOptions, stream: TextIO | None = None):
        assert options.source.is_kafka and not options.target.is_kafka
        self.options = options
        self.progress = Progress(options.name, stream, options.progress_interval_s)
        self._last_delta: dict[TopicPartitionKey, int] = {}  # source - target of each partition's last sync
        self._typed: dict[str, JsonValues] = {}  # the typed target topics, by name

    def prepare(self, kafka: KafkaSide, kstream: KstreamSide) -> dict[str, int]:
        """The topics to copy with their partition counts, made in kstream where missing.
        Everything is checked before anything is created: a bad input writes nothing."""
        topics = kafka.selected(self.options)
        existing = kstream.partition_counts()
        typed: dict[str, JsonValues] = {}
        for topic, count in topics.items():
            if topic in existing and existing[topic] != count:
                raise MirrorError(f"topic {topic!r} has {count} partitions on Apache Kafka at {kafka.bootstrap} but "
                                  f"{existing[topic]} in kstream cluster {kstream.path}; a mirror keeps partition "
                                  "numbers, so make the counts equal (or mirror into another cluster)")
            schema = kstream.describe(topic).schema if topic in existing else None
            if schema is not None:  # its values are decoded from JSON; a type without an encoding: refused here
                typed[topic] = JsonValues(topic, schema)
        for topic, count in topics.items():
            if topic not in existing:
                config, left_out = kafka_to_kstream(kafka.explicit_configs(topic))
                if left_out:
                    log.info("topic %r: Kafka configs not copied into kstream: %s", topic, ", ".join(left_out))
                kstream.create_topic(topic, count, config)
        if self.options.offset_syncs_topic not in existing:
            kstream.create_topic(self.options.offset_syncs_topic, 1, OFFSET_SYNCS_CONFIG)
        self._typed = typed
        return topics

    def run(self, stop: threading.Event | None = None) -> Progress:
        """Copy until ``stop`` is set (continuous) or, with ``until_end``, up to each partition's
        last stable offset at start. A chunk in flight is always committed before returning."""
        stop = stop or threading.Event()
        options = self.options
        kafka = KafkaSide(options.source.address, options.timeout_s)
        kstream = KstreamSide(options.target.address, target=True)
        try:
            topics = self.prepare(kafka, kstream)
            partitions = [(t, p) for t, n in topics.items() for p in range(n)]
            with heartbeats(self.progress, kstream.path, options, "into-kstream"):  # into the console's view
                group_consumer = kstream.group_consumer(options.group)
                try:
                    self._copy(kafka, kstream, group_consumer, partitions, stop)
                finally:
                    group_consumer.close()
        finally:
            kstream.close()
        self.progress.maybe_print(None, force=True)
        return self.progress

    def _copy(self, kafka: KafkaSide, kstream: KstreamSide, group_consumer: Any,
              partitions: list[TopicPartitionKey], stop: threading.Event) -> None:
        options, progress = self.options, self.progress
        committed = committed_positions(group_consumer, partitions)
        found = {tp: source_position(meta) for tp, (_, meta) in committed.items()}
        progress.targets.update({tp: offset for tp, (offset, _) in committed.items()})  # the kstream next offsets
        positions = {tp: offset for tp, offset in found.items() if offset is not None}
        progress.positions.update(positions)
        progress.ends.update(kafka.end_offsets(partitions))
        ends = dict(progress.ends) if options.until_end else None
        todo = [tp for tp in partitions if ends is None or positions.get(tp, 0) < ends[tp]]
        if not todo:
            return
        ck = kafka.ck
        producer = Producer({"cluster": kstream.path, "transactional.id": options.transactional_id})
        consumer = kafka.consumer(options.group)
        try:
            producer.init_transactions()  # fences a killed run's producer and aborts what it left open
            metadata = group_consumer.consumer_group_metadata()
            consumer.assign([ck.TopicPartition(t, p, positions.get((t, p), ck.OFFSET_BEGINNING)) for t, p in todo])
            remaining = set(todo)
            while remaining and not stop.is_set():
                messages = consumer.consume(options.chunk_records, options.poll_timeout_s)
                chunk = self._chunk(messages, ends, remaining)
                if chunk:
                    self._commit_chunk(producer, chunk, metadata)
                progress.maybe_print(kafka.end_offsets)
        finally:
            consumer.close()
            producer.close()

    def _chunk(self, messages: list[Any], ends: dict[TopicPartitionKey, int] | None,
               remaining: set[TopicPartitionKey]) -> dict[TopicPartitionKey, list[Any]]:
        """The consumed records by partition, in order; end-of-partition events move positions
        (past markers) and, with ``until_end``, finish partitions at their end."""
        ck_error = None
        chunk: dict[TopicPartitionKey, list[Any]] = {}
        for message in messages:
            tp = (message.topic(), message.partition())
            error = message.error()
            if error is not None:
                if error.code() == _partition_eof(error):
                    self.progress.at(tp, message.offset())
                    if ends is not None and message.offset() >= ends.get(tp, 0):
                        remaining.discard(tp)
                    continue
                ck_error = error
                break
            if ends is not None and message.offset() >= ends[tp]:
                remaining.discard(tp)  # past the end at start: not this run's
                continue
            chunk.setdefault(tp, []).append(message)
            if ends is not None and message.offset() + 1 >= ends[tp]:
                remaining.discard(tp)
        if ck_error is not None:
            raise MirrorError(f"reading Apache Kafka failed: {ck_error.str()} (code {ck_error.name()})")
        return chunk

    def _commit_chunk(self, producer: Producer, chunk: dict[TopicPartitionKey, list[Any]], metadata: Any) -> None:
        """One kstream transaction: the records, their offset syncs, the source positions."""
        producer.begin_transaction()
        try:
            syncs: list[dict[str, Any]] = []
            positions: list[TopicPartition] = []
            for (topic, partition), messages in chunk.items():
                typed = self._typed.get(topic)
                table = _table(messages) if typed is None else _typed_table(typed, topic, partition, messages)
                results = producer.produce_batch(topic, table, partition=partition)
                syncs.extend(self._syncs(topic, partition, messages, _target_offsets(results)))
                next_target = results[-1].base_offset + results[-1].record_count
                positions.append(TopicPartition(topic, partition, next_target,
                                                metadata=position_metadata(messages[-1].offset() + 1)))
            if syncs:
                producer.produce_batch(self.options.offset_syncs_topic, pa.table({
                    "key": [f"{s['topic']}/{s['partition']}".encode() for s in syncs],
                    "value": [json.dumps(s, sort_keys=True).encode() for s in syncs]}), partition=0)
            producer.send_offsets_to_transaction(positions, metadata)
            producer.commit_transaction()
        except BaseException:
            _abort_quietly(producer)
            raise
        positions_by = {(tp.topic, tp.partition): tp.offset for tp in positions}
        for (topic, partition), messages in chunk.items():
            self.progress.copied((topic, partition), len(messages), messages[-1].offset() + 1,
                                 positions_by[(topic, partition)])
        self.progress.transactions += 1

    def _syncs(self, topic: str, partition: int, messages: list[Any], targets: Iterator[int]
               ) -> Iterator[dict[str, Any]]:
        """MM2's rule: a sync when a partition's translation (source - target) changes."""
        key = (topic, partition)
        for message, target in zip(messages, targets, strict=True):
            delta = message.offset() - target
            if self._last_delta.get(key) != delta:
                self._last_delta[key] = delta
                yield {"topic": topic, "partition": partition, "source_offset": message.offset(),
                       "target_offset": target}


def position_metadata(source_offset: int) -> str:
    """The group offset metadata that carries a partition's Kafka position."""
    return json.dumps({"source_offset": source_offset})


def source_position(metadata: str | None) -> int | None:
    """The Kafka position in a mirror group offset's metadata; None if it carries none."""
    if not metadata:
        return None
    try:
        value = json.loads(metadata)["source_offset"]
    except (ValueError, KeyError, TypeError) as err:
        raise MirrorError(f"the mirror group's committed offset metadata {metadata!r} carries no Kafka "
                          "position; was the group written by something other than this mirror?") from err
    if not isinstance(value, int) or value < 0:
        raise MirrorError(f"the mirror group's committed offset metadata {metadata!r} has a bad source_offset")
    return value


def _table(messages: list[Any]) -> pa.Table:
    """Kafka records as a kstream table: key, value, timestamp (ms), headers. Comprehensions, not
    one loop: this runs once per record copied."""
    stamps = pa.array([m.timestamp()[1] for m in messages], pa.int64())
    if len(stamps) and pc.min(stamps).as_py() < 0:  # TIMESTAMP_NOT_AVAILABLE (-1): no timestamp
        stamps = pc.if_else(pc.less(stamps, 0), pa.scalar(None, pa.int64()), stamps)
    return pa.table([pa.array([m.key() for m in messages], pa.binary()),
                     pa.array([m.value() for m in messages], pa.binary()), stamps,
                     pa.array([m.headers() for m in messages], HEADER_TYPE)], schema=_SCHEMA)


def _typed_table(typed: JsonValues, topic: str, partition: int, messages: list[Any]) -> pa.Table:
    """Kafka records as rows of a typed kstream topic: key, the columns decoded from each JSON
    value, timestamp (ms), headers (without the ``kstream.value.*`` ones)."""
    plain = _table(messages)
    headers = [m.headers() for m in messages]
    columns = typed.decode([m.value() for m in messages], headers,
                           lambda i: f"Apache Kafka record {topic}[{partition}] offset {messages[i].offset()}")
    return pa.table([plain.column("key"), *columns.columns, plain.column("timestamp"),
                     pa.array([strip_value_headers(h) for h in headers], HEADER_TYPE)],
                    names=["key", *columns.column_names, "timestamp", "headers"])


def _target_offsets(results: list[Any]) -> Iterator[int]:
    for result in results:
        yield from range(result.base_offset, result.base_offset + result.record_count)


def _partition_eof(error: Any) -> int:
    from confluent_kafka import KafkaError  # the module is loaded already (the caller has a message)

    return int(KafkaError._PARTITION_EOF)


def _abort_quietly(producer: Producer) -> None:
    """Abort after a failure; a failing abort is logged, the first error is the one raised."""
    try:
        producer.abort_transaction()
    except Exception as err:
        log.warning("abort_transaction() after a failed mirror chunk failed too: %s", err)

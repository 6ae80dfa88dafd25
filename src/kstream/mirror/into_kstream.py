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

Throughput: each chunk's transaction is committed on a committer thread while the copying
thread reads the next records (a pipeline of depth one: transactions stay one at a time and
in order, only this thread and then the committer touch the producer); records read but not
committed when the mirror dies are read again from the committed positions, so the contract
above is unchanged. A chunk is one ``consume()`` batch, or what was read while the previous
transaction committed, at most ``chunk_records`` (and closed at ``chunk_bytes``).

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
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, TextIO

import numpy as np
import pyarrow as pa

from kstream.client.producer import Producer
from kstream.log.storage.records import HEADER_TYPE
from kstream.message import TopicPartition
from kstream.mirror.errors import MirrorError
from kstream.mirror.kafka_batches import Chunk, split_batch
from kstream.mirror.kafka_side import KafkaSide
from kstream.mirror.kstream_side import KstreamSide, committed_positions
from kstream.mirror.options import OFFSET_SYNCS_CONFIG, MirrorOptions
from kstream.mirror.progress import Progress
from kstream.mirror.status import heartbeats
from kstream.mirror.topic_configs import kafka_to_kstream
from kstream.mirror.typed_values import JsonValues, strip_value_headers

log = logging.getLogger(__name__)

TopicPartitionKey = tuple[str, int]

FIRST_GUESS_RECORD_BYTES = 1024
"""A record's bytes assumed before the first is read: a consume() asks for at most as many
records as the room left under ``chunk_bytes`` holds at this size (later: at the sizes read)."""


class IntoKstream:
    """One mirror run from Kafka (``options.source``) into a kstream cluster (``options.target``).

    ``overlap_commits``: a chunk's kstream transaction is committed on a thread of its own while
    the next chunk is read from Kafka (a pipeline of depth one: one transaction at a time, in
    order); False commits each chunk before reading on (the bench compares the two)."""

    overlap_commits = True

    def __init__(self, options: MirrorOptions, stream: TextIO | None = None):
        assert options.source.is_kafka and not options.target.is_kafka
        self.options = options
        self.progress = Progress(options.name, stream, options.progress_interval_s)
        self._last_delta: dict[TopicPartitionKey, int] = {}  # source - target of each partition's last sync
        self._typed: dict[str, JsonValues] = {}  # the typed target topics, by name
        self._record_bytes = FIRST_GUESS_RECORD_BYTES  # the mean size of the records read last

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
                typed[topic] = JsonValues(topic, schema, into_kafka=False)
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
        committer = ThreadPoolExecutor(1, thread_name_prefix=f"mirror-{options.name}-commit")
        in_flight: Future[Chunk] | None = None
        try:
            producer.init_transactions()  # fences a killed run's producer and aborts what it left open
            metadata = group_consumer.consumer_group_metadata()
            consumer.assign([ck.TopicPartition(t, p, positions.get((t, p), ck.OFFSET_BEGINNING)) for t, p in todo])
            remaining = set(todo)
            eof_code = _partition_eof()
            chunk = Chunk()
            while remaining and not stop.is_set():
                if in_flight is not None and in_flight.done():
                    self._committed(in_flight.result())  # the progress never waits for the next chunk
                    in_flight = None
                messages = consumer.consume(self._want(chunk), options.poll_timeout_s)
                self._gather(messages, eof_code, ends, remaining, chunk)
                full = chunk.count >= options.chunk_records or chunk.nbytes >= options.chunk_bytes
                if chunk.count and (not self.overlap_commits or full or in_flight is None or in_flight.done()):
                    if in_flight is not None:
                        self._committed(in_flight.result())
                        in_flight = None
                    if self.overlap_commits:
                        in_flight = committer.submit(self._commit_chunk, producer, chunk, metadata)
                    else:
                        self._committed(self._commit_chunk(producer, chunk, metadata))
                    chunk = Chunk()
                if not chunk.count and chunk.eofs and in_flight is None:
                    self._committed(chunk)  # only end-of-partition events, nothing before them uncommitted
                    chunk = Chunk()
                progress.maybe_print(kafka.end_offsets)
            if in_flight is not None:
                self._committed(in_flight.result())
                in_flight = None
            if chunk.count:
                self._committed(self._commit_chunk(producer, chunk, metadata))
            elif chunk.eofs:
                self._committed(chunk)
        finally:
            if in_flight is not None:
                wait([in_flight])  # never close the producer under a commit; the first error is the one raised
            committer.shutdown()
            consumer.close()
            producer.close()

    def _want(self, chunk: Chunk) -> int:
        """How many records the next consume() asks for: never more than ``chunk_records`` leaves
        room for, nor (at the size of the records read last) more than ``chunk_bytes`` does."""
        options = self.options
        if chunk.count:
            self._record_bytes = max(1, chunk.nbytes // chunk.count)
        room = (options.chunk_bytes - chunk.nbytes) // self._record_bytes
        return max(1, min(options.chunk_records - chunk.count, room))

    def _gather(self, messages: list[Any], eof_code: int, ends: dict[TopicPartitionKey, int] | None,
                remaining: set[TopicPartitionKey], chunk: Chunk) -> None:
        """Adds the consumed records to ``chunk``; end-of-partition events go with it (they move
        the progress's positions past markers once the chunk is committed) and, with
        ``until_end``, finish partitions at their end."""
        runs, eofs = split_batch(messages, eof_code)
        chunk.eofs.extend(eofs)
        for tp, next_offset in eofs:
            if ends is not None and next_offset >= ends.get(tp, 0):
                remaining.discard(tp)
        for tp, run in runs:
            if ends is not None:
                end = ends[tp]
                if run.offsets[-1] + 1 >= end:
                    remaining.discard(tp)  # records past the end at start are not this run's
                    run = run.cut(end)
            chunk.add(tp, run)

    def _committed(self, chunk: Chunk) -> None:
        """Counts a chunk whose transaction committed, then its end-of-partition events (on the
        copying thread: Progress is not shared with the committer)."""
        for tp, runs in chunk.runs.items():
            self.progress.copied(tp, sum(map(len, runs)), int(runs[-1].offsets[-1]) + 1, chunk.targets.get(tp))
        if chunk.runs:
            self.progress.transactions += 1
        for tp, next_offset in chunk.eofs:
            self.progress.at(tp, next_offset)

    def _commit_chunk(self, producer: Producer, chunk: Chunk, metadata: Any) -> Chunk:
        """One kstream transaction: the records, their offset syncs, the source positions."""
        producer.begin_transaction()
        try:
            syncs: list[dict[str, Any]] = []
            positions: list[TopicPartition] = []
            for (topic, partition) in chunk.runs:
                table, offsets = chunk.partition((topic, partition))
                typed = self._typed.get(topic)
                if typed is not None:
                    table = _typed_table(typed, topic, partition, table, offsets)
                results = producer.produce_batch(topic, table, partition=partition)
                targets = np.concatenate([np.arange(r.base_offset, r.base_offset + r.record_count, dtype=np.int64)
                                          for r in results])
                if len(targets) != len(offsets):
                    raise MirrorError(f"kstream stored {len(targets)} of the {len(offsets)} records given for "
                                      f"{topic}[{partition}]")
                syncs.extend(self._syncs(topic, partition, offsets, targets))
                positions.append(TopicPartition(topic, partition, int(targets[-1]) + 1,
                                                metadata=position_metadata(int(offsets[-1]) + 1)))
            if syncs:
                producer.produce_batch(self.options.offset_syncs_topic, pa.table({
                    "key": [f"{s['topic']}/{s['partition']}".encode() for s in syncs],
                    "value": [json.dumps(s, sort_keys=True).encode() for s in syncs]}), partition=0)
            producer.send_offsets_to_transaction(positions, metadata)
            producer.commit_transaction()
        except BaseException:
            _abort_quietly(producer)
            raise
        chunk.targets.update({(tp.topic, tp.partition): tp.offset for tp in positions})
        return chunk

    def _syncs(self, topic: str, partition: int, sources: np.ndarray, targets: np.ndarray
               ) -> list[dict[str, Any]]:
        """MM2's rule: a sync when a partition's translation (source - target) changes."""
        key = (topic, partition)
        deltas = sources - targets
        changes = np.flatnonzero(deltas[1:] != deltas[:-1]) + 1
        if self._last_delta.get(key) != int(deltas[0]):
            changes = np.concatenate(([0], changes))
        self._last_delta[key] = int(deltas[-1])
        return [{"topic": topic, "partition": partition, "source_offset": int(sources[i]),
                 "target_offset": int(targets[i])} for i in changes.tolist()]


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
    if type(value) is not int or value < 0:  # a JSON true or 1.0 is no offset
        raise MirrorError(f"the mirror group's committed offset metadata {metadata!r} has a bad source_offset")
    return value


def _typed_table(typed: JsonValues, topic: str, partition: int, table: pa.Table, offsets: np.ndarray) -> pa.Table:
    """Kafka records (the mirror's bytes table) as rows of a typed kstream topic: key, the columns
    decoded from each JSON value, timestamp (ms), headers (without the ``kstream.value.*`` ones)."""
    headers = [None if h is None else [(d["key"], d["value"]) for d in h] for h in table.column("headers").to_pylist()]
    columns = typed.decode(table.column("value").to_pylist(), headers,
                           lambda i: f"Apache Kafka record {topic}[{partition}] offset {int(offsets[i])}")
    return pa.table([table.column("key"), *columns.columns, table.column("timestamp"),
                     pa.array([strip_value_headers(h) for h in headers], HEADER_TYPE)],
                    names=["key", *columns.column_names, "timestamp", "headers"])


def _partition_eof() -> int:
    from confluent_kafka import KafkaError  # the module is loaded already (the caller made a consumer)

    return int(KafkaError._PARTITION_EOF)


def _abort_quietly(producer: Producer) -> None:
    """Abort after a failure; a failing abort is logged, the first error is the one raised."""
    try:
        producer.abort_transaction()
    except Exception as err:
        log.warning("abort_transaction() after a failed mirror chunk failed too: %s", err)

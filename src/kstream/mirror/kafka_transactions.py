"""The mirror's Kafka transactions: kstream -> Kafka exactly once (``--exactly-once``, KIP-618's way).

The contract: each chunk the mirror copies into Kafka is one Kafka transaction holding the
chunk's records and the mirror's source positions past them; a read_committed reader of the
Kafka topic sees a chunk's records exactly when those positions are committed. A mirror killed
at any moment (between chunks, mid-transaction, between the Kafka commit and the kstream one)
and restarted copies every committed kstream record into Kafka exactly once, in order.

Where the positions live on the Kafka side: the Kafka consumer group ``__mirror.<name>`` (the
name of the mirror's kstream group), one committed offset per target partition, written by
``send_offsets_to_transaction`` inside the transaction. The offset is the Kafka offset after the
chunk's last record in that partition (so ``kafka-consumer-groups --describe`` shows the copy's
end), and its metadata carries the kstream source position, ``{"source_offset": N}``: the mirror
image of Kafka -> kstream, where the kstream group offset carries the Kafka position. The group
has no members (the consumer that lends its group metadata never subscribes); Kafka accepts
transactional offsets for a group with no active member, as kstream does.

Start: ``init_transactions()`` (``transactional.id`` ``__mirror.<name>``) fences a killed or
still running mirror of the same name (its next Kafka call fails with "fenced") and aborts the
transaction it left open; only then are the positions read, ``require_stable``
(kafka_side.KafkaSide.mirror_offsets: a commit being completed is waited for, never read
half-way). The caller (into_kafka.IntoKafka) keeps the kstream group ``__mirror.<name>`` and the
offset syncs too, written after the Kafka commit (the syncs before it), so they never claim more
than Kafka has; a restart moves a kstream group that lags Kafka (killed between the two commits)
up to the Kafka positions.

Not thread-safe.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from kstream.mirror.errors import MirrorError
from kstream.mirror.kafka_side import KafkaSide
from kstream.mirror.options import MirrorOptions

log = logging.getLogger(__name__)

MAX_TRANSACTION_S = 10.0
"""A chunk's Kafka transaction is committed once open this long, full or not (a source that
trickles would otherwise keep it open past the broker's transaction timeout, 60 s)."""

MAX_COMMIT_TRIES = 10
"""Tries of a commit_transaction() that fails with a retriable error (librdkafka's advice)."""

TopicPartitionKey = tuple[str, int]


class KafkaTransactions:
    """The Kafka transactions of one mirror run into Kafka, on ``producer`` (transactional)."""

    def __init__(self, kafka: KafkaSide, producer: Any, options: MirrorOptions):
        self.kafka = kafka
        self.producer = producer
        self.options = options
        self.open = False
        self._opened_at = 0.0
        self._metadata_consumer: Any = None  # lends the group's metadata to send_offsets_to_transaction
        self.kafka_offsets: dict[TopicPartitionKey, int] = {}  # the Kafka group's offsets at start (targets)

    def start(self, partitions: list[TopicPartitionKey]) -> dict[TopicPartitionKey, int]:
        """Fence and abort an earlier run's transaction, then the kstream positions kept in Kafka
        per partition (absent: no transaction of this mirror has committed that partition)."""
        ck, options = self.kafka.ck, self.options
        try:
            self.producer.init_transactions(options.timeout_s)
        except ck.KafkaException as err:
            raise MirrorError(f"init_transactions() of transactional.id {options.transactional_id!r} at "
                              f"{self.kafka.bootstrap} failed: {err.args[0] if err.args else err}; the broker must "
                              "allow transactions (transaction.state.log.replication.factor and min.isr at most its "
                              "brokers); run again, or raise --timeout") from err
        self._metadata_consumer = self.kafka.consumer(options.group)
        stored = self.kafka.mirror_offsets(options.group, partitions)
        self.kafka_offsets = {tp: offset for tp, (offset, _) in stored.items()}
        return {tp: kstream_position(metadata, options.group, tp) for tp, (_, metadata) in stored.items()}

    def begin(self) -> None:
        if not self.open:
            self._call("begin_transaction", self.producer.begin_transaction)
            self.open, self._opened_at = True, time.monotonic()

    def due(self) -> bool:
        """Whether the open transaction has been open MAX_TRANSACTION_S: commit it now."""
        return self.open and time.monotonic() - self._opened_at >= MAX_TRANSACTION_S

    def commit(self, positions: list[tuple[str, int, int, int]]) -> None:
        """Commit the open transaction with ``positions``, (topic, partition, Kafka offset after
        the chunk's last record there, kstream source position), as the group's offsets in it."""
        assert self.open, "commit() without an open transaction"
        ck, timeout_s = self.kafka.ck, self.options.timeout_s
        offsets = [ck.TopicPartition(topic, partition, kafka_next, position_metadata(source_next))
                   for topic, partition, kafka_next, source_next in positions]
        self._call("send_offsets_to_transaction", lambda: self.producer.send_offsets_to_transaction(
            offsets, self._metadata_consumer.consumer_group_metadata(), timeout_s))
        for tries in range(1, MAX_COMMIT_TRIES + 1):
            try:
                self.producer.commit_transaction(timeout_s)
                break
            except ck.KafkaException as err:
                error = err.args[0] if err.args else None
                if error is None or not error.retriable() or tries == MAX_COMMIT_TRIES:
                    raise self._failed("commit_transaction", err) from err
        self.open = False

    def abort(self) -> Any:
        """Abort the open transaction, if any, after a failure: a failing abort is logged (the
        next run's init_transactions() aborts it) and its KafkaError returned (None otherwise),
        the first error is the one the caller raises (or, fenced, fenced_error())."""
        if not self.open:
            return None
        self.open = False
        try:
            self.producer.abort_transaction(self.options.timeout_s)
        except Exception as err:
            log.warning("abort_transaction() of mirror %s failed too: %s", self.options.name, err)
            return err.args[0] if err.args and hasattr(err.args[0], "code") else None
        return None

    def close(self) -> None:
        self.abort()
        if self._metadata_consumer is not None:
            self._metadata_consumer.close()
            self._metadata_consumer = None

    def is_fenced(self, error: Any) -> bool:
        """Whether a KafkaError says a newer producer of the transactional id took over."""
        errors = self.kafka.ck.KafkaError
        return error.code() in (errors._FENCED, errors.PRODUCER_FENCED, errors.INVALID_PRODUCER_EPOCH)

    def fenced_error(self) -> MirrorError:
        options = self.options
        return MirrorError(f"mirror {options.name!r} was fenced at {self.kafka.bootstrap}: another mirror with the "
                           f"same --name (transactional.id {options.transactional_id}) started after this one; "
                           "this run stops, nothing of its open transaction is kept (the other run copies it)")

    def _call(self, what: str, call: Any) -> None:
        try:
            call()
        except self.kafka.ck.KafkaException as err:
            raise self._failed(what, err) from err

    def _failed(self, what: str, err: Any) -> MirrorError:
        error = err.args[0] if err.args else None
        if error is not None and self.is_fenced(error):
            self.open = False  # a fenced producer can neither commit nor abort
            return self.fenced_error()
        self.abort()
        return MirrorError(f"{what}() of mirror {self.options.name!r} at {self.kafka.bootstrap} failed: "
                           f"{error.str() if error is not None else err}; its Kafka transaction is aborted (nothing "
                           "of it is kept): run the mirror again")


def position_metadata(source_offset: int) -> str:
    """The Kafka group offset metadata that carries a partition's kstream position."""
    return json.dumps({"source_offset": source_offset})


def kstream_position(metadata: str | None, group: str, tp: TopicPartitionKey) -> int:
    """The kstream position in a Kafka offset's metadata of the mirror group; a MirrorError if it
    carries none (the group was written by something else)."""
    try:
        value = json.loads(metadata or "")["source_offset"]
    except (ValueError, KeyError, TypeError) as err:
        raise MirrorError(f"Kafka group {group!r} has an offset for {tp[0]}[{tp[1]}] whose metadata {metadata!r} "
                          "carries no kstream position; was the group written by something other than this "
                          "mirror? (delete it, or give the mirror another --name)") from err
    if not isinstance(value, int) or value < 0:
        raise MirrorError(f"Kafka group {group!r}: offset metadata {metadata!r} of {tp[0]}[{tp[1]}] has a bad "
                          "source_offset")
    return value

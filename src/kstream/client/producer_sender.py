"""How the Producer appends an encoded batch to a partition: transactional, idempotent with
retries, or plain.

A frame written inside a transaction (a Spark sink task's, bound by
``bind_sink_transaction``, or the producer's own ``transactional.id``) carries
the transaction's producer id and epoch. An idempotent producer
(``enable.idempotence``) takes its producer id from the cluster's metadata at
its first send and numbers each partition's batches with a sequence; a batch
that fails with NotEnoughReplicas or a failed log dir is sent again, the same
frame, up to ``retries`` times ``retry.backoff.ms`` apart within
``delivery.timeout.ms`` (the log drops a copy it already has, so a retry never
duplicates). A batch given up moves the producer to a new epoch.

Not thread-safe: the caller holds the producer's lock across every call.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kstream.client.partition_handles import PartitionHandles
from kstream.client.producer_batches import Piece, TopicState
from kstream.client.producer_transactions import ProducerTransactions
from kstream.errors import KStreamError, LogDirOfflineError, NotEnoughReplicasError, PartitionOfflineError
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.partition import Partition
from kstream.log.storage import format as fmt
from kstream.log.storage.partition_log import EncodedBatch

RETRIABLE = (NotEnoughReplicasError, LogDirOfflineError)
_MAX_EPOCH = 0x7FFF  # producer_epoch is an i16 in the frame header


def retriable(error: BaseException) -> bool:
    """Whether resending the same batch may succeed: not when the partition is offline (its
    last in-sync replica's log dir must be brought back by an operator first)."""
    return isinstance(error, RETRIABLE) and not isinstance(error, PartitionOfflineError)


@dataclass(frozen=True, slots=True)
class BatchResult:
    """Where one produced batch landed."""

    topic: str
    partition: int
    base_offset: int
    record_count: int


class BatchSender:
    """Appends a producer's frames: its acks, its idempotence state, its transactions."""

    def __init__(self, cluster: Cluster, options: Mapping[str, Any], handles: PartitionHandles,
                 transactions: ProducerTransactions | None):
        self.cluster = cluster
        self.acks = options["acks"]
        self.partition = handles.get  # (bound once: a look-up per batch, not two)
        self.transactions = transactions
        self.sink_txn: Any = None  # a Spark sink task's transaction (Producer.bind_sink_transaction)
        # An idempotent producer takes its producer id at its first send (append()), as Kafka's
        # client does: creating a Producer reads the metadata and writes nothing to it.
        self.idempotent = bool(options["enable.idempotence"]) and transactions is None
        self.producer_id = fmt.NO_PRODUCER_ID
        self.producer_epoch = -1
        self.sequences: dict[tuple[str, int], int] = {}
        self.retries = options["retries"]
        self.retry_backoff_s = options["retry.backoff.ms"] / 1000.0
        self.delivery_timeout_s = options["delivery.timeout.ms"] / 1000.0

    def in_transaction(self) -> bool:
        """Whether frames go into a transaction (which waits for each fsync: no pipelining)."""
        return self.transactions is not None or self.sink_txn is not None

    def append(self, state: TopicState, partition: int, encoded: EncodedBatch,
               defer_fsync: bool = False, sent: list[EncodedBatch] | None = None) -> int:
        """Append one frame; its base offset. ``sent`` collects an idempotent frame as written
        (with its sequence) for a later retry; ``defer_fsync`` leaves the acks=all fsync to the
        caller."""
        # A Spark sink task's transaction (decided by the driver), or this producer's own.
        txn = self.sink_txn or (self.transactions.current() if self.transactions is not None else None)
        if txn is not None:
            encoded = dataclasses.replace(encoded, attributes=encoded.attributes | fmt.TRANSACTIONAL,
                                          producer_id=txn.producer_id, producer_epoch=txn.epoch)
            return self.partition(state, partition).append(encoded, self.acks, txn=txn,
                                                           defer_fsync=defer_fsync).base_offset
        if self.idempotent:
            if self.producer_id == fmt.NO_PRODUCER_ID:
                self.producer_id = self.cluster.metadata.next_counter("producer_id")
                self.producer_epoch = 0
            key = (state.info.name, partition)
            sequence = self.sequences.get(key, 0)
            encoded = dataclasses.replace(encoded, producer_id=self.producer_id,
                                          producer_epoch=self.producer_epoch, base_sequence=sequence)
            self.sequences[key] = (sequence + encoded.record_count) & 0x7FFFFFFF
            if sent is not None:
                sent.append(encoded)
            return self.retrying(lambda: self.partition(state, partition).append(
                encoded, self.acks, defer_fsync=defer_fsync).base_offset)
        return self.partition(state, partition).append(encoded, self.acks, defer_fsync=defer_fsync).base_offset

    def write_planned(self, state: TopicState, planned: list[tuple[int, Piece]],
                      encode: Callable[..., EncodedBatch], now_ms: int) -> list[BatchResult]:
        """Append produce_batch()'s pieces, then (acks=all) one fsync per partition for the whole
        call (group commit), retrying an idempotent partition's frames if that fsync fails."""
        topic = state.info.name
        results = []
        sent: dict[int, list[EncodedBatch]] = {}
        for target, (piece, payload) in planned:
            base = self.append(state, target, encode(piece, now_ms, payload), defer_fsync=True,
                               sent=sent.setdefault(target, []))
            results.append(BatchResult(topic, target, base, piece.num_rows))
        if self.acks == "all":
            for target in sorted(sent):
                handle = self.partition(state, target)
                try:
                    handle.flush_acked()
                except RETRIABLE as err:
                    if not sent[target]:
                        raise
                    for i, encoded in enumerate(sent[target]):  # the log keeps the first copies
                        self.retrying(functools.partial(self.resend_one, handle, encoded),
                                      first_error=err if i == 0 else None)
        return results

    def retrying(self, send: Callable[[], int], first_error: KStreamError | None = None) -> int:
        """Run an idempotent ``send`` until it succeeds, retrying retriable errors (the same
        frame, so the log drops what it already has) within retries / delivery.timeout.ms.
        A batch given up makes this producer move to a new epoch: its sequence is spent."""
        deadline = time.monotonic() + self.delivery_timeout_s
        attempt = 0
        error = first_error
        while True:
            if error is not None:
                attempt += 1
                if not retriable(error) or attempt > self.retries \
                        or time.monotonic() + self.retry_backoff_s > deadline:
                    self.new_epoch()
                    if isinstance(error, PartitionOfflineError) and first_error is not None \
                            and first_error is not error:
                        # The first failure took the partition offline: it says what happened
                        # (e.g. no space left on device) and what to do.
                        raise first_error from error
                    raise error
                time.sleep(self.retry_backoff_s)
            try:
                return send()
            except KStreamError as err:
                error = err

    def resend_one(self, handle: Partition, encoded: EncodedBatch) -> int:
        """Append an idempotent frame again, fsynced this time; the log keeps the first copy."""
        return handle.append(encoded, self.acks).base_offset

    def new_epoch(self) -> None:
        """Restart sequences after a batch was given up (Kafka bumps the epoch then too)."""
        self.sequences.clear()
        if self.producer_epoch < _MAX_EPOCH:
            self.producer_epoch += 1
        else:
            self.producer_id = self.cluster.metadata.next_counter("producer_id")
            self.producer_epoch = 0

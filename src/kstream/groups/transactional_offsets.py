"""Group offsets committed atomically with a transaction (consume-transform-produce, exactly once).

The groups' side of ``Producer.send_offsets_to_transaction(offsets,
consumer.consumer_group_metadata())``, as in confluent-kafka / Kafka's
TxnOffsetCommit:

- :func:`send_offsets` checks the offsets (topic, partition, 0 <= offset <=
  log end) and, in ONE SQLite write transaction, that the producer's
  transaction is Ongoing at its epoch and that the sender may commit for the
  group (its member is in the group at that generation; a consumer outside
  the group only while the group has no active member), then records them as
  pending offsets of the transaction (:mod:`kstream.log.transactions.pending_offsets`). A
  rebalance is a write transaction of the same database, so it comes either
  before (the send is refused: :class:`IllegalGenerationError`) or after (the
  new owner of the partitions finds the pending offsets, below).
- ``commit_transaction()`` checks the senders again in the SQLite transaction
  that decides the commit (:func:`senders_check`): a transaction whose member
  left or whose group rebalanced since cannot commit offsets (it raises
  IllegalGenerationError and stays open: abort it).
- :func:`apply_offsets` (run by :func:`kstream.log.transactions.writer.finish` after the
  markers, before Complete) writes them to the group offsets table as one
  Delta commit per group with a Delta app transaction (app id per
  transactional id and group, version = the transaction's offsets sequence):
  whoever finishes the transaction, however many times, writes them once.
- Readers never write: a read of a group's current offsets (the Consumer's
  start position and ``committed()``, ``kstream groups describe``, lag,
  Spark's ``startingOffsets=group``) lays a decided commit's pending offsets
  over the table in its own view (:mod:`kstream.groups.offsets_view`), so no
  reader sees output committed and offsets not, or the reverse; a writer of
  the group's offsets (a commit, a reset, a delete) first rolls such
  transactions forward for real (:func:`roll_forward`: markers, offsets,
  Complete), so their offsets never land over a later commit. A reader that
  starts from the offsets (:func:`wait_stable`, Kafka's require_stable) also
  waits for an Ongoing transaction carrying offsets for the group until it is
  decided, or until it is past ``transaction.timeout.ms`` (then it can no longer
  commit; the reader does not write its abort, the next writer's expiry does). It does not
  wait for one that can no longer commit them: its member left or its
  generation is gone (the check at its decision refuses them), or the process
  that sent them is dead (only that process can decide to commit an Ongoing
  transaction; anyone else aborts it) — nor for one sent by its own process,
  which would wait for itself. An aborted transaction's offsets are never
  applied.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kstream import groups as groups_face
from kstream.errors import IllegalGenerationError, UnstableOffsetCommitError
from kstream.group_names import check_group_name
from kstream.groups.coordinator import Coordinator, commit_refusal, member_gone
from kstream.log.storage.faults import crash_point
from kstream.log.transactions import pending_offsets
from kstream.log.transactions.store import ONGOING, PREPARE_COMMIT, TransactionState, TransactionStore
from kstream.log.transactions.writer import finish, set_offsets_applier

if TYPE_CHECKING:
    import sqlite3

    from kstream.groups.service import ConsumerGroups
    from kstream.log.cluster.cluster import Cluster
    from kstream.message import TopicPartition

log = logging.getLogger(__name__)

SETTLE_STEP_S = 0.02  # how often a reader looks again at an Ongoing transaction it waits for
SETTLE_MARGIN_S = 5.0  # past the transaction's deadline, for its expiry to end it


@dataclass(frozen=True)
class ConsumerGroupMetadata:
    """What ``Consumer.consumer_group_metadata()`` returns: the group and who in it sends
    offsets (a consumer that only assign()s has no member id and generation -1)."""

    group_id: str
    member_id: str | None = None
    generation: int = -1
    group_instance_id: str | None = None


def send_offsets(groups: ConsumerGroups, store: TransactionStore, transactional_id: str, epoch: int,
                 positions: Iterable[TopicPartition], metadata: ConsumerGroupMetadata) -> bool:
    """Record ``positions`` (next offsets to read) as offsets of the open transaction for the
    group. Partitions with a negative (logical) offset are skipped, as librdkafka does; False
    when none is left. FencedError if the producer was fenced; IllegalGenerationError if the
    sender may not commit for the group (the transaction stays open: abort it)."""
    if not isinstance(metadata, ConsumerGroupMetadata):
        raise TypeError("group_metadata must be what Consumer.consumer_group_metadata() returns, "
                        f"not {type(metadata).__name__}")
    group = check_group_name(metadata.group_id)
    wanted = {(tp.topic, tp.partition): tp for tp in positions if tp.offset >= 0}
    if not wanted:
        return False
    checked = groups.check_offsets({k: (tp.offset, tp.metadata, tp.leader_epoch) for k, tp in wanted.items()})
    rows = [(t, p, c.offset, c.metadata, c.leader_epoch) for (t, p), c in sorted(checked.items())]
    store.check_writable(transactional_id, epoch)  # fences it now if it is past its deadline
    coordinator = groups.coordinator
    coordinator.ensure_schema()
    with store.while_ongoing(transactional_id, epoch) as tx:
        _refuse(tx, coordinator, group, metadata.member_id, metadata.generation)
        pending_offsets.record(tx, transactional_id, group, metadata.member_id, metadata.generation, rows)
    crash_point("txn.offsets-sent")
    return True


def senders_check(coordinator: Coordinator, transactional_id: str) -> Callable[[sqlite3.Connection], None]:
    """For :meth:`TransactionStore.prepare` of a commit: every group offsets of the transaction
    may still be committed by their sender (checked inside the deciding SQLite transaction)."""
    coordinator.ensure_schema()

    def check(tx: sqlite3.Connection) -> None:
        for pending in pending_offsets.of_transaction(tx, transactional_id):
            _refuse(tx, coordinator, pending.group, pending.member_id, pending.generation)

    return check


def _refuse(tx: sqlite3.Connection, coordinator: Coordinator, group: str, member_id: str | None,
            generation: int) -> None:
    refusal = commit_refusal(group, coordinator.read_in(tx, group), member_id, generation,
                             int(time.time() * 1000))
    if refusal is not None:
        raise IllegalGenerationError(
            f"offsets sent to the transaction for group {group!r} cannot be committed: {refusal}. "
            "Abort the transaction (abort_transaction()) and go on from the group's committed offsets")


def apply_offsets(cluster: Cluster, store: TransactionStore, decided: TransactionState,
                  groups: ConsumerGroups | None = None) -> None:
    """Write a decided commit's pending offsets to the group offsets table, once per group
    (Delta app transaction), through ``groups`` (else a ConsumerGroups made for the call).
    Nothing when the decision no longer stands as given. The transaction layer calls it from
    :func:`kstream.log.transactions.writer.finish` (handed in below, never imported from there).
    The groups service (and its deltalake) is reached through the package face, on first use:
    it imports this module."""
    ConsumerGroups, OffsetCommit = groups_face.ConsumerGroups, groups_face.OffsetCommit  # noqa: N806

    pending = pending_offsets.of_decided(store, decided)
    if not pending:
        return
    own = groups is None
    if groups is None:
        groups = ConsumerGroups(cluster)
    existing = set(cluster.list_topics())
    try:
        for offsets in pending:
            gone = sorted({row[0] for row in offsets.offsets if row[0] not in existing})
            if gone:
                log.warning("transaction %r: topics %s were deleted before its offsets for group %r were "
                            "applied; their offsets are dropped", decided.transactional_id, gone, offsets.group)
            groups.commit(offsets.group,
                          {(t, p): OffsetCommit(o, m, e) for t, p, o, m, e in offsets.offsets if t in existing},
                          member_id=offsets.member_id, generation=offsets.generation, force=True,
                          transaction=(offsets.app_id, offsets.sequence),
                          custom_metadata={"kstream.operation": "transaction",
                                           "kstream.transactional.id": decided.transactional_id})
    finally:
        if own:
            groups.close()


set_offsets_applier(apply_offsets)  # the transaction layer finishes a commit's offsets through this


def roll_forward(groups: ConsumerGroups, group: str) -> None:
    """Before a write of ``group``'s offsets (a commit, a reset, a delete): finish the decided
    commits carrying offsets for it (markers, offsets, Complete), so their offsets land before
    the write and never over it. Writers only: readers overlay them instead
    (:mod:`kstream.groups.offsets_view`)."""
    store = TransactionStore.for_cluster(groups.cluster)
    for _, state in pending_offsets.of_group(store, group):
        if state.state == PREPARE_COMMIT:
            finish(groups.cluster, store, state, groups)


def wait_stable(groups: ConsumerGroups, group: str) -> None:
    """Before reading ``group``'s offsets to start from them (Kafka's require_stable): wait
    for the Ongoing transactions carrying offsets for it that may still commit them, until
    they are decided or past their deadline (then they cannot commit; nothing is expired
    here). Writes nothing. UnstableOffsetCommitError if the wait outlives
    transaction.max.timeout.ms (no transaction's own timeout is longer)."""
    store = TransactionStore.for_cluster(groups.cluster)
    timeout_s = (store.max_timeout_ms or 0) / 1000.0
    give_up = time.monotonic() + timeout_s + SETTLE_MARGIN_S
    while True:
        waiting = [state for pending, state in pending_offsets.of_group(store, group)
                   if state.state == ONGOING and not _past_deadline(store, state)
                   and _worth_waiting_for(groups.coordinator, pending)]
        if not waiting:
            return
        if time.monotonic() >= give_up:
            raise UnstableOffsetCommitError(
                f"the offsets of group {group!r} are held by open transaction(s) of "
                f"{', '.join(repr(s.transactional_id) for s in waiting)} that did not end within "
                f"transaction.timeout.ms; try again")
        time.sleep(SETTLE_STEP_S)


def _past_deadline(store: TransactionStore, state: TransactionState) -> bool:
    """An Ongoing transaction past its transaction.timeout.ms can no longer commit (its decision is
    refused) and reads as aborted (kstream.log.transactions.view): nobody waits for it, and a reader
    does not write its abort (the next writer's expiry does)."""
    deadline_ms = store.deadline_ms(state)
    return deadline_ms is not None and time.time() * 1000 >= deadline_ms


def _worth_waiting_for(coordinator: Coordinator, pending: pending_offsets.PendingOffsets) -> bool:
    """May this Ongoing transaction still commit these offsets, decided by another process?
    Not when its member left or the group rebalanced (the check at its decision refuses
    them), nor when its sender's process is gone (only the sender decides a commit; anyone
    else aborts it), nor when the sender is this process (waiting would wait for ourselves)."""
    if pending.member_id is not None and member_gone(coordinator.describe(pending.group), pending.member_id,
                                                     pending.generation):
        return False
    if pending.host == socket.gethostname() and pending.pid == os.getpid():
        return False
    return pending.sender_alive

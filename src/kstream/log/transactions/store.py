"""Transaction state in the metadata store: the coordinator's tables and queries.

A transactional id has one producer id and an epoch. A transaction moves
Ongoing -> PrepareCommit/PrepareAbort (the decision, one SQLite transaction)
-> CompleteCommit/CompleteAbort (after a COMMIT/ABORT marker frame is on each
partition it wrote). Whoever finds a transaction in a Prepare state past its
deadline finishes it the same way, so a decision is never half applied.

While a transaction is open, each partition it wrote remembers the
transaction's first offset there: the partition's last stable offset (LSO) is
the smallest such offset (or the high watermark when none). An ended
transaction's rows go when its marker is written; an aborted one leaves
(producer id, first offset, marker offset) behind so read_committed readers
skip its frames.

Each transaction has its own timeout, as in Kafka: the producer's
``transaction.timeout.ms``, recorded when the transaction begins (in
``transaction_timeouts``, one row per transactional id naming the producer id and
begin time it belongs to), at most the cluster's ``transaction.max.timeout.ms``
(:meth:`check_timeout`, at ``init_transactions()``). What recorded no timeout of
its own (a transaction an older kstream began: the row names another begin; a
Spark sink task's write) has the cluster's (:attr:`TransactionStore.default_timeout_ms`).
A separate table, not a column, so that an older kstream writing ``transactions``
(rolled back to) keeps working and its transactions read with its own timeout.

Fencing (DESIGN §9): every writer's epoch is checked under the partition lock
on every append (:meth:`check_writable`), and whatever ends a transaction that
is not its own bumps the epoch first: :meth:`init` (a new instance) and
:meth:`fence_expired` (the transaction's timeout after it began;
run by writers and the next instance; readers never write, they apply what is
fixed in their own view: :mod:`kstream.log.transactions.view`). A fenced producer's next
write, commit or abort raises :class:`FencedError`; nothing of it is written.

Consumer group offsets a transaction carries (``send_offsets_to_transaction``)
wait in ``transaction_offsets`` (:mod:`kstream.log.transactions.pending_offsets`): the decision
fixes them, completing a commit applies them, and the SQLite transaction that
completes the transaction (either way) deletes them.

The tables are made by the first write (:meth:`TransactionStore.ensure_schema`);
every read takes a missing table for an empty one, so a reader creates none.

Spark sink task writes (:mod:`kstream.log.transactions.sink`) share the
``open_transaction_partitions`` table: a row is held either by a live
transactional id or by a ``sink_producers`` row. A row nobody holds is an
orphan (its writer was fenced or aborted): it is aborted by the next expiry.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kstream.config.options import MIN_TRANSACTION_TIMEOUT_MS
from kstream.errors import FencedError, InvalidTransactionTimeoutError, KStreamError, ProducerFencedError
from kstream.log.cluster.metadata import Metadata

if TYPE_CHECKING:
    from kstream.log.cluster.cluster import Cluster

_SCHEMA = """
CREATE TABLE IF NOT EXISTS transactions (
    transactional_id TEXT PRIMARY KEY, producer_id INTEGER NOT NULL, epoch INTEGER NOT NULL,
    state TEXT NOT NULL, partitions TEXT NOT NULL, updated_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS open_transaction_partitions (
    topic TEXT NOT NULL, partition INTEGER NOT NULL, producer_id INTEGER NOT NULL,
    first_offset INTEGER NOT NULL, PRIMARY KEY (topic, partition, producer_id));
CREATE TABLE IF NOT EXISTS aborted_transactions (
    topic TEXT NOT NULL, partition INTEGER NOT NULL, producer_id INTEGER NOT NULL,
    first_offset INTEGER NOT NULL, last_offset INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS aborted_by_partition ON aborted_transactions (topic, partition, last_offset);
CREATE TABLE IF NOT EXISTS sink_producers (
    sink_id TEXT NOT NULL, producer_id INTEGER NOT NULL, partitions TEXT NOT NULL, created_ms INTEGER NOT NULL,
    PRIMARY KEY (sink_id, producer_id));
CREATE TABLE IF NOT EXISTS transaction_offsets (
    transactional_id TEXT NOT NULL, group_id TEXT NOT NULL, member_id TEXT, generation INTEGER NOT NULL,
    sequence INTEGER NOT NULL, offsets TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
    process_start INTEGER NOT NULL,
    PRIMARY KEY (transactional_id, group_id));
CREATE INDEX IF NOT EXISTS transaction_offsets_by_group ON transaction_offsets (group_id);
CREATE TABLE IF NOT EXISTS transaction_offset_sequences (
    transactional_id TEXT PRIMARY KEY, sequence INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS transaction_timeouts (
    transactional_id TEXT PRIMARY KEY, producer_id INTEGER NOT NULL, started_ms INTEGER NOT NULL,
    timeout_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS sink_batches (
    sink_id TEXT NOT NULL, batch_id INTEGER NOT NULL, state TEXT NOT NULL, writes TEXT NOT NULL,
    updated_ms INTEGER NOT NULL, PRIMARY KEY (sink_id, batch_id));
"""

EMPTY, ONGOING, COMMITTED, ABORTED = "Empty", "Ongoing", "CompleteCommit", "CompleteAbort"

TRANSACTIONAL_PRODUCER_IDS = 1 << 40
"""Transactional ids get producer ids above this, one more each; idempotent producers and
sink tasks count up from 1 below it (a metadata counter), so the two never meet."""
MAX_PRODUCER_ID = (1 << 63) - 1  # the frame header's producer_id is an i64

PREPARE_COMMIT, PREPARE_ABORT = "PrepareCommit", "PrepareAbort"
SINK_COMMITTING = "Committing"  # a sink batch's commit decision (:mod:`kstream.log.transactions.sink`)
LIVE = (ONGOING, PREPARE_COMMIT, PREPARE_ABORT)  # states that hold partitions open
MAX_EPOCH = 0x7FFF  # the frame header's producer_epoch is an i16
_LIVE_SQL = "('Ongoing', 'PrepareCommit', 'PrepareAbort')"


@dataclass(frozen=True)
class TransactionState:
    """A transactional id's row. ``updated_ms`` is when the transaction began while it is
    live (its deadline is that plus its timeout, :meth:`TransactionStore.timeout_of`)."""

    transactional_id: str
    producer_id: int
    epoch: int
    state: str
    partitions: tuple[tuple[str, int], ...]
    updated_ms: int = 0


@dataclass(frozen=True)
class Holder:
    """One open transaction's hold on a partition (what keeps its LSO back)."""

    producer_id: int
    first_offset: int
    owner: str | None  # "transactional.id=..." or "sink=..."; None for an orphan (nobody holds it)
    epoch: int | None
    state: str | None
    started_ms: int | None
    deadline_ms: int | None  # None: no timeout known; an orphan's is 0 (abort it now)


class TransactionStore:
    """Transaction rows in one cluster's metadata database (same connection, same rules).

    Built with :meth:`for_cluster`, it knows the cluster's timeouts and the cluster (the
    expiry, :mod:`kstream.log.transactions.expiry`, needs both); built from the metadata alone
    it only answers queries (no deadlines)."""

    def __init__(self, metadata: Metadata, cluster: Cluster | None = None):
        self.metadata = metadata
        self.cluster = cluster
        self.max_timeout_ms: int | None = None
        """``transaction.max.timeout.ms``: the most a producer's transaction.timeout.ms may be."""
        self.default_timeout_ms: int | None = None
        """The timeout of what recorded none: a Spark sink task's write, a transaction an older
        kstream began. An older cluster's stored transaction.timeout.ms, else the maximum."""
        if cluster is not None:
            self.max_timeout_ms = int(cluster.config["transaction.max.timeout.ms"])
            legacy = cluster.legacy_transaction_timeout_ms
            self.default_timeout_ms = self.max_timeout_ms if legacy is None else legacy

    def ensure_schema(self) -> None:
        """Make the transaction tables if missing: every write here does it first; a writer
        of them elsewhere (the sink tables) calls it. Readers never do (a missing table reads
        as empty: :meth:`Metadata.read_rows`), so a cluster where no transaction ever ran
        has none and a read-only reader creates none."""
        self.metadata.ensure_schema("transactions", _SCHEMA)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        self.ensure_schema()
        with self.metadata.transaction() as tx:
            yield tx

    @classmethod
    def for_cluster(cls, cluster: Cluster) -> TransactionStore:
        return cls(cluster.metadata, cluster)

    # -- transactional ids ---------------------------------------------------------------------

    def check_timeout(self, transactional_id: str, timeout_ms: int) -> None:
        """``init_transactions()`` with ``timeout_ms`` above the cluster's maximum is refused,
        as a Kafka broker refuses it (INVALID_TRANSACTION_TIMEOUT), before anything is fenced."""
        if self.max_timeout_ms is not None and timeout_ms > self.max_timeout_ms:
            raise InvalidTransactionTimeoutError(
                f"init_transactions() of transactional.id {transactional_id!r}: transaction.timeout.ms="
                f"{timeout_ms} is larger than this cluster's transaction.max.timeout.ms={self.max_timeout_ms}; "
                "this producer cannot be used any more (a fatal error, as in librdkafka): close it and create "
                f"one with transaction.timeout.ms at most {self.max_timeout_ms} (or use a cluster created with a "
                "larger transaction.max.timeout.ms)")

    def fence(self, transactional_id: str) -> TransactionState | None:
        """A new instance takes over: if a transaction of the id is live, bump the epoch (the
        old instance is fenced) and return its decision to finish (PrepareCommit stays a
        commit; Ongoing becomes PrepareAbort)."""
        with self._write() as tx:
            row = _row(tx, transactional_id)
            if row is None or row.state not in LIVE:
                return None
            decided = PREPARE_COMMIT if row.state == PREPARE_COMMIT else PREPARE_ABORT
            tx.execute("UPDATE transactions SET epoch = ?, state = ? WHERE transactional_id = ?",
                       (row.epoch + 1, decided, transactional_id))
        return self.get(transactional_id)

    def init(self, transactional_id: str) -> TransactionState | None:
        """Register (or re-register) the id with a bumped epoch, fencing every older instance.
        None when a transaction of the id is live (:meth:`fence` and finish it first). When
        the epoch would pass :data:`MAX_EPOCH` the id gets a new producer id at epoch 0."""
        with self._write() as tx:
            row = _row(tx, transactional_id)
            if row is not None and row.state in LIVE:
                return None
            if row is None or row.epoch + 1 > MAX_EPOCH:
                # One more than the highest so far; the first is TRANSACTIONAL_PRODUCER_IDS + 1.
                producer_id = int(tx.execute("SELECT COALESCE(MAX(producer_id), ?) + 1 FROM transactions",
                                             (TRANSACTIONAL_PRODUCER_IDS,)).fetchone()[0])
                if producer_id > MAX_PRODUCER_ID:
                    raise KStreamError(f"transactional producer ids are used up (the next would be "
                                       f"{producer_id}, past the frame header's i64 maximum)")
                epoch = 0
            else:
                producer_id, epoch = row.producer_id, row.epoch + 1
            tx.execute("INSERT OR REPLACE INTO transactions VALUES (?, ?, ?, ?, ?, ?)",
                       (transactional_id, producer_id, epoch, EMPTY, "[]", _now()))
        return self.get(transactional_id)

    def get(self, transactional_id: str) -> TransactionState:
        row = self._read_row(transactional_id)
        if row is None:
            raise KStreamError(f"transactional id {transactional_id!r} is unknown; call init_transactions()")
        return row

    def check_epoch(self, transactional_id: str, epoch: int) -> TransactionState:
        """FencedError when a newer instance of this transactional id took over."""
        state = self.get(transactional_id)
        if state.epoch != epoch:
            raise _fenced(transactional_id, epoch, state)
        return state

    def check_writable(self, transactional_id: str, epoch: int) -> None:
        """Before each transactional append, under the partition lock: the producer's
        transaction must be open at its epoch and within its deadline. A transaction past its
        deadline is fenced here (the epoch bumped) and the write refused."""
        state = self.check_epoch(transactional_id, epoch)
        if state.state != ONGOING:
            raise FencedError(f"the transaction of {transactional_id!r} (epoch {epoch}) is not open ({state.state}); "
                              "begin_transaction() first")
        timeout_ms = self.timeout_of(state)
        if self._past_deadline(state, timeout_ms):
            self._fence_timed_out(transactional_id, epoch)
            raise self._timed_out(transactional_id, epoch, timeout_ms)

    @contextmanager
    def while_ongoing(self, transactional_id: str, epoch: int) -> Iterator[sqlite3.Connection]:
        """One write transaction of the metadata database in which the transaction of
        ``transactional_id`` is Ongoing at ``epoch`` (FencedError otherwise): what the caller
        writes in it (pending group offsets, :mod:`kstream.log.transactions.pending_offsets`)
        lands only while the transaction is open, since a decision is a write of the same
        database and comes either before or after."""
        with self._write() as tx:
            state = _row(tx, transactional_id)
            if state is None or (state.epoch, state.state) != (epoch, ONGOING):
                raise FencedError(f"the transaction of {transactional_id!r} (epoch {epoch}) is not open (fenced, "
                                  "timed out or ended); begin_transaction() first")
            yield tx

    def begin(self, transactional_id: str, epoch: int, timeout_ms: int | None = None) -> None:
        """Open a transaction; ``timeout_ms`` (the producer's transaction.timeout.ms) is recorded
        with it in the same SQLite transaction (None: the cluster's :attr:`default_timeout_ms`)."""
        with self._write() as tx:
            row = _row(tx, transactional_id)
            if row is None or row.epoch != epoch:
                raise _fenced(transactional_id, epoch, row)
            if row.state in LIVE:
                raise KStreamError(f"the previous transaction of {transactional_id!r} is still {row.state}; "
                                   "commit_transaction() or abort_transaction() it first")
            now = _now()
            tx.execute("UPDATE transactions SET state = ?, partitions = '[]', updated_ms = ? "
                       "WHERE transactional_id = ?", (ONGOING, now, transactional_id))
            if timeout_ms is None:
                tx.execute("DELETE FROM transaction_timeouts WHERE transactional_id = ?", (transactional_id,))
            else:
                tx.execute("INSERT OR REPLACE INTO transaction_timeouts VALUES (?, ?, ?, ?)",
                           (transactional_id, row.producer_id, now, timeout_ms))
            tx.execute("DELETE FROM transaction_offsets WHERE transactional_id = ?", (transactional_id,))

    def prepare(self, transactional_id: str, epoch: int, commit: bool,
                check: Callable[[sqlite3.Connection], None] | None = None) -> TransactionState:
        """The producer decides to commit or abort its open transaction (one SQLite transaction:
        from here the decision stands, whoever finishes it). FencedError when it was fenced,
        ended, or is past its deadline (then it is fenced and aborted instead). A commit first
        runs ``check`` in that SQLite transaction (the group offsets it carries must still be
        the senders' to commit); what it raises leaves the transaction open."""
        target = PREPARE_COMMIT if commit else PREPARE_ABORT
        timed_out = False
        with self._write() as tx:
            row = _row(tx, transactional_id)
            if row is None or row.epoch != epoch:
                raise _fenced(transactional_id, epoch, row)
            if row.state == target:
                return row  # a commit or abort that failed half way, retried
            if row.state != ONGOING:
                raise FencedError(f"the transaction of {transactional_id!r} (epoch {epoch}) is not open "
                                  f"({row.state}); begin_transaction() first")
            timeout_ms = self.timeout_of(row, tx)
            if self._past_deadline(row, timeout_ms):
                timed_out = True
                tx.execute("UPDATE transactions SET epoch = ?, state = ? WHERE transactional_id = ?",
                           (epoch + 1, PREPARE_ABORT, transactional_id))
            else:
                if commit and check is not None:
                    check(tx)
                tx.execute("UPDATE transactions SET state = ? WHERE transactional_id = ?", (target, transactional_id))
        if timed_out:
            raise self._timed_out(transactional_id, epoch, timeout_ms)
        return self.get(transactional_id)

    def add_partition(self, transactional_id: str, epoch: int, producer_id: int, topic: str, partition: int,
                      first_offset: int) -> None:
        """Record that the open transaction writes ``topic``-``partition`` from ``first_offset``
        (call under the partition lock, before the first frame is appended)."""
        with self._write() as tx:
            row = tx.execute("SELECT epoch, state, partitions FROM transactions WHERE transactional_id = ?",
                             (transactional_id,)).fetchone()
            if row is None or row[0] != epoch or row[1] != ONGOING:
                raise FencedError(f"transaction of {transactional_id!r} epoch {epoch} is not open (fenced or "
                                  "ended); begin_transaction() again with a fresh producer")
            partitions = json.loads(row[2])
            if [topic, partition] not in partitions:
                partitions.append([topic, partition])
                tx.execute("UPDATE transactions SET partitions = ? WHERE transactional_id = ?",
                           (json.dumps(partitions), transactional_id))
                tx.execute("INSERT OR IGNORE INTO open_transaction_partitions VALUES (?, ?, ?, ?)",
                           (topic, partition, producer_id, first_offset))

    def decision_stands(self, state: TransactionState) -> bool:
        """True while ``state`` (a Prepare state) is still the id's row: its markers may be written."""
        row = self._read_row(state.transactional_id)
        return row is not None and (row.producer_id, row.epoch, row.state) == (
            state.producer_id, state.epoch, state.state)

    def complete(self, state: TransactionState) -> bool:
        """Every marker of a decided transaction is written (and a commit's group offsets are
        applied): Complete, and its pending group offsets go. False when someone else (a newer
        instance, an expiry) already moved the id on."""
        final = COMMITTED if state.state == PREPARE_COMMIT else ABORTED
        with self._write() as tx:
            if tx.execute(
                    "UPDATE transactions SET state = ?, partitions = '[]', updated_ms = ? WHERE transactional_id = ? "
                    "AND producer_id = ? AND epoch = ? AND state = ?",
                    (final, _now(), state.transactional_id, state.producer_id, state.epoch,
                     state.state)).rowcount == 0:
                return False
            tx.execute("DELETE FROM transaction_offsets WHERE transactional_id = ?", (state.transactional_id,))
            return True

    # -- expiry ------------------------------------------------------------------------------------

    def fence_expired(self) -> int:
        """Fence every Ongoing transaction past its own deadline: bump the epoch, decide abort
        (its markers are written by :meth:`decided_expired`'s caller). Returns how many."""
        if self.default_timeout_ms is None:
            return 0
        if not self._expired((ONGOING,)):
            return 0  # the usual case: no write lock taken (nor a table made)
        fenced = 0
        with self._write() as tx:
            for row in self._expired((ONGOING,), tx):
                tx.execute("UPDATE transactions SET epoch = ?, state = ? WHERE transactional_id = ?",
                           (row.epoch + 1, PREPARE_ABORT, row.transactional_id))
                fenced += 1
        return fenced

    def decided_expired(self) -> list[TransactionState]:
        """Decided (Prepare) transactions past their deadline: their deciders died half way."""
        if self.default_timeout_ms is None:
            return []
        return self._expired((PREPARE_COMMIT, PREPARE_ABORT))

    def _expired(self, states: tuple[str, ...], tx: sqlite3.Connection | None = None) -> list[TransactionState]:
        """Rows in ``states`` past their own deadline (read in ``tx``, or outside a write)."""
        # No timeout is below the minimum: younger rows need no look at their own.
        query = (f"SELECT transactional_id, producer_id, epoch, state, partitions, updated_ms FROM transactions "
                 f"WHERE state IN ({','.join('?' * len(states))}) AND updated_ms <= ?")
        args = (*states, _now() - MIN_TRANSACTION_TIMEOUT_MS)
        rows = tx.execute(query, args).fetchall() if tx is not None else self.metadata.read_rows(query, args)
        candidates = [_state(r[0], r[1:]) for r in rows]
        return [state for state in candidates if self._past_deadline(state, self.timeout_of(state, tx))]

    def orphans(self) -> list[tuple[str, int, int]]:
        """(topic, partition, producer id) of open rows no live transaction or sink write holds."""
        return [tuple(r) for r in self.metadata.read_rows(
            "SELECT o.topic, o.partition, o.producer_id FROM open_transaction_partitions o WHERE NOT EXISTS "
            f"(SELECT 1 FROM transactions t WHERE t.producer_id = o.producer_id AND t.state IN {_LIVE_SQL}) "
            "AND NOT EXISTS (SELECT 1 FROM sink_producers s WHERE s.producer_id = o.producer_id)")]

    def is_orphan(self, topic: str, partition: int, producer_id: int) -> bool:
        """True while the partition's open row of ``producer_id`` exists and nobody holds it."""
        return any(h.producer_id == producer_id and h.owner is None for h in self.holders(topic, partition))

    # -- partitions --------------------------------------------------------------------------------

    def is_open(self, topic: str, partition: int, producer_id: int) -> bool:
        return bool(self.metadata.read_rows(
            "SELECT 1 FROM open_transaction_partitions WHERE topic = ? AND partition = ? AND producer_id = ?",
            (topic, partition, producer_id)))

    def end_partition(self, topic: str, partition: int, producer_id: int, marker_offset: int,
                      aborted: bool) -> None:
        """The marker is written: the partition no longer holds the transaction open. Only a
        row that began before the marker is ended (a later transaction of the same producer
        id keeps its own)."""
        self.end_partitions([(topic, partition, producer_id, marker_offset)], aborted)

    def end_partitions(self, ends: list[tuple[str, int, int, int]], aborted: bool,
                       also: Callable[[sqlite3.Connection], None] | None = None) -> None:
        """:meth:`end_partition` for each (topic, partition, producer id, marker offset), and
        ``also`` (the caller's own rows), in one SQLite transaction: all or none."""
        with self._write() as tx:
            for topic, partition, producer_id, marker_offset in ends:
                _end_partition(tx, topic, partition, producer_id, marker_offset, aborted)
            if also is not None:
                also(tx)

    def holders(self, topic: str, partition: int) -> list[Holder]:
        """The open transactions holding the partition, oldest first, with their owners and deadlines."""
        # (A table an older kstream did not have reads as no holder: the files then hold the LSO.)
        rows = self.metadata.read_rows(
            "SELECT o.producer_id, o.first_offset, t.transactional_id, t.epoch, t.state, t.updated_ms, "
            "s.sink_id, s.created_ms FROM open_transaction_partitions o "
            f"LEFT JOIN transactions t ON t.producer_id = o.producer_id AND t.state IN {_LIVE_SQL} "
            "LEFT JOIN sink_producers s ON s.producer_id = o.producer_id "
            "WHERE o.topic = ? AND o.partition = ? ORDER BY o.first_offset", (topic, partition))
        out = []
        for producer_id, first, txn_id, epoch, state, started, sink_id, created in rows:
            if txn_id is not None:
                owner, begun = f"transactional.id={txn_id}", started
            elif sink_id is not None:
                owner, begun, epoch, state = f"sink={sink_id}", created, 0, ONGOING
            else:
                out.append(Holder(producer_id, first, None, None, None, None, 0))
                continue
            if txn_id is None:
                timeout_ms = self.default_timeout_ms  # a sink task's write
            else:
                timeout_ms = self.timeout_of(TransactionState(txn_id, producer_id, epoch, state, (), begun))
            deadline = None if timeout_ms is None else begun + timeout_ms
            out.append(Holder(producer_id, first, owner, epoch, state, begun, deadline))
        return out

    def committing_sink_producers(self, producer_ids: list[int]) -> frozenset[int]:
        """Those of the sink task ``producer_ids`` that a Committing sink batch decision names
        (their writes commit, whoever writes the markers)."""
        named: set[int] = set()
        for (writes,) in self.metadata.read_rows(
                "SELECT b.writes FROM sink_batches b WHERE b.state = ? AND b.sink_id IN (SELECT s.sink_id FROM "
                f"sink_producers s WHERE s.producer_id IN ({','.join('?' * len(producer_ids))}))",
                (SINK_COMMITTING, *producer_ids)):
            named.update(w[0] for w in json.loads(writes))
        return frozenset(named & set(producer_ids))

    def first_open_offset(self, topic: str, partition: int) -> int | None:
        """The smallest first offset of an open transaction in the partition (LSO), if any."""
        rows = self.metadata.read_rows(
            "SELECT MIN(first_offset) FROM open_transaction_partitions WHERE topic = ? AND partition = ?",
            (topic, partition))
        return rows[0][0] if rows else None

    def aborted(self, topic: str, partition: int, from_offset: int) -> list[tuple[int, int, int]]:
        """(producer id, first offset, marker offset) of aborted transactions ending at or after
        ``from_offset``."""
        return [tuple(r) for r in self.metadata.read_rows(
            "SELECT producer_id, first_offset, last_offset FROM aborted_transactions WHERE topic = ? AND "
            "partition = ? AND last_offset >= ? ORDER BY first_offset", (topic, partition, from_offset))]

    # -- helpers -----------------------------------------------------------------------------------

    def _read_row(self, transactional_id: str) -> TransactionState | None:
        """The id's row, read outside a write transaction (None also when no transaction ever ran)."""
        rows = self.metadata.read_rows(_ROW_SQL, (transactional_id,))
        return _state(transactional_id, rows[0]) if rows else None

    def timeout_of(self, state: TransactionState, tx: sqlite3.Connection | None = None) -> int | None:
        """The timeout of ``state``'s transaction (live: begun at ``updated_ms``): the one recorded
        when it began, else the cluster's :attr:`default_timeout_ms`. None without a cluster."""
        if self.default_timeout_ms is None:
            return None
        args = (state.transactional_id,)
        rows = tx.execute(_TIMEOUT_SQL, args).fetchall() if tx is not None else self.metadata.read_rows(
            _TIMEOUT_SQL, args)
        if rows and (rows[0][0], rows[0][1]) == (state.producer_id, state.updated_ms):
            return int(rows[0][2])
        return self.default_timeout_ms  # none recorded, or an older kstream began this one

    def deadline_ms(self, state: TransactionState) -> int | None:
        """When ``state``'s live transaction times out (None: no timeout known)."""
        timeout_ms = self.timeout_of(state)
        return None if timeout_ms is None else state.updated_ms + timeout_ms

    @staticmethod
    def _past_deadline(state: TransactionState, timeout_ms: int | None) -> bool:
        return timeout_ms is not None and _now() >= state.updated_ms + timeout_ms

    def _fence_timed_out(self, transactional_id: str, epoch: int) -> None:
        with self._write() as tx:
            tx.execute("UPDATE transactions SET epoch = ?, state = ? WHERE transactional_id = ? AND epoch = ? "
                       "AND state = ?", (epoch + 1, PREPARE_ABORT, transactional_id, epoch, ONGOING))

    def _timed_out(self, transactional_id: str, epoch: int, timeout_ms: int | None) -> FencedError:
        return ProducerFencedError(
            f"the transaction of {transactional_id!r} (epoch {epoch}) passed transaction.timeout.ms="
            f"{timeout_ms} (its own) and was aborted; this producer is fenced: close it, create a new one and "
            "call init_transactions() (or commit sooner / raise the producer's transaction.timeout.ms, up to "
            f"the cluster's transaction.max.timeout.ms={self.max_timeout_ms})")


_ROW_SQL = "SELECT producer_id, epoch, state, partitions, updated_ms FROM transactions WHERE transactional_id = ?"
# Read apart from _ROW_SQL: a reader of a cluster whose tables an older kstream made has no such
# table (read_rows reads it as empty), and a join would empty the transactions read with it.
_TIMEOUT_SQL = "SELECT producer_id, started_ms, timeout_ms FROM transaction_timeouts WHERE transactional_id = ?"


def _row(tx: sqlite3.Connection, transactional_id: str) -> TransactionState | None:
    row = tx.execute(_ROW_SQL, (transactional_id,)).fetchone()
    return None if row is None else _state(transactional_id, row)


def _state(transactional_id: str, row: tuple[Any, ...]) -> TransactionState:
    return TransactionState(transactional_id, row[0], row[1], row[2],
                            tuple(tuple(p) for p in json.loads(row[3])), row[4])


def _fenced(transactional_id: str, epoch: int, state: TransactionState | None) -> FencedError:
    now = "unknown" if state is None else f"epoch {state.epoch}"
    return ProducerFencedError(
        f"producer with transactional.id {transactional_id!r} and epoch {epoch} was fenced by a newer "
        f"instance or a transaction timeout (now {now}); this one must stop (close it and create a new producer)")


def _now() -> int:
    return int(time.time() * 1000)


def _end_partition(tx: sqlite3.Connection, topic: str, partition: int, producer_id: int, marker_offset: int,
                   aborted: bool) -> None:
    # A row whose first offset is the marker's own had no frame land after it was recorded (its
    # writer failed in between: an interrupted Spark task, a full disk): this marker ends it too.
    # A later transaction of the same producer id records its row after the marker, above it.
    row = tx.execute("SELECT first_offset FROM open_transaction_partitions WHERE topic = ? AND "
                     "partition = ? AND producer_id = ? AND first_offset <= ?",
                     (topic, partition, producer_id, marker_offset)).fetchone()
    if row is None:
        return
    tx.execute("DELETE FROM open_transaction_partitions WHERE topic = ? AND partition = ? AND "
               "producer_id = ?", (topic, partition, producer_id))
    if aborted:
        tx.execute("INSERT INTO aborted_transactions VALUES (?, ?, ?, ?, ?)",
                   (topic, partition, producer_id, row[0], marker_offset))

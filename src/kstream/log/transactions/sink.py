"""Exactly-once writes for a Spark sink: many task producers, one commit decision per batch.

Spark runs a micro-batch's writes in many tasks (each may be retried) and
then calls ``commit(messages, batchId)`` once on the driver. So:

* each task attempt writes transactional frames under a producer id of its own
  (:class:`SinkTaskWriter`); the partitions it writes stay open (holding the
  LSO) until the driver decides;
* the driver records the decision for (sink, batch) durably first ("Committing"
  with the exact producer ids and partitions), then writes a COMMIT marker to
  each, then marks the batch "Committed"; a crash in between is rolled forward
  by the next driver (or the next expiry), so a batch is never half committed;
* a batch already Committed (a replay after a crash) commits nothing again: the
  replay's writes are aborted;
* open writes of the sink that are in no commit decision (failed task
  attempts, zombies of an earlier run) are aborted at every commit, and any
  write no decision names is aborted the cluster's ``transaction.max.timeout.ms``
  after its task started (a task has no producer setting of its own; an older
  cluster's stored ``transaction.timeout.ms`` where it has one:
  :attr:`~kstream.log.transactions.store.TransactionStore.default_timeout_ms`;
  :mod:`kstream.log.transactions.expiry`), so it never becomes visible and
  never holds the LSO for good.

Fencing: a task attempt's writes live while its ``sink_producers`` row does.
Aborting a write deletes the row first, then writes the markers; every append
checks the row under the partition lock (:meth:`SinkTaskWriter.before_append_locked`),
so a zombie attempt (speculation, a lost executor, a task whose batch was
committed by another attempt) gets FencedError and writes nothing more, on old
and new partitions alike. Its partitions whose markers are not written yet are
orphans, aborted by whoever comes next. A commit whose writes were fenced
(aborted by a timeout) fails instead of committing less than the batch.

A sink is identified by its query's id (streaming: the id Spark keeps in the checkpoint, see
:mod:`kstream.sink.query_identity`) or a job id (batch). Only the newest committed batch of a
sink is kept (the only one Spark can replay); a commit of an older one is a rolled-back checkpoint.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kstream.errors import CheckpointError, FencedError
from kstream.log.transactions.store import SINK_COMMITTING, TransactionStore
from kstream.log.transactions.writer import abort_orphans, write_markers_together

if TYPE_CHECKING:
    from kstream.log.cluster.cluster import Cluster
    from kstream.log.cluster.partition import Partition

COMMITTING, COMMITTED, ABORTED = SINK_COMMITTING, "Committed", "Aborted"
_SINK_EPOCH = 0


@dataclass(frozen=True)
class TaskWrites:
    """What one task attempt wrote: its producer id and partitions (the commit message)."""

    producer_id: int
    partitions: tuple[tuple[str, int], ...]
    records: int


class SinkStore:
    """The sink tables in a cluster's metadata database (made with the transaction tables, by
    the first write: a missing table reads as empty)."""

    def __init__(self, cluster: Cluster, transactions: TransactionStore | None = None):
        self.cluster = cluster
        self.transactions = transactions or TransactionStore.for_cluster(cluster)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        self.transactions.ensure_schema()
        with self.cluster.metadata.transaction() as tx:
            yield tx

    def new_task_producer(self, sink_id: str, batch_id: int | None = None) -> int:
        """A producer id for one task attempt. With ``batch_id`` (when the task knows it),
        FencedError if that batch is already decided: the attempt is a zombie."""
        with self._write() as tx:  # one SQLite commit (an fsync of its WAL) for the id and the row
            producer_id = self.cluster.metadata.next_counter_in(tx, "producer_id")
            if batch_id is not None:
                row = tx.execute("SELECT state FROM sink_batches WHERE sink_id = ? AND batch_id = ?",
                                 (sink_id, batch_id)).fetchone()
                if row is not None:
                    raise FencedError(f"batch {batch_id} of sink {sink_id!r} is already {row[0]}; this task "
                                      "attempt is a zombie and writes nothing")
            tx.execute("INSERT INTO sink_producers VALUES (?, ?, '[]', ?)", (sink_id, producer_id, _now()))
        return producer_id

    def add_partition(self, sink_id: str, producer_id: int, topic: str, partition: int, first_offset: int) -> None:
        """The task attempt's first frame on the partition comes next (call under its lock):
        FencedError when the attempt's writes were aborted or its batch decided without it."""
        with self._write() as tx:
            row = tx.execute("SELECT partitions, created_ms FROM sink_producers WHERE sink_id = ? AND producer_id = ?",
                             (sink_id, producer_id)).fetchone()
            if row is None:
                raise _zombie(sink_id, producer_id)
            self._refuse_if_timed_out(sink_id, producer_id, row[1])
            partitions = json.loads(row[0])
            partitions.append([topic, partition])
            tx.execute("UPDATE sink_producers SET partitions = ? WHERE sink_id = ? AND producer_id = ?",
                       (json.dumps(partitions), sink_id, producer_id))
            tx.execute("INSERT OR IGNORE INTO open_transaction_partitions VALUES (?, ?, ?, ?)",
                       (topic, partition, producer_id, first_offset))

    def check_live(self, sink_id: str, producer_id: int) -> None:
        """Before every append of a task attempt, under the partition lock."""
        rows = self.cluster.metadata.read_rows(
            "SELECT created_ms FROM sink_producers WHERE sink_id = ? AND producer_id = ?", (sink_id, producer_id))
        if not rows:
            raise _zombie(sink_id, producer_id)
        self._refuse_if_timed_out(sink_id, producer_id, rows[0][0])

    def _refuse_if_timed_out(self, sink_id: str, producer_id: int, created_ms: int) -> None:
        """A task write past its timeout (the cluster's) reads as aborted to every reader
        (:mod:`kstream.log.transactions.view`) even before the expiry fences it: it may write no more."""
        timeout_ms = self.transactions.default_timeout_ms
        if timeout_ms is not None and _now() >= created_ms + timeout_ms:
            raise FencedError(f"task producer {producer_id} of sink {sink_id!r} began more than "
                              f"transaction.max.timeout.ms={timeout_ms} ago (the cluster's): its writes are "
                              "aborted and it may not write more (Spark runs the batch again if it still needs it; "
                              "or use a cluster created with a larger transaction.max.timeout.ms)")

    def last_committed(self, sink_id: str) -> int | None:
        """The newest batch of the sink that is Committed (older ones are pruned)."""
        rows = self.cluster.metadata.read_rows(
            "SELECT MAX(batch_id) FROM sink_batches WHERE sink_id = ? AND state = ?", (sink_id, COMMITTED))
        return rows[0][0] if rows else None

    def batch_state(self, sink_id: str, batch_id: int) -> tuple[str, list[TaskWrites]] | None:
        rows = self.cluster.metadata.read_rows(
            "SELECT state, writes FROM sink_batches WHERE sink_id = ? AND batch_id = ?", (sink_id, batch_id))
        if not rows:
            return None
        row = rows[0]
        return row[0], [TaskWrites(w[0], tuple(tuple(p) for p in w[1]), w[2]) for w in json.loads(row[1])]

    def commit(self, sink_id: str, batch_id: int, writes: list[TaskWrites]) -> bool:
        """Commit a batch exactly once; False when it is the sink's last committed batch (Spark
        replays it after a crash before its own commit log recorded it): the replay is aborted.
        CheckpointError, with nothing committed, for a batch older than the last committed one:
        Spark replays only its newest batch, so the query's checkpoint was rolled back, and
        passing the batch as written would drop its rows silently.
        FencedError, with nothing committed, when some of the writes were aborted already
        (they outlived the cluster's transaction.max.timeout.ms): run the batch again."""
        self.recover(sink_id)
        last = self.last_committed(sink_id)
        if last is not None and batch_id <= last:
            self._abort(sink_id, {w.producer_id for w in writes})
            if batch_id < last:
                raise CheckpointError(
                    f"sink {sink_id!r} was asked to commit batch {batch_id}, but it committed batch {last} of "
                    "this query already: the query's checkpoint was rolled back (restored from an older copy, "
                    "or its offsets/commits logs cut). Its rows are not written twice, nor dropped silently: "
                    "start the query on a fresh checkpoint location to write them as a new query")
            return False
        payload = json.dumps([[w.producer_id, [list(p) for p in w.partitions], w.records] for w in writes])
        timeout_ms = self.transactions.default_timeout_ms
        with self._write() as tx:
            # A write past its deadline already reads as aborted (kstream.log.transactions.view): it is
            # gone for the decision too, even while its row waits for the expiry.
            cutoff = -1 if timeout_ms is None else _now() - timeout_ms
            live = {r[0] for r in tx.execute("SELECT producer_id FROM sink_producers WHERE sink_id = ? "
                                             "AND created_ms > ?", (sink_id, cutoff))}
            gone = sorted(w.producer_id for w in writes if w.producer_id not in live)
            if not gone:
                tx.execute("INSERT OR REPLACE INTO sink_batches VALUES (?, ?, ?, ?, ?)",
                           (sink_id, batch_id, COMMITTING, payload, _now()))
        if gone:
            self._abort(sink_id, {w.producer_id for w in writes})
            raise FencedError(
                f"batch {batch_id} of sink {sink_id!r} cannot commit: the writes of task producer(s) {gone} were "
                "aborted (older than the cluster's transaction.max.timeout.ms); nothing of the batch was "
                "committed. Restart the query to run the batch again (or use a cluster created with a larger "
                "transaction.max.timeout.ms)")
        self._finish(sink_id, batch_id, writes)
        self._abort_orphans(sink_id)
        return True

    def abort(self, sink_id: str, writes: list[TaskWrites], batch_id: int | None = None) -> None:
        """Spark aborts the batch or job: everything the sink has open goes, including the
        writes of failed tasks that sent no commit message. With ``batch_id`` (a batch job's,
        which nothing runs again) the decision is kept, so a task attempt Spark has not stopped
        yet is refused when it starts after the abort instead of leaving its rows open (holding
        the LSO) until the timeout; a micro-batch's abort keeps none (a restart runs it again)."""
        if batch_id is not None:
            with self._write() as tx:
                tx.execute("INSERT OR IGNORE INTO sink_batches VALUES (?, ?, ?, '[]', ?)",
                           (sink_id, batch_id, ABORTED, _now()))
        self._abort(sink_id, {w.producer_id for w in writes})
        self._abort_orphans(sink_id)

    def fence_expired(self) -> list[str]:
        """Fence task writes of any sink older than their timeout that no decision
        names (their rows go; :func:`~kstream.log.transactions.writer.abort_orphans` aborts them).
        Returns the sinks with a commit decision that old, to roll forward."""
        timeout_ms = self.transactions.default_timeout_ms
        if timeout_ms is None:
            return []
        query = "SELECT sink_id, producer_id FROM sink_producers WHERE created_ms <= ?"
        aborted = "SELECT 1 FROM sink_batches WHERE state = ? AND updated_ms <= ? LIMIT 1"
        cutoff = (_now() - timeout_ms,)
        if not (self.cluster.metadata.read_rows(query, cutoff)
                or self.cluster.metadata.read_rows(aborted, (ABORTED, *cutoff))):
            return []  # the usual case: no write lock taken
        recover = set()
        with self._write() as tx:
            # A batch job's abort decision outlives the task attempts it refuses: one that would
            # start later still could not outlive its own timeout (its writes read as aborted).
            tx.execute("DELETE FROM sink_batches WHERE state = ? AND updated_ms <= ?", (ABORTED, *cutoff))
            for sink_id, producer_id in tx.execute(query, cutoff).fetchall():
                if producer_id in _decided(tx, sink_id):
                    recover.add(sink_id)
                else:
                    tx.execute("DELETE FROM sink_producers WHERE sink_id = ? AND producer_id = ?",
                               (sink_id, producer_id))
        return sorted(recover)

    def recover(self, sink_id: str) -> None:
        """Roll forward a commit a crashed driver decided but did not finish."""
        rows = self.cluster.metadata.read_rows(
            "SELECT batch_id FROM sink_batches WHERE sink_id = ? AND state = ?", (sink_id, COMMITTING))
        for (batch_id,) in rows:
            state = self.batch_state(sink_id, batch_id)
            assert state is not None
            self._finish(sink_id, batch_id, state[1])

    def _finish(self, sink_id: str, batch_id: int, writes: list[TaskWrites]) -> None:
        def decided() -> bool:
            state = self.batch_state(sink_id, batch_id)
            return state is not None and state[0] == COMMITTING

        def mark_committed(tx: sqlite3.Connection) -> None:
            tx.execute("UPDATE sink_batches SET state = ?, updated_ms = ? WHERE sink_id = ? AND batch_id = ?",
                       (COMMITTED, _now(), sink_id, batch_id))
            # Only the newest committed batch is ever replayed: older rows would grow without bound.
            tx.execute("DELETE FROM sink_batches WHERE sink_id = ? AND batch_id < ? AND state = ?",
                       (sink_id, batch_id, COMMITTED))
            tx.executemany("DELETE FROM sink_producers WHERE sink_id = ? AND producer_id = ?",
                           [(sink_id, w.producer_id) for w in writes])

        # Every task's markers at once, fsynced together; their rows end in the same SQLite
        # transaction that marks the batch Committed (a crash before it is rolled forward).
        write_markers_together(self.cluster, self.transactions, [(w.producer_id, list(w.partitions)) for w in writes],
                               _SINK_EPOCH, True, decided, also=mark_committed)

    def _abort_orphans(self, sink_id: str) -> None:
        rows = self.cluster.metadata.read_rows(
            "SELECT producer_id FROM sink_producers WHERE sink_id = ?", (sink_id,))
        self._abort(sink_id, {r[0] for r in rows})

    def _abort(self, sink_id: str, producer_ids: set[int]) -> None:
        """Fence the writes first (their rows go: every later append of theirs is refused),
        then abort what they left open."""
        if not producer_ids:
            return  # the usual case after a commit: no write lock taken, nothing to look up
        with self._write() as tx:
            fenced = producer_ids - _decided(tx, sink_id)
            tx.executemany("DELETE FROM sink_producers WHERE sink_id = ? AND producer_id = ?",
                           [(sink_id, producer_id) for producer_id in fenced])
        abort_orphans(self.cluster, self.transactions, fenced)


class SinkTaskWriter:
    """The transaction context of one task attempt (used as ``txn`` by Partition.append)."""

    def __init__(self, store: SinkStore, sink_id: str, batch_id: int | None = None):
        self.store = store
        self.sink_id = sink_id
        self.producer_id = store.new_task_producer(sink_id, batch_id)
        self.epoch = _SINK_EPOCH
        self.partitions: set[tuple[str, int]] = set()

    def before_append_locked(self, partition: Partition) -> None:
        """Refuse a zombie attempt (its writes aborted, its batch decided without it), on a
        partition it wrote before or a new one."""
        key = (partition.topic, partition.partition)
        if key in self.partitions:
            self.store.check_live(self.sink_id, self.producer_id)
            return
        self.store.add_partition(self.sink_id, self.producer_id, partition.topic, partition.partition,
                                 partition.log_end_offset_locked())
        self.partitions.add(key)


def _decided(tx, sink_id: str) -> set[int]:
    """Producer ids a Committing decision of the sink names (never aborted: rolled forward)."""
    named: set[int] = set()
    for (writes,) in tx.execute("SELECT writes FROM sink_batches WHERE sink_id = ? AND state = ?",
                                (sink_id, COMMITTING)):
        named.update(w[0] for w in json.loads(writes))
    return named


def _zombie(sink_id: str, producer_id: int) -> FencedError:
    return FencedError(f"task producer {producer_id} of sink {sink_id!r} was fenced: its batch was committed by "
                       "another attempt or its writes were aborted; this task attempt is a zombie and may not "
                       "write (Spark runs the batch again if it still needs it)")


def _now() -> int:
    return int(time.time() * 1000)

"""Exactly-once writes for a Spark sink: many task producers, one commit decision per batch.

Spark runs a micro-batch's writes in many tasks (each may be retried) and
then calls ``commit(messages, batchId)`` once on the driver. So:

* each task attempt writes transactional frames under a producer id of its own
  (:class:`SinkTaskWriter`); the partitions it writes stay open (holding the
  LSO) until the driver decides;
* the driver records the decision for (sink, batch) durably first ("Committing"
  with the exact producer ids and partitions), then writes a COMMIT marker to
  each, then marks the batch "Committed"; a crash in between is rolled forward
  by the next driver, so a batch is never half committed;
* a batch already Committed (a replay after a crash) commits nothing again: the
  replay's writes are aborted;
* open writes of the sink that are in no commit decision (failed task
  attempts, zombies of an earlier run) are aborted at every commit (and,
  when no commit comes, after ``transaction.timeout.ms``), so they never
  become visible and never hold the LSO for good.

A sink is identified by its checkpoint location (streaming) or a job id (batch).
Writes that no driver ever decides (the driver died) are aborted once older
than ``transaction.timeout.ms`` (:meth:`SinkStore.abort_expired`, run whenever
a sink task starts), so they cannot hold the LSO back for good.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kstream.log.cluster import Cluster
from kstream.log.transactions import TransactionStore
from kstream.log.txn_writer import write_markers

if TYPE_CHECKING:
    from kstream.log.partition import Partition

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sink_producers (
    sink_id TEXT NOT NULL, producer_id INTEGER NOT NULL, partitions TEXT NOT NULL, created_ms INTEGER NOT NULL,
    PRIMARY KEY (sink_id, producer_id));
CREATE TABLE IF NOT EXISTS sink_batches (
    sink_id TEXT NOT NULL, batch_id INTEGER NOT NULL, state TEXT NOT NULL, writes TEXT NOT NULL,
    updated_ms INTEGER NOT NULL, PRIMARY KEY (sink_id, batch_id));
"""
COMMITTING, COMMITTED = "Committing", "Committed"
_SINK_EPOCH = 0


@dataclass(frozen=True)
class TaskWrites:
    """What one task attempt wrote: its producer id and partitions (the commit message)."""

    producer_id: int
    partitions: tuple[tuple[str, int], ...]
    records: int


class SinkStore:
    """The sink tables in a cluster's metadata database."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.transactions = TransactionStore(cluster.metadata)
        cluster.metadata.ensure_schema("sink", _SCHEMA)

    def new_task_producer(self, sink_id: str) -> int:
        producer_id = self.cluster.metadata.next_counter("producer_id")
        with self.cluster.metadata.transaction() as tx:
            tx.execute("INSERT INTO sink_producers VALUES (?, ?, '[]', ?)", (sink_id, producer_id, _now()))
        return producer_id

    def add_partition(self, sink_id: str, producer_id: int, topic: str, partition: int, first_offset: int) -> None:
        with self.cluster.metadata.transaction() as tx:
            row = tx.execute("SELECT partitions FROM sink_producers WHERE sink_id = ? AND producer_id = ?",
                             (sink_id, producer_id)).fetchone()
            partitions = json.loads(row[0]) if row else []
            partitions.append([topic, partition])
            tx.execute("UPDATE sink_producers SET partitions = ? WHERE sink_id = ? AND producer_id = ?",
                       (json.dumps(partitions), sink_id, producer_id))
            tx.execute("INSERT OR IGNORE INTO open_transaction_partitions VALUES (?, ?, ?, ?)",
                       (topic, partition, producer_id, first_offset))

    def batch_state(self, sink_id: str, batch_id: int) -> tuple[str, list[TaskWrites]] | None:
        row = self.cluster.metadata.connection.execute(
            "SELECT state, writes FROM sink_batches WHERE sink_id = ? AND batch_id = ?", (sink_id, batch_id)
        ).fetchone()
        if row is None:
            return None
        return row[0], [TaskWrites(w[0], tuple(tuple(p) for p in w[1]), w[2]) for w in json.loads(row[1])]

    def commit(self, sink_id: str, batch_id: int, writes: list[TaskWrites]) -> bool:
        """Commit a batch exactly once; False when it was already committed (its replay is aborted)."""
        self.recover(sink_id)
        known = self.batch_state(sink_id, batch_id)
        if known is not None and known[0] == COMMITTED:
            self._abort(sink_id, {w.producer_id for w in writes})
            return False
        payload = json.dumps([[w.producer_id, [list(p) for p in w.partitions], w.records] for w in writes])
        with self.cluster.metadata.transaction() as tx:
            tx.execute("INSERT OR REPLACE INTO sink_batches VALUES (?, ?, ?, ?, ?)",
                       (sink_id, batch_id, COMMITTING, payload, _now()))
        self._finish(sink_id, batch_id, writes)
        self._abort_orphans(sink_id)
        return True

    def abort(self, sink_id: str, writes: list[TaskWrites]) -> None:
        """Spark aborts the batch or job: everything the sink has open goes, including the
        writes of failed tasks that sent no commit message."""
        self._abort(sink_id, {w.producer_id for w in writes})
        self._abort_orphans(sink_id)

    def abort_expired(self, timeout_ms: int) -> int:
        """Abort task writes of any sink older than ``timeout_ms`` that no decision names
        (a driver that died before committing or aborting). Returns how many."""
        cutoff = _now() - timeout_ms
        rows = self.cluster.metadata.connection.execute(
            "SELECT sink_id, producer_id FROM sink_producers WHERE created_ms < ?", (cutoff,)).fetchall()
        for sink_id, producer_id in rows:
            self._abort(sink_id, {producer_id})
        return len(rows)

    def recover(self, sink_id: str) -> None:
        """Roll forward a commit a crashed driver decided but did not finish."""
        rows = self.cluster.metadata.connection.execute(
            "SELECT batch_id FROM sink_batches WHERE sink_id = ? AND state = ?", (sink_id, COMMITTING)).fetchall()
        for (batch_id,) in rows:
            state = self.batch_state(sink_id, batch_id)
            assert state is not None
            self._finish(sink_id, batch_id, state[1])

    def _finish(self, sink_id: str, batch_id: int, writes: list[TaskWrites]) -> None:
        for w in writes:
            still_open = [p for p in w.partitions if self._is_open(p, w.producer_id)]
            write_markers(self.cluster, self.transactions, still_open, w.producer_id, _SINK_EPOCH, commit=True)
        with self.cluster.metadata.transaction() as tx:
            tx.execute("UPDATE sink_batches SET state = ?, updated_ms = ? WHERE sink_id = ? AND batch_id = ?",
                       (COMMITTED, _now(), sink_id, batch_id))
            for w in writes:
                tx.execute("DELETE FROM sink_producers WHERE sink_id = ? AND producer_id = ?",
                           (sink_id, w.producer_id))

    def _abort_orphans(self, sink_id: str) -> None:
        rows = self.cluster.metadata.connection.execute(
            "SELECT producer_id FROM sink_producers WHERE sink_id = ?", (sink_id,)).fetchall()
        self._abort(sink_id, {r[0] for r in rows})

    def _abort(self, sink_id: str, producer_ids: set[int]) -> None:
        for producer_id in producer_ids:
            row = self.cluster.metadata.connection.execute(
                "SELECT partitions FROM sink_producers WHERE sink_id = ? AND producer_id = ?",
                (sink_id, producer_id)).fetchone()
            partitions = [tuple(p) for p in json.loads(row[0])] if row else []
            still_open = [p for p in partitions if self._is_open(p, producer_id)]
            write_markers(self.cluster, self.transactions, still_open, producer_id, _SINK_EPOCH, commit=False)
            with self.cluster.metadata.transaction() as tx:
                tx.execute("DELETE FROM sink_producers WHERE sink_id = ? AND producer_id = ?", (sink_id, producer_id))

    def _is_open(self, partition: tuple[str, int], producer_id: int) -> bool:
        row = self.cluster.metadata.connection.execute(
            "SELECT 1 FROM open_transaction_partitions WHERE topic = ? AND partition = ? AND producer_id = ?",
            (partition[0], partition[1], producer_id)).fetchone()
        return row is not None


class SinkTaskWriter:
    """The transaction context of one task attempt (used as ``txn`` by Partition.append)."""

    def __init__(self, store: SinkStore, sink_id: str):
        self.store = store
        self.sink_id = sink_id
        self.producer_id = store.new_task_producer(sink_id)
        self.epoch = _SINK_EPOCH
        self.partitions: set[tuple[str, int]] = set()

    def before_append_locked(self, partition: Partition) -> None:
        key = (partition.topic, partition.partition)
        if key not in self.partitions:
            self.store.add_partition(self.sink_id, self.producer_id, partition.topic, partition.partition,
                                     partition.log_end_offset_locked())
            self.partitions.add(key)


def _now() -> int:
    return int(time.time() * 1000)

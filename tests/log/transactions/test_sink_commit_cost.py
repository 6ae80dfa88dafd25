"""The Spark sink's fixed cost per micro-batch, without weakening exactly once (issue 21).

A driver's commit writes every task's COMMIT markers first and fsyncs each partition once
for all of them (in parallel), then ends their open rows in the SQLite transaction that marks
the batch Committed; a task attempt registers its producer in one SQLite commit. A driver
killed between the markers' fsync and that transaction is rolled forward by the next one,
with nothing written twice.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import contextmanager

from helpers import consume_values
from kstream import Producer
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.metadata import Metadata
from kstream.log.storage.partition_log import PartitionLog
from kstream.log.transactions.sink import COMMITTED, SinkStore, SinkTaskWriter, TaskWrites

SINK = "stream:/checkpoints/q"


def task_attempt(path: str, sink_id: str = SINK) -> tuple[Producer, SinkTaskWriter]:
    """What sink/writer.py's write_task sets up for one task attempt (acks=all, as it does)."""
    producer = Producer({"cluster": path, "acks": "all", "enable.idempotence": False, "linger.ms": 0})
    writer = SinkTaskWriter(SinkStore(producer.cluster), sink_id)
    producer.bind_sink_transaction(writer)
    return producer, writer


def two_tasks_on_three_partitions(path: str) -> list[TaskWrites]:
    """Two task attempts, each writing one record to each of partitions 0..2 of "out"."""
    writes = []
    for name in (b"a", b"b"):
        producer, writer = task_attempt(path)
        for partition in range(3):
            producer.produce("out", name + b"-%d" % partition, partition=partition)
        producer.flush()
        producer.close()
        writes.append(TaskWrites(writer.producer_id, tuple(sorted(writer.partitions)), 3))
    return writes


def open_rows(path: str) -> list[tuple]:
    cluster = Cluster.open(path)
    try:
        return cluster.metadata.read_rows("SELECT topic, partition, producer_id FROM open_transaction_partitions")
    finally:
        cluster.close()


@contextmanager
def counting(monkeypatch, cls, name: str):
    calls: list[int] = []
    original = getattr(cls, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(cls, name, counted)
    yield calls
    monkeypatch.setattr(cls, name, original)


EXPECTED = [b"a-0", b"a-1", b"a-2", b"b-0", b"b-1", b"b-2"]


def test_a_commit_fsyncs_each_partition_once_for_all_its_tasks(cluster_path, make_topic, monkeypatch):
    make_topic("out", 3)
    writes = two_tasks_on_three_partitions(cluster_path)
    driver = Cluster.open(cluster_path)
    with counting(monkeypatch, PartitionLog, "flush") as fsyncs:
        assert SinkStore(driver).commit(SINK, 0, writes)
    driver.close()
    assert len(fsyncs) == 3  # one per partition (one replica each), not one per task and partition
    assert sorted(consume_values(cluster_path, "out", 3)) == EXPECTED
    assert open_rows(cluster_path) == []


def test_a_commit_is_two_sqlite_commits_whatever_its_tasks_and_partitions(cluster_path, make_topic, monkeypatch):
    """The decision (Committing), then the open rows' ends with the batch's Committed state."""
    make_topic("out", 3)
    writes = two_tasks_on_three_partitions(cluster_path)
    driver = Cluster.open(cluster_path)
    store = SinkStore(driver)
    with counting(monkeypatch, Metadata, "transaction") as commits:
        assert store.commit(SINK, 0, writes)
    assert len(commits) == 2
    assert store.batch_state(SINK, 0)[0] == COMMITTED
    driver.close()
    assert sorted(consume_values(cluster_path, "out", 3)) == EXPECTED


def test_a_task_attempt_registers_its_producer_in_one_sqlite_commit(cluster_path, make_topic, monkeypatch):
    make_topic("out", 1)
    cluster = Cluster.open(cluster_path)
    store = SinkStore(cluster)
    store.transactions.ensure_schema()
    with counting(monkeypatch, Metadata, "transaction") as commits:
        first = store.new_task_producer(SINK)
        second = store.new_task_producer(SINK, batch_id=3)
    assert len(commits) == 2
    assert second > first
    assert sorted(r[0] for r in cluster.metadata.read_rows(
        "SELECT producer_id FROM sink_producers WHERE sink_id = ?", (SINK,))) == [first, second]
    cluster.close()


COMMIT_CHILD = """
import json, sys
from kstream.log.cluster.cluster import Cluster
from kstream.log.transactions.sink import SinkStore, TaskWrites
writes = [TaskWrites(w[0], tuple(tuple(p) for p in w[1]), w[2]) for w in json.loads(sys.argv[2])]
SinkStore(Cluster.open(sys.argv[1])).commit(sys.argv[3], 0, writes)
"""


def test_a_driver_killed_after_the_markers_fsynced_is_rolled_forward_once(cluster_path, make_topic):
    make_topic("out", 3)
    writes = two_tasks_on_three_partitions(cluster_path)
    payload = json.dumps([[w.producer_id, [list(p) for p in w.partitions], w.records] for w in writes])
    env = {**os.environ, "KSTREAM_CRASH_AT": "sink.markers-fsynced"}
    child = subprocess.run([sys.executable, "-c", COMMIT_CHILD, cluster_path, payload, SINK], env=env,
                           capture_output=True, text=True, timeout=60)
    assert child.returncode == -9, child.stderr
    driver = Cluster.open(cluster_path)
    store = SinkStore(driver)
    assert store.batch_state(SINK, 0)[0] == "Committing"  # decided, markers on disk, rows still open
    assert len(open_rows(cluster_path)) == 6
    # The next commit (Spark's replay of batch 0 after the restart) rolls the decision forward
    # and writes nothing twice; its own new attempt's writes are aborted.
    producer, replay = task_attempt(cluster_path)
    producer.produce("out", b"replayed", partition=0)
    producer.flush()
    producer.close()
    assert not store.commit(SINK, 0, [TaskWrites(replay.producer_id, tuple(sorted(replay.partitions)), 1)])
    assert store.batch_state(SINK, 0)[0] == COMMITTED
    driver.close()
    assert sorted(consume_values(cluster_path, "out", 3)) == EXPECTED
    assert open_rows(cluster_path) == []

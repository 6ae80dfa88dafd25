"""A cluster left with every kind of unfinished transaction, past its deadline (issue 26).

Shared by tests/client/test_readers_never_write.py and tests/spark/test_read_only_readers.py:
an Ongoing transaction whose producer "died", a PrepareCommit whose producer "died" before
its markers, a sink batch decided "Committing" whose driver "died" before its markers, and
a sink task write no decision names; committed records around them.
"""

from __future__ import annotations

import json
import time

from helpers import consume_values, file_tree, metadata_dump, open_transaction
from kstream import Admin, NewTopic, Producer
from kstream.groups import ConsumerGroups
from kstream.log.cluster.cluster import Cluster
from kstream.log.transactions.sink import COMMITTING, SinkStore, SinkTaskWriter
from kstream.log.transactions.store import TransactionStore

TIMEOUT_MS = 1000  # the smallest transaction.timeout.ms allowed
SHORT = {"transaction.timeout.ms": TIMEOUT_MS}  # a transactional producer's own timeout
COMMITTED_VIEW = [[b"c-0", b"c-1", b"later-0"], [b"decided", b"sink-committing", b"later-1"]]


def wait_past_deadline(opened_after_ms: float) -> None:
    limit = time.monotonic() + 10
    while time.time() * 1000 < opened_after_ms + TIMEOUT_MS + 5:
        assert time.monotonic() < limit, "deadline never passed"
        time.sleep(0.05)


def snapshot(path: str) -> tuple[dict, list[str]]:
    """Every file and dir under ``path`` and the metadata database's full contents."""
    return file_tree(path), metadata_dump(path)


def task_attempt(path: str, sink_id: str) -> tuple[Producer, SinkTaskWriter]:
    producer = Producer({"cluster": path, "acks": "1", "enable.idempotence": False, "linger.ms": 0})
    writer = SinkTaskWriter(SinkStore(producer.cluster), sink_id)
    producer.bind_sink_transaction(writer)
    return producer, writer


def stuck_cluster(tmp_path, with_group: bool):
    """The writers stay open until the test ends (closing one could end its transaction)."""
    path = str(tmp_path / "c")
    # Spark task writes time out at the cluster's maximum, transactions at their producer's (SHORT).
    with Admin({"cluster": path, "transaction.max.timeout.ms": TIMEOUT_MS}) as admin:
        admin.create_topics([NewTopic("txn", 2)])["txn"].result()
    with Producer({"cluster": path, **SHORT, "transactional.id": "ok", "linger.ms": 0}) as ok:
        ok.init_transactions()
        ok.begin_transaction()
        ok.produce("txn", b"c-0", partition=0)
        ok.produce("txn", b"c-1", partition=0)
        ok.commit_transaction()
    if with_group:  # a group with offsets (its tables exist, as on a real cluster)
        groups = ConsumerGroups(Cluster.open(path))
        groups.commit("g", {("txn", 0): 1})
        groups.close()
        groups.cluster.close()
    opened = time.time() * 1000
    dead = open_transaction(path, "dead", "txn", b"expired", TIMEOUT_MS)  # Ongoing; its process "died"
    decided = Producer({"cluster": path, **SHORT, "transactional.id": "decided", "linger.ms": 0})
    decided.init_transactions()
    decided.begin_transaction()
    decided.produce("txn", b"decided", partition=1)
    decided.flush()
    store = TransactionStore.for_cluster(decided.cluster)
    store.prepare("decided", store.get("decided").epoch, commit=True)  # ... and "died" before its markers
    sink = "stream:/checkpoints/q"
    task, writer = task_attempt(path, sink)
    task.produce("txn", b"sink-committing", partition=1)
    task.flush()
    driver = Cluster.open(path)
    with driver.metadata.transaction() as tx:  # the driver's decision; it "died" before its markers
        tx.execute("INSERT INTO sink_batches VALUES (?, ?, ?, ?, ?)", (sink, 0, COMMITTING, json.dumps(
            [[writer.producer_id, [["txn", 1]], 1]]), int(time.time() * 1000)))
    zombie, _ = task_attempt(path, sink)  # a task write no decision names
    zombie.produce("txn", b"sink-undecided", partition=0)
    zombie.flush()
    with Producer({"cluster": path, "linger.ms": 0}) as plain:
        for partition in (0, 1):
            plain.produce("txn", b"later-%d" % partition, partition=partition)
    wait_past_deadline(opened)
    assert consume_values(path, "txn", 2, "read_uncommitted")  # (any first open's derived files: made now)
    yield path
    for writer_ in (dead, decided, task, zombie):
        writer_.close()
    driver.close()



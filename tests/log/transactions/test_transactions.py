"""Transactions in the log: commit, abort, the LSO, fencing, isolation levels."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

from helpers import consume_values, open_transaction
from kstream import Admin, FencedError, KStreamError, NewTopic, Producer


def read(cluster_path, level, topic="t", partitions=2):
    return sorted(consume_values(cluster_path, topic, partitions, level, timeout=0.2))


def test_commit_abort_and_isolation_levels(cluster_path, make_topic):
    make_topic("t", 2)
    producer = Producer({"cluster": cluster_path, "transactional.id": "tx-1", "linger.ms": 0})
    producer.init_transactions()
    producer.begin_transaction()
    producer.produce("t", b"committed-0", partition=0)
    producer.produce_batch("t", pa.table({"value": [b"committed-1"], "partition": [1]}))
    producer.commit_transaction()
    producer.begin_transaction()
    producer.produce("t", b"aborted-0", partition=0)
    producer.produce("t", b"aborted-1", partition=1)
    producer.flush()
    producer.abort_transaction()
    with Producer({"cluster": cluster_path}) as plain:
        plain.produce("t", b"plain", partition=0)
    assert read(cluster_path, "read_committed") == [b"committed-0", b"committed-1", b"plain"]
    assert read(cluster_path, "read_uncommitted") == [b"aborted-0", b"aborted-1", b"committed-0",
                                                       b"committed-1", b"plain"]
    producer.close()


def test_open_transaction_holds_back_read_committed_readers(cluster_path, make_topic):
    make_topic("t", 1)
    producer = open_transaction(cluster_path, "tx-open", "t", b"pending")
    with Producer({"cluster": cluster_path}) as plain:
        plain.produce("t", b"after-the-open-one", partition=0)
    assert read(cluster_path, "read_committed", partitions=1) == []  # stopped at the LSO
    assert read(cluster_path, "read_uncommitted", partitions=1) == [b"after-the-open-one", b"pending"]
    producer.commit_transaction()
    assert read(cluster_path, "read_committed", partitions=1) == [b"after-the-open-one", b"pending"]
    producer.close()


def test_new_instance_fences_the_old_and_aborts_its_open_transaction(cluster_path, make_topic):
    make_topic("t", 1)
    zombie = open_transaction(cluster_path, "tx-z", "t", b"from-the-zombie")
    successor = Producer({"cluster": cluster_path, "transactional.id": "tx-z", "linger.ms": 0})
    successor.init_transactions()  # bumps the epoch and aborts the zombie's transaction
    with pytest.raises(FencedError, match="fenced by a newer instance"):
        zombie.produce("t", b"too late", partition=0)
    with pytest.raises(FencedError):
        zombie.commit_transaction()
    successor.begin_transaction()
    successor.produce("t", b"from-the-successor", partition=0)
    successor.commit_transaction()
    assert read(cluster_path, "read_committed", partitions=1) == [b"from-the-successor"]
    successor.close()


def test_transactional_producer_needs_an_open_transaction(cluster_path, make_topic):
    make_topic("t", 1)
    producer = Producer({"cluster": cluster_path, "transactional.id": "tx-x", "linger.ms": 0})
    with pytest.raises(KStreamError, match="init_transactions"):
        producer.begin_transaction()
    producer.init_transactions()
    with pytest.raises(KStreamError, match="begin_transaction"):
        producer.produce("t", b"outside", partition=0)
    with pytest.raises(KStreamError, match="no transactional.id"):
        Producer({"cluster": cluster_path}).begin_transaction()


def test_a_dead_producers_transaction_is_aborted_after_the_timeout(tmp_path):
    path = str(tmp_path / "c")
    with Admin({"cluster": path}) as admin:
        admin.create_topics([NewTopic("t", 1)])["t"].result()
    open_transaction(path, "will-die", "t", b"never committed", timeout_ms=1000)  # ... and the process dies here
    with Producer({"cluster": path, "linger.ms": 0}) as plain:
        plain.produce("t", b"later", partition=0)
    assert read(path, "read_committed", partitions=1) == []  # held back by the open transaction
    time.sleep(1.2)
    other = Producer({"cluster": path, "transactional.id": "someone-else"})
    other.init_transactions()  # expires the dead one's transaction
    assert read(path, "read_committed", partitions=1) == [b"later"]
    other.close()


def test_long_lived_reader_follows_transactions_that_end_between_its_rounds(cluster_path, make_topic):
    """A consumer caches the LSO and the aborted list per metadata version: every commit or
    abort made after its last round must still show on its next one."""
    from kstream import Consumer, TopicPartition
    make_topic("t", 1)
    consumer = Consumer({"cluster": cluster_path, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition("t", 0, 0)])

    def drain():
        out = []
        while (message := consumer.poll(0.2)) is not None:
            out.append(message.value())
        return out

    producer = open_transaction(cluster_path, "tx-a", "t", b"pending")
    with Producer({"cluster": cluster_path}) as plain:
        plain.produce("t", b"after-open", partition=0)
    assert drain() == []
    producer.commit_transaction()
    assert drain() == [b"pending", b"after-open"]
    producer.begin_transaction()
    producer.produce("t", b"doomed", partition=0)
    producer.flush()
    assert drain() == []
    producer.abort_transaction()
    with Producer({"cluster": cluster_path}) as plain:
        plain.produce("t", b"after-abort", partition=0)
    assert drain() == [b"after-abort"]
    producer.close()
    consumer.close()


def test_spark_source_planning_and_task_read_take_transactions_from_the_files(cluster_path, make_topic):
    """The Python Spark source without Spark: planning's end is the files' LSO, and a task's read
    skips the aborted transaction whose marker lies between that end and the HW."""
    from kstream.log.cluster.cluster import Cluster
    from kstream.source.partition_reader import read_range
    from kstream.source.planning import PartitionRange, bounds

    make_topic("t", 1)
    aborted = open_transaction(cluster_path, "tx-a", "t", b"aborted")      # 0
    holding = open_transaction(cluster_path, "tx-h", "t", b"held")          # 1: holds the LSO
    aborted.abort_transaction()                                            # 2: marker past the LSO
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as plain:
        plain.produce("t", b"after", partition=0)                          # 3
    cluster = Cluster.open(cluster_path)
    try:
        assert bounds(cluster, "t", 0, "read_committed") == (0, 1)
        assert bounds(cluster, "t", 0, "read_uncommitted") == (0, 4)
    finally:
        cluster.close()
    schema = pa.schema([("value", pa.binary()), ("offset", pa.int64())])

    def values(end, level="read_committed"):
        split = PartitionRange(cluster_path, "t", 0, 0, end, True, level)
        return [v for batch in read_range(split, schema) for v in batch.column("value").to_pylist()]

    assert values(1) == []  # the aborted record is below the LSO, its marker above it
    holding.commit_transaction()                                           # 4
    assert values(5) == [b"held", b"after"]
    assert values(5, "read_uncommitted") == [b"aborted", b"held", b"after"]
    aborted.close()
    holding.close()


def test_a_task_read_waits_for_the_outcome_its_planner_saw_and_never_shows_an_aborted_record(
        cluster_path, make_topic, monkeypatch):
    """A split planned past a transaction (its outcome was fixed when the driver planned: the
    LSO passed it) that the task's own view still shows open (the metadata's row ended, the
    marker appended but not below the HW the task read): the task waits for the marker and
    returns none of the aborted records; without a marker, a clear error after the wait.
    (The clean_readers chaos round caught the task returning them.)"""
    import threading

    from kstream.log import visible_reads
    from kstream.source.partition_reader import read_range
    from kstream.source.planning import PartitionRange

    make_topic("t", 1)
    schema = pa.schema([("value", pa.binary()), ("offset", pa.int64())])
    split = PartitionRange(cluster_path, "t", 0, 0, 1, True)  # [0, 1): as a driver that saw it aborted planned

    def values():
        return [v for batch in read_range(split, schema) for v in batch.column("value").to_pylist()]

    producer = open_transaction(cluster_path, "tx-a", "t", b"aborted")  # 0: open in the task's view
    monkeypatch.setattr(visible_reads, "OUTCOME_WAIT_S", 0.3, raising=False)
    with pytest.raises(KStreamError, match="open in this reader's view.*retry the read"):
        values()
    monkeypatch.setattr(visible_reads, "OUTCOME_WAIT_S", 10.0, raising=False)
    timer = threading.Timer(0.3, producer.abort_transaction)
    timer.start()
    started = time.monotonic()
    try:
        assert values() == []
        assert time.monotonic() - started >= 0.2  # it waited for the marker, it did not guess
    finally:
        timer.join()
        producer.close()

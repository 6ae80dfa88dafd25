"""Zombie writers and transaction timeouts (issue 10, defects 2, 3 and 4).

transaction.timeout.ms is enforced by whoever next touches the partition, never
only by a party that may be dead: a read_committed reader reads an expired
transaction as aborted without writing anything (issue 26: readers never write),
the next transactional writer writes the abort; expiry fences the producer (epoch bump); a Spark task attempt whose
batch was decided without it is fenced under the partition lock.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from helpers import consume_values, open_transaction
from kstream import Admin, Consumer, FencedError, NewTopic, Producer, TopicPartition
from kstream.log.cluster.cluster import Cluster
from kstream.log.transactions.sink import SinkStore, SinkTaskWriter, TaskWrites
from kstream.log.transactions.store import TransactionStore
from kstream.tools.cli.main import cli

TIMEOUT_MS = 1000  # the smallest transaction.timeout.ms allowed
SHORT = {"transaction.timeout.ms": TIMEOUT_MS}  # a transactional producer's own timeout


def short_timeout_cluster(tmp_path, partitions=1) -> str:
    """A cluster whose transactions (each producer's own timeout, given TIMEOUT_MS) and Spark
    task writes (the cluster's maximum) time out after TIMEOUT_MS."""
    path = str(tmp_path / "c")
    with Admin({"cluster": path, "transaction.max.timeout.ms": TIMEOUT_MS}) as admin:
        admin.create_topics([NewTopic("t", partitions)])["t"].result()
    return path


def wait_past_deadline(opened_after_ms: float) -> None:
    """Return once a transaction begun before ``opened_after_ms`` is past its deadline."""
    limit = time.monotonic() + 10
    while time.time() * 1000 < opened_after_ms + TIMEOUT_MS + 5:
        assert time.monotonic() < limit, "deadline never passed"
        time.sleep(0.05)


def now_ms() -> float:
    return time.time() * 1000


def open_rows(path: str, topic: str = "t") -> list[tuple[int, int]]:
    """(partition, first offset) of the open transactions holding the topic's partitions back."""
    cluster = Cluster.open(path)
    try:
        return cluster.metadata.connection.execute(
            "SELECT partition, first_offset FROM open_transaction_partitions WHERE topic = ?", (topic,)).fetchall()
    finally:
        cluster.close()


def log_end(path: str, partition: int = 0, topic: str = "t") -> int:
    cluster = Cluster.open(path)
    handle = cluster.partition(topic, partition)
    try:
        return handle.log_end_offset_locked()
    finally:
        handle.close()
        cluster.close()


def expire_by_a_writer(path: str) -> None:
    """A writer passing by (another transactional id's init_transactions) runs the expiry."""
    with Producer({"cluster": path, **SHORT, "transactional.id": "passer-by", "linger.ms": 0}) as writer:
        writer.init_transactions()


def poll_until(consumer: Consumer, wanted: int, seconds: float = 10.0) -> list[bytes]:
    """Poll until ``wanted`` records came (or the deadline): every value seen."""
    seen: list[bytes] = []
    limit = time.monotonic() + seconds
    while len(seen) < wanted and time.monotonic() < limit:
        message = consumer.poll(0.1)
        if message is not None:
            assert message.error() is None
            seen.append(message.value())
    return seen


# -- defect 3: a dead producer's transaction is aborted by readers, without init_transactions ---------


_CHILD = """
import sys, time
from kstream import Producer
producer = Producer({"cluster": sys.argv[1], "transaction.timeout.ms": 1000, "transactional.id": "will-die",
                     "linger.ms": 0})
producer.init_transactions()
producer.begin_transaction()
for i in range(3):
    producer.produce("t", b"doomed-%d" % i, partition=0)
producer.flush()
print("ready", flush=True)
time.sleep(600)
"""


def test_a_sigkilled_producers_transaction_stops_holding_readers_after_the_timeout(tmp_path):
    path = short_timeout_cluster(tmp_path)
    consumer = Consumer({"cluster": path, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition("t", 0, 0)])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, path], stdout=subprocess.PIPE, env=env)
    try:
        assert child.stdout.readline().strip() == b"ready"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    with Producer({"cluster": path, "linger.ms": 0}) as plain:
        for i in range(2):
            plain.produce("t", b"later-%d" % i, partition=0)
    assert consumer.poll(0.2) is None  # held back by the dead producer's open transaction
    # Nobody calls init_transactions(): the reader reads it as aborted once the timeout passed.
    seen = poll_until(consumer, 2)
    assert seen == [b"later-0", b"later-1"]
    assert poll_until(consumer, 1, seconds=0.5) == []
    consumer.close()
    assert open_rows(path) == [(0, 0)]  # ... and wrote nothing: the abort waits for a writer
    assert sorted(consume_values(path, "t", 1, "read_committed")) == [b"later-0", b"later-1"]
    expire_by_a_writer(path)
    assert open_rows(path) == []  # the LSO reached the log end
    assert sorted(consume_values(path, "t", 1, "read_committed")) == [b"later-0", b"later-1"]


def test_a_dead_producer_is_expired_by_a_fresh_reader_and_shown_by_describe(tmp_path):
    path = short_timeout_cluster(tmp_path)
    open_transaction(path, "stuck", "t", b"never committed", TIMEOUT_MS)  # ... and its process dies here
    opened = now_ms()
    with Producer({"cluster": path, "linger.ms": 0}) as plain:
        plain.produce("t", b"later", partition=0)
    described = CliRunner().invoke(cli, ["--cluster", path, "topics", "describe", "t"], catch_exceptions=False)
    assert described.exit_code == 0, described.output
    assert "LSO" in described.output and "Open transactions" in described.output
    assert "transactional.id=stuck" in described.output
    wait_past_deadline(opened)
    described = CliRunner().invoke(cli, ["--cluster", path, "topics", "describe", "t"], catch_exceptions=False)
    assert "passed" in described.output
    assert len(open_rows(path)) == 1  # describe is read-only: it shows, it does not abort
    assert consume_values(path, "t", 1, "read_committed") == [b"later"]
    assert len(open_rows(path)) == 1  # nor does a reader


# -- defect 4: expiry fences the producer ------------------------------------------------------------


def test_a_timed_out_producer_is_fenced_after_a_reader_expired_its_transaction(tmp_path):
    path = short_timeout_cluster(tmp_path)
    zombie = open_transaction(path, "slow", "t", b"first", TIMEOUT_MS)
    wait_past_deadline(now_ms())
    assert consume_values(path, "t", 1, "read_committed") == []  # the reader aborted it
    end = log_end(path)
    with pytest.raises(FencedError, match="slow"):
        zombie.produce("t", b"second", partition=0)
        zombie.flush()
    with pytest.raises(FencedError):
        zombie.commit_transaction()
    assert log_end(path) == end  # nothing of the zombie's was written
    assert consume_values(path, "t", 1, "read_committed") == []
    assert consume_values(path, "t", 1, "read_uncommitted") == [b"first"]
    successor = Producer({"cluster": path, **SHORT, "transactional.id": "slow", "linger.ms": 0})
    successor.init_transactions()
    successor.begin_transaction()
    successor.produce("t", b"from-the-successor", partition=0)
    successor.commit_transaction()
    assert consume_values(path, "t", 1, "read_committed") == [b"from-the-successor"]
    successor.close()


def test_a_timed_out_producer_is_fenced_by_its_own_next_write_and_its_records_never_show(tmp_path):
    path = short_timeout_cluster(tmp_path, partitions=2)
    zombie = open_transaction(path, "late", "t", b"first", TIMEOUT_MS)
    wait_past_deadline(now_ms())
    ends = [log_end(path, p) for p in range(2)]
    # Nobody expired it yet: the zombie's own write, to a partition it had or had not written, finds it.
    for partition, why in ((0, "passed transaction.timeout.ms"), (1, "fenced")):
        with pytest.raises(FencedError, match=why):
            zombie.produce("t", b"second", partition=partition)
            zombie.flush()
    with pytest.raises(FencedError):
        zombie.commit_transaction()
    assert [log_end(path, p) for p in range(2)] == ends
    assert consume_values(path, "t", 2, "read_committed") == []
    assert open_rows(path) == [(0, 0)]  # the fence decided the abort; a reader does not write it
    successor = Producer({"cluster": path, **SHORT, "transactional.id": "late", "linger.ms": 0})
    successor.init_transactions()
    assert open_rows(path) == []  # the successor finished it
    successor.begin_transaction()
    successor.produce("t", b"ok", partition=1)
    successor.commit_transaction()
    assert consume_values(path, "t", 2, "read_committed") == [b"ok"]
    successor.close()


def test_another_writers_begin_expires_a_timed_out_transaction(tmp_path):
    path = short_timeout_cluster(tmp_path)
    zombie = open_transaction(path, "gone", "t", b"lost", TIMEOUT_MS)
    opened = now_ms()
    other = Producer({"cluster": path, **SHORT, "transactional.id": "other", "linger.ms": 0})
    other.init_transactions()
    wait_past_deadline(opened)
    other.begin_transaction()  # a writer touching the cluster enforces the timeout
    other.produce("t", b"kept", partition=0)
    other.commit_transaction()
    assert open_rows(path) == []
    with pytest.raises(FencedError):
        zombie.produce("t", b"zombie", partition=0)
        zombie.flush()
    assert consume_values(path, "t", 1, "read_committed") == [b"kept"]
    other.close()


# -- defect 2: zombie Spark task attempts (the sink's classes driven as Spark would) ----------------


def task_attempt(path: str, sink_id: str, batch_id: int | None = None) -> tuple[Producer, SinkTaskWriter]:
    """What sink/writer.py's write_task sets up for one task attempt."""
    producer = Producer({"cluster": path, "acks": "1", "enable.idempotence": False, "linger.ms": 0})
    try:
        writer = SinkTaskWriter(SinkStore(producer.cluster), sink_id, batch_id)
    except BaseException:
        producer.close()
        raise
    producer.bind_sink_transaction(writer)
    return producer, writer


def writes(writer: SinkTaskWriter, records: int) -> TaskWrites:
    return TaskWrites(writer.producer_id, tuple(sorted(writer.partitions)), records)


def test_a_zombie_task_attempt_is_fenced_once_another_attempt_of_its_batch_commits(cluster_path, make_topic):
    make_topic("out", 3)
    sink = "stream:/checkpoints/q"
    a, writer_a = task_attempt(cluster_path, sink)
    b, _ = task_attempt(cluster_path, sink)  # a speculative attempt of the same task
    for producer, name in ((a, b"a"), (b, b"b")):
        producer.produce("out", name + b"-0", partition=0)
        producer.produce("out", name + b"-1", partition=1)
        producer.flush()
    driver = Cluster.open(cluster_path)
    assert SinkStore(driver).commit(sink, 4, [writes(writer_a, 2)])  # the driver commits attempt A
    ends = [log_end(cluster_path, p, "out") for p in range(3)]
    for partition in (0, 1, 2):  # B keeps going, on partitions it wrote and on one it had not
        with pytest.raises(FencedError, match="zombie"):
            b.produce("out", b"b-late", partition=partition)
            b.flush()
    assert [log_end(cluster_path, p, "out") for p in range(3)] == ends
    assert sorted(consume_values(cluster_path, "out", 3, "read_committed")) == [b"a-0", b"a-1"]
    assert open_rows(cluster_path, "out") == []  # every partition's LSO reached its log end
    a.close()
    b.close()
    driver.close()


def test_a_zombie_writing_right_after_its_abort_marker_is_refused(cluster_path, make_topic):
    """The worst moment: B appends just after the driver's ABORT marker for it landed on
    partition 0 (on that partition and on one it never wrote). Refused; nothing of B shows."""
    make_topic("out", 2)
    sink = "stream:/checkpoints/q"
    a, writer_a = task_attempt(cluster_path, sink)
    b, writer_b = task_attempt(cluster_path, sink)
    a.produce("out", b"a", partition=0)
    a.flush()
    b.produce("out", b"b-0", partition=0)
    b.flush()
    driver = Cluster.open(cluster_path)
    refused = []
    opened = driver.partition

    def partition(topic, number):
        handle = opened(topic, number)
        append = handle.append

        def append_then_zombie(batch, *args, **kwargs):
            result = append(batch, *args, **kwargs)
            if batch.producer_id == writer_b.producer_id and not refused:
                for target in (0, 1):
                    try:
                        b.produce("out", b"b-late", partition=target)
                        b.flush()
                    except FencedError:
                        refused.append(target)
            return result

        handle.append = append_then_zombie
        return handle

    driver.partition = partition
    assert SinkStore(driver).commit(sink, 0, [writes(writer_a, 1)])
    assert refused == [0, 1]
    assert sorted(consume_values(cluster_path, "out", 2, "read_committed")) == [b"a"]
    assert open_rows(cluster_path, "out") == []
    a.close()
    b.close()
    driver.close()


def test_a_task_attempt_that_starts_after_its_batch_jobs_abort_writes_nothing(cluster_path, make_topic):
    """Spark aborts a failed batch job while another of its tasks is still starting (it stops
    that task only later): the late attempt is refused before it writes, so nothing of the
    job stays open holding the LSO until the timeout (what tests/spark/test_sink.py saw at random)."""
    make_topic("out", 1)
    sink = "batch:job-1"
    early, _ = task_attempt(cluster_path, sink, batch_id=0)
    driver = Cluster.open(cluster_path)
    SinkStore(driver).abort(sink, [], batch_id=0)  # the failed task sent no commit message
    with pytest.raises(FencedError, match="zombie"):
        early.produce("out", b"early", partition=0)
        early.flush()
    with pytest.raises(FencedError, match="already Aborted"):
        task_attempt(cluster_path, sink, batch_id=0)
    assert open_rows(cluster_path, "out") == []
    assert log_end(cluster_path, 0, "out") == 0
    driver.close()
    early.close()


def test_an_abort_ends_a_row_recorded_for_a_frame_that_never_landed(cluster_path, make_topic):
    """A task attempt records its open row at the log end under the partition lock, then writes
    its first frame there. When that write never happens (Spark interrupted the task, the disk
    was full), the driver's ABORT marker lands at the row's own first offset, and it still ends
    the row: nothing may stay open holding the LSO (what tests/spark/test_sink.py saw at random
    in CI with the JVM writer)."""
    make_topic("out", 1)
    sink = "batch:job-2"
    driver = Cluster.open(cluster_path)
    store = SinkStore(driver)
    writer = SinkTaskWriter(store, sink, 0)
    store.add_partition(sink, writer.producer_id, "out", 0, log_end(cluster_path, 0, "out"))  # no frame follows
    store.abort(sink, [], batch_id=0)  # the failed task sent no commit message: the marker lands at 0
    assert open_rows(cluster_path, "out") == []
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as plain:
        plain.produce("out", b"after", partition=0)
    assert consume_values(cluster_path, "out", 1, "read_committed") == [b"after"]
    driver.close()


def test_a_micro_batchs_abort_lets_its_restart_run_the_batch_again(cluster_path, make_topic):
    make_topic("out", 1)
    sink = "stream:/checkpoints/q"
    driver = Cluster.open(cluster_path)
    SinkStore(driver).abort(sink, [])  # the query failed in batch 3 and is restarted
    again, writer = task_attempt(cluster_path, sink, batch_id=3)
    again.produce("out", b"again", partition=0)
    again.flush()
    assert SinkStore(driver).commit(sink, 3, [writes(writer, 1)])
    assert consume_values(cluster_path, "out", 1, "read_committed") == [b"again"]
    driver.close()
    again.close()


def test_an_orphaned_open_partition_row_reads_as_aborted_and_is_aborted_by_the_next_writer(cluster_path,
                                                                                            make_topic):
    """A row left by a writer nobody holds any more (what a zombie's first write to a new
    partition used to leave) must neither hold the LSO nor let its frames through."""
    make_topic("out", 1)
    sink = "stream:/checkpoints/q"
    zombie, writer = task_attempt(cluster_path, sink)
    zombie.produce("out", b"zombie", partition=0)
    zombie.flush()
    driver = Cluster.open(cluster_path)
    with driver.metadata.transaction() as tx:  # its owner went without ending it
        tx.execute("DELETE FROM sink_producers WHERE producer_id = ?", (writer.producer_id,))
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as plain:
        plain.produce("out", b"plain", partition=0)
    assert consume_values(cluster_path, "out", 1, "read_committed") == [b"plain"]
    assert len(open_rows(cluster_path, "out")) == 1  # the reader wrote nothing
    expire_by_a_writer(cluster_path)
    assert open_rows(cluster_path, "out") == []
    assert consume_values(cluster_path, "out", 1, "read_committed") == [b"plain"]
    driver.close()
    zombie.close()


def test_a_commit_whose_task_writes_timed_out_fails_and_commits_nothing(tmp_path):
    path = short_timeout_cluster(tmp_path)
    sink = "batch:job-1"
    task, writer = task_attempt(path, sink)
    opened = now_ms()
    task.produce("t", b"slow", partition=0)
    task.flush()
    wait_past_deadline(opened)
    assert consume_values(path, "t", 1, "read_committed") == []  # the task's write reads as aborted
    with pytest.raises(FencedError, match="transaction.max.timeout.ms"):  # refused, expired or not
        task.produce("t", b"more", partition=0)
        task.flush()
    driver = Cluster.open(path)
    with pytest.raises(FencedError, match="cannot commit"):
        SinkStore(driver).commit(sink, 0, [writes(writer, 1)])
    assert SinkStore(driver).batch_state(sink, 0) is None
    assert consume_values(path, "t", 1, "read_committed") == []
    assert open_rows(path) == []
    driver.close()
    task.close()


# -- the LSO cache: a transaction that began after the round read the metadata version ----------------


def test_a_cached_lso_never_lets_a_transaction_that_began_after_the_version_read_through(cluster_path, make_topic):
    """A fetch round reads the metadata version once, then each partition's HW: a transaction
    that joins the partition and writes in between must not be read up to the new HW."""
    from kstream.log.transactions.isolation import READ_COMMITTED, Isolation

    make_topic("t", 1)
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as plain:
        plain.produce("t", b"before", partition=0)
    cluster = Cluster.open(cluster_path)
    handle = cluster.partition("t", 0)
    isolation = Isolation(READ_COMMITTED, TransactionStore(cluster.metadata), "t", 0, handle.leader_dir)
    version = cluster.metadata.data_version()
    assert isolation.end_offset(handle.high_watermark(), version) == 1
    version = cluster.metadata.data_version()  # the next round reads the version ...
    producer = open_transaction(cluster_path, "in-between", "t", b"uncommitted")  # ... a transaction writes ...
    assert handle.high_watermark() == 2
    assert isolation.end_offset(handle.high_watermark(), version) == 1  # ... and the round reads the HW
    producer.abort_transaction()
    producer.close()
    handle.close()
    cluster.close()

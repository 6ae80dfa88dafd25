"""One Producer shared by several threads, as confluent-kafka's Producer may be (COMPAT.md group E).

Every record a thread's produce() accepted is written exactly once, each
partition's offsets are contiguous, and each thread's records keep their order
per key; flush(), poll(), delivery callbacks that produce, transactions and
close() may run in one thread while others produce. Threads are joined with a
time limit, so a deadlock fails the test instead of hanging it.
"""

from __future__ import annotations

import gc
import os
import threading
import time
import weakref
from collections import defaultdict

import pytest

from kstream import Consumer, Producer, TopicPartition

_JOIN_S = 60.0  # a generous limit: a deadlock fails the test rather than hanging it


def _run(targets):
    """Run each callable in its own thread; re-raise the first error any of them raised."""
    errors: list[BaseException] = []

    def wrap(target):
        def run():
            try:
                target()
            except BaseException as err:  # re-raised in the test's thread below
                errors.append(err)
        return run

    threads = [threading.Thread(target=wrap(target)) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(_JOIN_S)
    assert not any(thread.is_alive() for thread in threads), "a thread is stuck (deadlock?)"
    if errors:
        raise errors[0]


def _read(cluster_path, topic, partitions, level="read_uncommitted"):
    """{partition: [(offset, key, value)]} of everything in the topic."""
    consumer = Consumer({"cluster": cluster_path, "isolation.level": level})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: dict[int, list] = defaultdict(list)
    try:
        while (message := consumer.poll(0.3)) is not None:
            assert message.error() is None, message.error()
            out[message.partition()].append((message.offset(), message.key(), message.value()))
    finally:
        consumer.close()
    return out


def _check_log(stored, expected_values, contiguous=True):
    """Each expected value once, offsets contiguous per partition (not with transaction markers
    between), each thread's keys in order."""
    values = [value for rows in stored.values() for _, _, value in rows]
    assert sorted(values) == sorted(expected_values)
    assert len(set(values)) == len(values)
    for rows in stored.values():
        offsets = [offset for offset, _, _ in rows]
        assert offsets == sorted(offsets)
        if contiguous:
            assert offsets == list(range(offsets[0], offsets[0] + len(offsets)))
        last: dict[bytes, int] = {}
        for _, key, value in rows:  # value b"<thread>:<index>", key b"<thread>-<k>"
            index = int(value.split(b":")[1])
            if key is not None:
                assert last.get(key, -1) < index, f"key {key!r} out of order at {value!r}"
                last[key] = index


@pytest.mark.parametrize("acks", ["all", "1"])
def test_threads_share_one_producer(cluster_path, make_topic, acks):
    make_topic("t", partitions=3)
    producer = Producer({"cluster": cluster_path, "acks": acks,  # idempotent by default, any acks
                         "batch.size": 2000, "linger.ms": 1})
    threads, records = 4, 1500
    reports: list = []

    def report(err, msg):
        assert err is None, err
        reports.append((msg.partition(), msg.offset(), msg.value()))

    def produce(thread):
        def run():
            for i in range(records):
                key = f"{thread}-{i % 7}".encode() if i % 3 else None  # keyed and sticky records
                producer.produce("t", f"{thread}:{i}".encode(), key=key, on_delivery=report)
                if i % 100 == 0:
                    producer.poll(0)
        return run

    _run([produce(t) for t in range(threads)])
    producer.flush()
    producer.close()
    expected = [f"{t}:{i}".encode() for t in range(threads) for i in range(records)]
    stored = _read(cluster_path, "t", 3)
    _check_log(stored, expected)
    offsets = {(p, offset): value for p, rows in stored.items() for offset, _, value in rows}
    assert len(reports) == len(expected)
    assert all(offsets[(p, offset)] == value for p, offset, value in reports)


def test_a_thread_flushes_while_others_produce(cluster_path, make_topic):
    make_topic("t", partitions=2)
    producer = Producer({"cluster": cluster_path, "linger.ms": 50})
    done = threading.Event()
    flushes = [0]

    def produce(thread):
        def run():
            for i in range(2000):
                producer.produce("t", f"{thread}:{i}".encode(), key=f"{thread}-{i % 5}".encode())
        return run

    def flush():
        while not done.is_set():
            assert producer.flush() >= 0
            flushes[0] += 1

    flusher = threading.Thread(target=flush)
    flusher.start()
    try:
        _run([produce(t) for t in range(3)])
    finally:
        done.set()
        flusher.join(_JOIN_S)
    assert not flusher.is_alive()
    assert flushes[0] > 0
    assert producer.flush() == 0
    producer.close()
    _check_log(_read(cluster_path, "t", 2), [f"{t}:{i}".encode() for t in range(3) for i in range(2000)])


def test_a_delivery_callback_produces(cluster_path, make_topic):
    """Callbacks run in the thread that polls, without the producer's lock: producing from one
    neither deadlocks nor disturbs the other threads."""
    make_topic("t", partitions=2)
    make_topic("echo")
    producer = Producer({"cluster": cluster_path, "linger.ms": 0, "batch.size": 500})

    def echo(err, msg):
        assert err is None, err
        producer.produce("echo", msg.value())

    def produce(thread):
        def run():
            for i in range(300):
                producer.produce("t", f"{thread}:{i}".encode(), on_delivery=echo)
                producer.poll(0)
        return run

    _run([produce(t) for t in range(3)])
    _run([producer.flush])  # serves the last reports (whose callbacks produce), then sends those
    producer.flush()
    producer.close()
    expected = [f"{t}:{i}".encode() for t in range(3) for i in range(300)]
    _check_log(_read(cluster_path, "t", 2), expected)
    _check_log(_read(cluster_path, "echo", 1), expected)


def test_close_while_another_thread_produces(cluster_path, make_topic):
    """Records accepted before close() are written once; later produce() calls raise the closed
    error, nothing else."""
    make_topic("t")
    producer = Producer({"cluster": cluster_path, "linger.ms": 1, "batch.size": 1000})
    accepted: list[bytes] = []
    started = threading.Event()
    outcome: list[BaseException] = []

    def produce():
        i = 0
        try:
            while True:
                value = f"0:{i}".encode()
                producer.produce("t", value, key=b"0-0")
                accepted.append(value)
                i += 1
                if i == 200:
                    started.set()
        except BaseException as err:
            outcome.append(err)
            started.set()

    thread = threading.Thread(target=produce)
    thread.start()
    assert started.wait(_JOIN_S)
    assert producer.close() is True
    thread.join(_JOIN_S)
    assert not thread.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], RuntimeError), outcome
    assert str(outcome[0]) == "Producer has been closed"
    _check_log(_read(cluster_path, "t", 1), accepted)


def test_a_transaction_holds_what_was_produced_before_commit(cluster_path, make_topic):
    """One thread begins and commits while others produce: every record whose produce()
    returned before commit_transaction() was called is committed by it; each record lands in
    exactly one transaction."""
    make_topic("t", partitions=2)
    # No sends from produce() (big batches, long linger): commit's flush sends them.
    producer = Producer({"cluster": cluster_path, "transactional.id": "tx", "linger.ms": 600_000,
                         "batch.size": 100_000_000})
    producer.init_transactions()
    producer.begin_transaction()
    counts = [0, 0, 0]
    stop = threading.Event()

    def produce(thread):
        def run():
            i = 0
            while not stop.is_set() and i < 5000:
                producer.produce("t", f"{thread}:{i}".encode(), key=f"{thread}-{i % 4}".encode())
                i += 1
                counts[thread] = i
        return run

    def transactions():
        try:
            for _ in range(3):
                before = list(counts)
                producer.commit_transaction()
                committed = {v for rows in _read(cluster_path, "t", 2, "read_committed").values()
                             for _, _, v in rows}
                for thread, count in enumerate(before):
                    assert all(f"{thread}:{i}".encode() in committed for i in range(count))
                producer.begin_transaction()
        finally:
            stop.set()

    _run([produce(t) for t in range(3)] + [transactions])
    producer.commit_transaction()
    producer.close()
    expected = [f"{t}:{i}".encode() for t in range(3) for i in range(counts[t])]
    _check_log(_read(cluster_path, "t", 2, "read_committed"), expected, contiguous=False)


def test_a_producer_dropped_without_close_is_freed_at_once(cluster_path, make_topic):
    # Its parts (handle cache, sender, acks=all pipeline, background sender) must form no
    # reference cycle: a Producer dropped with batches in flight goes at once, its fsync
    # threads' pool with it, not at some later garbage collection. ("At once": or when a pass of
    # its background sender already under way ends, the one moment that thread holds it.)
    make_topic("t", 2)
    producer = Producer({"cluster": cluster_path, "acks": "all", "linger.ms": 0, "open.partitions.max": 1})
    for i in range(50):
        producer.produce("t", b"v", key=str(i).encode())  # both partitions: the cache evicts
    producer.flush()
    producer.produce("t", b"last")
    gone = weakref.ref(producer)
    collecting = gc.isenabled()
    gc.disable()
    try:
        del producer
        deadline = time.monotonic() + 10
        while gone() is not None and time.monotonic() < deadline:
            time.sleep(0.001)  # (the garbage collector is off: only reference counts free it)
        assert gone() is None
    finally:
        if collecting:
            gc.enable()


def _open_files_under(path: str) -> list[str]:
    """The partition files this process holds open under a cluster (the test's admin holds metadata.db)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(path) and "metadata.db" not in target:
            found.append(target)
    return found


def test_a_producer_dropped_without_close_leaves_no_file_open(cluster_path, make_topic):
    # confluent-kafka's Producer has no close(): programs written for it drop theirs after flush().
    make_topic("t", 2)
    for _ in range(3):
        producer = Producer({"cluster": cluster_path, "acks": "all", "linger.ms": 0})
        producer.produce("t", b"v", partition=0)
        producer.produce("t", b"w", partition=1)
        producer.flush()
        producer.produce("t", b"unflushed", partition=0)
        del producer
    assert _open_files_under(cluster_path) == []


def test_a_consumer_dropped_without_close_leaves_no_file_open(cluster_path, make_topic):
    make_topic("t", 1)
    with Producer({"cluster": cluster_path}) as producer:
        producer.produce("t", b"v")
    for group in (None, "g"):
        consumer = Consumer({"cluster": cluster_path, **({"group.id": group} if group else {})})
        consumer.assign([TopicPartition("t", 0, 0)])
        assert consumer.poll(5).value() == b"v"
        del consumer
    gc.collect()  # (a group member's parts hold each other: freed by the collector)
    assert _open_files_under(cluster_path) == []

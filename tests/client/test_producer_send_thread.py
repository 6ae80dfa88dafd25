"""The Producer's background sender: what comes due is sent while the application makes no call
(a linger.ms deadline, an acks=all batch held while its partition was fsynced), delivery
callbacks still run only in poll()/flush() on the application's thread, and the thread goes
with its producer."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import pytest

from kstream import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from kstream.errors import KStreamError
from kstream.log.cluster.partition import Partition


def committed_reader(cluster_path: str, topic: str) -> Consumer:
    consumer = Consumer({"cluster": cluster_path, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    return consumer


def read(consumer: Consumer, count: int, timeout_s: float = 10.0) -> list[bytes]:
    """Up to ``count`` values, waiting at most ``timeout_s`` in all (a generous bound, not a timing)."""
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(values) < count and time.monotonic() < deadline:
        message = consumer.poll(0.1)
        if message is not None:
            values.append(message.value())
    return values


def test_a_held_acks_all_batch_is_sent_when_the_fsync_finishes_without_a_producer_call(
        cluster_path, make_topic, monkeypatch):
    """acks=all, linger.ms=0: the first record goes at once; the next ones wait (held) while its
    fsync runs. When that fsync finishes they are written, fsynced and made visible to a
    read_committed reader though the application never calls produce() or poll() again; their
    delivery callbacks wait for poll() and run on the thread that calls it."""
    make_topic("t", 1)
    gate = threading.Event()
    real_sync = Partition.sync_replica
    monkeypatch.setattr(Partition, "sync_replica", lambda self, replica: gate.wait(10) and real_sync(self, replica))
    producer = Producer({"cluster": cluster_path, "acks": "all", "linger.ms": 0})
    consumer = committed_reader(cluster_path, "t")
    delivered: list[tuple[int, int]] = []
    for i in range(10):
        producer.produce("t", f"r{i}".encode(), on_delivery=lambda err, msg: delivered.append(
            (msg.offset(), threading.get_ident())))
    assert read(consumer, 1, timeout_s=0.2) == []  # nothing fsynced yet: nothing visible
    gate.set()
    assert read(consumer, 10) == [f"r{i}".encode() for i in range(10)]  # (was: only r0)
    assert delivered == []  # callbacks are served by poll()/flush(), never by the sender
    assert producer.flush(10) == 0
    assert delivered == [(i, threading.get_ident()) for i in range(10)]
    producer.close()
    consumer.close()


def test_a_lingering_batch_is_sent_when_linger_ms_passes_without_a_producer_call(cluster_path, make_topic):
    make_topic("t", 1)
    producer = Producer({"cluster": cluster_path, "acks": "all", "linger.ms": 30})
    consumer = committed_reader(cluster_path, "t")
    producer.produce("t", b"a")
    producer.produce("t", b"b")
    assert read(consumer, 2) == [b"a", b"b"]  # (was: nothing until poll() or flush())
    producer.close()
    consumer.close()


def test_a_failed_background_send_is_raised_by_the_next_poll(cluster_path, make_topic):
    """A batch without delivery callbacks that fails when the sender sends it has nowhere to be
    reported: the application's next poll() raises its error, once."""
    make_topic("t", 1)
    producer = Producer({"cluster": cluster_path, "transactional.id": "tx", "linger.ms": 20})
    producer.init_transactions()
    producer.produce("t", b"outside any transaction")
    deadline = time.monotonic() + 10
    while producer._background_error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(KStreamError, match="begin_transaction"):
        producer.poll(0)
    assert producer.poll(0) == 0
    producer.close()


def test_an_unexpected_error_of_a_background_send_is_raised_too(cluster_path, make_topic, monkeypatch):
    """Not only a KStreamError: whatever a send raises on the sender's thread reaches the
    application (it would otherwise end that thread with the batch gone and nothing said)."""
    from kstream.client.producer_sender import BatchSender

    make_topic("t", 1)

    def broken(self, *args, **kwargs):
        raise RuntimeError("the disk layer broke")

    monkeypatch.setattr(BatchSender, "append", broken)
    producer = Producer({"cluster": cluster_path, "linger.ms": 20})
    producer.produce("t", b"a")
    deadline = time.monotonic() + 10
    while producer._background_error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(RuntimeError, match="the disk layer broke"):
        producer.poll(0)
    monkeypatch.undo()
    producer.close()


def test_a_producer_dropped_without_close_is_freed_and_its_sender_thread_ends(cluster_path, make_topic):
    make_topic("t", 1)
    producer = Producer({"cluster": cluster_path, "linger.ms": 5})
    producer.produce("t", b"a")  # starts the sender (a linger deadline)
    producer.flush()
    thread = producer._send_thread._thread
    assert thread is not None and thread.is_alive()
    dropped = weakref.ref(producer)
    del producer
    gc.collect()
    assert dropped() is None
    thread.join(10)
    assert not thread.is_alive()


def test_close_ends_the_sender_thread(cluster_path, make_topic):
    make_topic("t", 1)
    producer = Producer({"cluster": cluster_path, "linger.ms": 5})
    producer.produce("t", b"a")
    producer.close()
    thread = producer._send_thread._thread
    assert thread is not None
    thread.join(10)
    assert not thread.is_alive()

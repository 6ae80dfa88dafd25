"""The Python client API: produce/poll round trips, routing, callbacks, positions."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest

from kstream import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaError,
    Producer,
    TopicPartition,
)
from kstream.client.partitioner import partition_for_key
from kstream.log.storage import format as fmt


def consumer_for(cluster_path, topic, partitions, offset=OFFSET_BEGINNING, **config):
    consumer = Consumer({"cluster": cluster_path, **config})
    consumer.assign([TopicPartition(topic, p, offset) for p in range(partitions)])
    return consumer


def drain(consumer, timeout=0.2):
    out = []
    while (message := consumer.poll(timeout)) is not None:
        out.append(message)
    return out


def test_round_trip_with_keys_headers_timestamps(cluster_path, make_topic):
    make_topic("t", 3)
    delivered = []
    with Producer({"cluster": cluster_path, "linger.ms": 1000}) as producer:
        for i in range(30):
            producer.produce("t", f"v{i}".encode(), key=f"k{i % 5}".encode(),
                             headers=[("h", f"{i}".encode())], timestamp=1_700_000_000_000 + i,
                             on_delivery=lambda err, msg: delivered.append((err, msg)))
        assert delivered == []  # reports are served by poll()/flush()
        producer.flush()
    assert len(delivered) == 30 and all(err is None for err, _ in delivered)
    consumer = consumer_for(cluster_path, "t", 3)
    messages = drain(consumer)
    assert sorted(m.value() for m in messages) == sorted(f"v{i}".encode() for i in range(30))
    for m in messages:
        i = int(m.value()[1:])
        assert m.key() == f"k{i % 5}".encode()
        assert m.partition() == partition_for_key(m.key(), 3)  # Kafka's partitioner
        assert m.headers() == [("h", f"{i}".encode())]
        assert m.timestamp() == (1, 1_700_000_000_000 + i)
        assert m.error() is None
    by_partition = {}
    for m in messages:
        by_partition.setdefault(m.partition(), []).append(m.offset())
    for offsets in by_partition.values():
        assert offsets == list(range(len(offsets)))  # contiguous from 0
    reported = {(msg.partition(), msg.offset()) for _, msg in delivered}
    assert reported == {(m.partition(), m.offset()) for m in messages}


def test_unkeyed_records_stick_to_one_partition_per_batch(cluster_path, make_topic):
    make_topic("t", 4)
    with Producer({"cluster": cluster_path, "linger.ms": 60_000}) as producer:
        for _ in range(100):
            producer.produce("t", b"x")
    messages = drain(consumer_for(cluster_path, "t", 4))
    assert len(messages) == 100
    assert len({m.partition() for m in messages}) == 1


def test_linger_holds_a_record_then_sends_it_without_a_producer_call(cluster_path, make_topic):
    """linger.ms keeps the record in the producer; once it passed, the background sender sends
    it though the application never calls poll() (librdkafka's broker thread does the same)."""
    make_topic("t")
    producer = Producer({"cluster": cluster_path, "linger.ms": 400})
    consumer = consumer_for(cluster_path, "t", 1)
    producer.produce("t", b"a")
    assert consumer.poll(0.05) is None  # still lingering in the producer
    message = consumer.poll(10)
    assert message is not None and message.value() == b"a"
    producer.close()
    consumer.close()


def test_seek_position_watermarks_and_eof(cluster_path, make_topic):
    make_topic("t")
    with Producer({"cluster": cluster_path}) as producer:
        for i in range(10):
            producer.produce("t", str(i).encode(), partition=0)
    consumer = consumer_for(cluster_path, "t", 1, **{"enable.partition.eof": True})
    tp = TopicPartition("t", 0)
    assert consumer.get_watermark_offsets(tp) == (0, 10)
    assert consumer.position([tp])[0].offset == 0
    assert consumer.poll(1).offset() == 0
    assert consumer.position([tp])[0].offset == 1
    consumer.seek(TopicPartition("t", 0, 7))
    assert [m.offset() for m in consumer.consume(2, 1)] == [7, 8]
    assert consumer.position([tp])[0].offset == 9
    assert consumer.poll(1).offset() == 9
    eof = consumer.poll(1)
    assert eof.error().code() == KafkaError._PARTITION_EOF and eof.offset() == 10
    assert consumer.poll(0.05) is None  # one EOF event per reaching the end
    consumer.seek(TopicPartition("t", 0, OFFSET_END))
    assert consumer.poll(0.05).error().code() == KafkaError._PARTITION_EOF
    assert consumer.poll(0.05) is None
    consumer.close()


def test_consumer_wakes_up_for_new_data(cluster_path, make_topic):
    make_topic("t")
    consumer = consumer_for(cluster_path, "t", 1, offset=OFFSET_END)
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        assert consumer.poll(0.01) is None
        producer.produce("t", b"late")
    started = time.monotonic()
    assert consumer.poll(5).value() == b"late"
    assert time.monotonic() - started < 5
    consumer.close()


def test_offsets_for_times(cluster_path, make_topic):
    make_topic("t")
    with Producer({"cluster": cluster_path}) as producer:
        for i in range(20):
            producer.produce("t", b"x", timestamp=1000 + 10 * i, partition=0)
    consumer = consumer_for(cluster_path, "t", 1)
    found = consumer.offsets_for_times([TopicPartition("t", 0, 1055), TopicPartition("t", 0, 99_999)])
    assert [tp.offset for tp in found] == [6, -1]
    consumer.close()


def test_produce_batch_routes_and_poll_batch_returns_arrow(cluster_path, make_topic):
    make_topic("t", 3)
    table = pa.table({
        "key": pa.array([f"k{i}".encode() for i in range(300)]),
        "value": pa.array([f"v{i}".encode() for i in range(300)]),
        "timestamp": pa.array([1_700_000_000_000 + i for i in range(300)], pa.timestamp("ms")),
    })
    with Producer({"cluster": cluster_path}) as producer:
        results = producer.produce_batch("t", table)
        assert sum(r.record_count for r in results) == 300
        pinned = producer.produce_batch("t", pa.table({"value": [b"p0", b"p1"], "partition": [2, 2]}))
        assert [(r.partition, r.record_count) for r in pinned] == [(2, 2)]
    consumer = consumer_for(cluster_path, "t", 3)
    batches = []
    while (batch := consumer.poll_batch(max_records=64, timeout=0.2)) is not None:
        assert batch.num_rows <= 64
        batches.append(batch)
    combined = pa.Table.from_batches(batches)
    assert combined.column_names == ["key", "value", "topic", "partition", "offset", "timestamp",
                                     "timestampType", "headers"]
    assert combined.num_rows == 302
    rows = [r for r in combined.to_pylist() if r["key"] is not None]
    for row in rows:
        i = int(row["value"][1:])
        assert row["partition"] == partition_for_key(row["key"], 3)
        assert row["topic"] == "t"
        assert row["timestamp"].timestamp() * 1000 == 1_700_000_000_000 + i
    consumer.close()


def test_poll_then_poll_batch_continue_where_the_other_stopped(cluster_path, make_topic):
    make_topic("t")
    with Producer({"cluster": cluster_path}) as producer:
        producer.produce_batch("t", pa.table({"value": [str(i).encode() for i in range(50)]}))
    consumer = consumer_for(cluster_path, "t", 1)
    assert consumer.poll(1).offset() == 0
    batch = consumer.poll_batch(10, 1)
    assert batch.column("offset").to_pylist() == list(range(1, 11))
    assert consumer.poll(1).offset() == 11
    consumer.close()


def test_typed_topic_round_trip_and_schema_evolution(admin, cluster_path, make_topic):
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    make_topic("typed", 1, schema=schema)
    with Producer({"cluster": cluster_path}) as producer:
        producer.produce_batch("typed", pa.table({"id": [1, 2], "name": ["a", "b"]}))
        producer.produce("typed", {"id": 3, "name": "c"})
    admin.evolve_schema("typed", schema.append(pa.field("score", pa.float64())))
    with Producer({"cluster": cluster_path}) as producer:
        producer.produce_batch("typed", pa.table({"id": [4], "name": ["d"], "score": [0.5]}))
    consumer = consumer_for(cluster_path, "typed", 1)
    rows = []
    while (batch := consumer.poll_batch(timeout=0.2)) is not None:
        rows.extend(batch.select(["id", "name", "score", "offset"]).to_pylist())
    assert rows == [
        {"id": 1, "name": "a", "score": None, "offset": 0},
        {"id": 2, "name": "b", "score": None, "offset": 1},
        {"id": 3, "name": "c", "score": None, "offset": 2},
        {"id": 4, "name": "d", "score": 0.5, "offset": 3},
    ]
    consumer.seek(TopicPartition("typed", 0, 2))
    assert consumer.poll(1).value() == {"id": 3, "name": "c"}
    consumer.close()


@pytest.mark.parametrize("codec", ["none", "lz4", "zstd"])
def test_compression_round_trip(cluster_path, make_topic, codec):
    make_topic("t")
    values = [bytes([i % 7]) * 200 for i in range(500)]
    with Producer({"cluster": cluster_path, "compression.type": codec}) as producer:
        for v in values:
            producer.produce("t", v, partition=0)
    consumer = consumer_for(cluster_path, "t", 1)
    assert [m.value() for m in drain(consumer)] == values
    consumer.close()


def test_acks_all_reports_wait_for_background_fsyncs_and_keep_batch_order(cluster_path, make_topic,
                                                                         monkeypatch):
    """acks=all batches are fsynced on background threads while produce() goes on; a record
    is reported only once its batch's fsyncs returned, and reports come in batch order."""
    import threading

    from kstream.log.cluster.partition import Partition
    make_topic("t", 3)
    gate = threading.Event()
    real_sync = Partition.sync_replica

    def gated_sync(self, replica):
        gate.wait(10)
        return real_sync(self, replica)

    monkeypatch.setattr(Partition, "sync_replica", gated_sync)
    delivered = []
    producer = Producer({"cluster": cluster_path, "acks": "all", "linger.ms": 0, "batch.size": 200,
                         "max.in.flight.requests.per.connection": 50})
    for i in range(30):
        producer.produce("t", f"r{i}".encode() * 20, partition=i % 3,
                         on_delivery=lambda err, msg: delivered.append((err, msg)))
    assert producer.poll(0.05) == 0 and delivered == []  # written, not yet fsynced: no report
    assert len(producer) == 30
    gate.set()
    producer.flush()
    assert len(delivered) == 30 and all(err is None for err, _ in delivered)
    for p in range(3):
        offsets = [msg.offset() for _, msg in delivered if msg.partition() == p]
        assert offsets == list(range(10))
        # per partition, reports in the order the records were produced (across partitions
        # Kafka promises no order: a partition's records wait while its batch is fsynced)
        assert [msg.value() for _, msg in delivered if msg.partition() == p] == \
            [f"r{i}".encode() * 20 for i in range(p, 30, 3)]
    producer.close()


def test_linger_zero_acks_all_batches_records_while_their_partition_is_fsynced(cluster_path, make_topic,
                                                                               monkeypatch):
    """linger.ms=0: the first record goes at once; the ones produced while its fsync runs wait
    in one batch on the same partition (group commit, and KIP-794: the sticky partition moves
    on after batch.size bytes, not after every small batch)."""
    import threading

    from kstream.log.cluster.partition import Partition
    make_topic("t", 3)
    gate = threading.Event()
    real_sync = Partition.sync_replica
    monkeypatch.setattr(Partition, "sync_replica", lambda self, replica: gate.wait(10) and real_sync(self, replica))
    producer = Producer({"cluster": cluster_path, "acks": "all", "linger.ms": 0, "batch.size": 1_000_000})
    for i in range(50):
        producer.produce("t", f"r{i}".encode())
    gate.set()
    producer.flush()
    producer.close()
    consumer = consumer_for(cluster_path, "t", 3)
    messages = drain(consumer)
    consumer.close()
    assert len(messages) == 50 and len({m.partition() for m in messages}) == 1  # all on the sticky one
    assert [m.value() for m in messages] == [f"r{i}".encode() for i in range(50)]
    from kstream.admin import Admin
    from kstream.log.storage.frames import FrameWalk, pread_from
    with Admin({"cluster": cluster_path}) as admin:
        handle = admin.cluster.partition("t", messages[0].partition())
        segment = os.path.join(handle.leader_dir, fmt.segment_file_name(0))
        with open(segment, "rb") as f:
            frames = [h.record_count for _, h in FrameWalk(pread_from(f.fileno()), os.fstat(f.fileno()).st_size)]
        handle.close()
    assert frames == [1, 49]  # the first alone, the rest as one batch once its fsync was done


def _frame_record_counts(cluster_path: str, topic: str) -> list[int]:
    """Records per frame in partition 0's first segment, in log order."""
    from kstream.admin import Admin
    from kstream.log.storage.frames import FrameWalk, pread_from
    with Admin({"cluster": cluster_path}) as admin:
        handle = admin.cluster.partition(topic, 0)
        segment = os.path.join(handle.leader_dir, fmt.segment_file_name(0))
        with open(segment, "rb") as f:
            frames = [h.record_count for _, h in FrameWalk(pread_from(f.fileno()), os.fstat(f.fileno()).st_size)]
        handle.close()
    return frames


def test_a_held_batch_is_looked_at_again_only_once_an_fsync_finished(cluster_path, make_topic, monkeypatch):
    """While a due batch waits for its partition's fsync (acks=all, linger.ms=0), produce() does
    not ask the ack pipeline again on every record (that cost more than the record itself); it
    goes once the fsync finished (sent by the background sender, no produce() needed)."""
    import threading

    from kstream.client.producer_pipeline import AckPipeline
    from kstream.log.cluster.partition import Partition
    make_topic("t", 1)
    gate = threading.Event()
    real_sync = Partition.sync_replica
    monkeypatch.setattr(Partition, "sync_replica", lambda self, replica: gate.wait(10) and real_sync(self, replica))
    asked = []
    real_hold = AckPipeline.must_hold
    monkeypatch.setattr(AckPipeline, "must_hold",
                        lambda self, topic, partition: asked.append(partition) or real_hold(self, topic, partition))
    producer = Producer({"cluster": cluster_path, "acks": "all", "linger.ms": 0})
    for i in range(200):
        producer.produce("t", f"r{i}".encode())
    assert 1 <= len(asked) <= 2  # (was: once per record after the first)
    gate.set()
    deadline = time.monotonic() + 10
    while producer._pipeline.finished.count < 2 and time.monotonic() < deadline:
        time.sleep(0.001)  # the first fsync, then the held batch's (sent with no call from here)
    assert producer._pipeline.finished.count == 2
    producer.produce("t", b"r200")  # nothing in flight: alone, at once
    producer.produce("t", b"r201")
    producer.flush()
    producer.close()
    frames = _frame_record_counts(cluster_path, "t")
    assert frames == [1, 199, 1, 1]  # (was [1, 200, 1]: r200 joined the held batch)
    consumer = consumer_for(cluster_path, "t", 1)
    assert [m.value() for m in drain(consumer)] == [f"r{i}".encode() for i in range(202)]
    consumer.close()


def test_poll_zero_after_each_produce_keeps_group_commit(cluster_path, make_topic, monkeypatch):
    """confluent-kafka's loop, produce() then poll(0) per record, at acks=all and linger.ms=0:
    records produced while the partition's batch is being fsynced gather into one batch, as
    they do without the poll(0); poll(0) used to write each of them alone (one fsync each)."""
    import threading

    from kstream.log.cluster.partition import Partition
    make_topic("t", 1)
    gate = threading.Event()
    real_sync = Partition.sync_replica
    monkeypatch.setattr(Partition, "sync_replica", lambda self, replica: gate.wait(10) and real_sync(self, replica))
    producer = Producer({"cluster": cluster_path, "acks": "all", "linger.ms": 0})
    delivered: list[int] = []
    for i in range(50):
        producer.produce("t", f"r{i}".encode(), on_delivery=lambda err, msg: delivered.append(msg.offset()))
        assert producer.poll(0) == 0  # nothing is acknowledged while the first fsync waits
    gate.set()
    assert producer.flush(10) == 0
    producer.close()
    assert delivered == list(range(50))
    frames = _frame_record_counts(cluster_path, "t")
    assert frames == [1, 49]  # (was: 50 frames of one record)


@pytest.mark.parametrize("acks", ["1", "all"])
def test_delivery_offsets_of_a_batch_cut_into_frames(cluster_path, make_topic, acks):
    """A batch too big for one frame goes out in several; each report carries its own record's
    offset, whichever frame holds it (only some records ask for a report)."""
    make_topic("t", 1, config={"message.max.bytes": "4000"})
    reported = {}
    with Producer({"cluster": cluster_path, "linger.ms": 10_000, "acks": acks}) as producer:
        for i in range(200):
            value = b"%04d" % i + b"x" * 96
            if i % 7 == 0 or i == 199:
                producer.produce("t", value, on_delivery=lambda err, msg: reported.setdefault(
                    msg.value(), (err, msg.offset())))
            else:
                producer.produce("t", value)
        producer.flush()
    consumer = consumer_for(cluster_path, "t", 1)
    stored = {m.value(): m.offset() for m in drain(consumer)}
    consumer.close()
    assert len(stored) == 200
    assert len(reported) == 30
    assert all(err is None for err, _ in reported.values())
    assert {value: offset for value, (_, offset) in reported.items()} == {v: stored[v] for v in reported}

"""Producer and Consumer calls shaped as confluent-kafka's: purge, list_topics, store_offsets,
pause/resume, incremental (un)assign, watermarks, positions, closed-consumer errors."""

from __future__ import annotations

import time

import pytest

from kstream import OFFSET_BEGINNING, OFFSET_INVALID, Consumer, KafkaError, Producer, TopicPartition
from kstream.errors import KStreamError, NoOffsetError, PartitionNotAssignedError

PURGE_QUEUE = getattr(KafkaError, "_PURGE_QUEUE", -152)


def fill(cluster_path, topic, count, partition=0):
    with Producer({"cluster": cluster_path}) as producer:
        for i in range(count):
            producer.produce(topic, str(i).encode(), partition=partition)


# -- Producer -------------------------------------------------------------------------


def test_purge_reports_queued_records_and_writes_nothing(cluster_path, make_topic):
    make_topic("t")
    reports = []
    producer = Producer({"cluster": cluster_path, "linger.ms": 60_000})
    for i in range(3):
        producer.produce("t", str(i).encode(), callback=lambda err, msg: reports.append((err, msg)))
    assert len(producer) == 3  # still queued (linger.ms)
    producer.purge(in_queue=False)
    assert reports == [] and len(producer) == 3
    producer.purge()
    assert producer.poll(0) == 3
    assert [err.code() for err, _ in reports] == [PURGE_QUEUE] * 3
    assert all(msg.offset() is None or msg.offset() < 0 for _, msg in reports)  # not delivered
    producer.flush()
    producer.close()
    consumer = Consumer({"cluster": cluster_path})
    consumer.assign([TopicPartition("t", 0, OFFSET_BEGINNING)])
    assert consumer.poll(0.2) is None  # nothing was written
    consumer.close()


def test_producer_bool_len_flush_and_default_delivery_callback(cluster_path, make_topic):
    make_topic("t")
    delivered = []
    producer = Producer({"cluster": cluster_path, "linger.ms": 60_000,
                         "on_delivery": lambda err, msg: delivered.append(msg.offset())})
    assert bool(producer) is True and len(producer) == 0
    own = []
    producer.produce("t", b"a")
    producer.produce("t", b"b", callback=lambda err, msg: own.append(msg.offset()))
    producer.produce("t", b"c")
    assert len(producer) == 3
    assert producer.flush() == 0
    assert (delivered, own) == ([0, 2], [1])  # the config's on_delivery serves records without one
    assert producer.close() is True  # as confluent-kafka's
    assert producer.close() is True  # a second close does nothing
    with pytest.raises(RuntimeError, match="Producer has been closed"):
        producer.begin_transaction()
    with pytest.raises(RuntimeError, match="closed"):
        producer.produce("t", b"c")


def test_list_topics_is_cluster_metadata(cluster_path, make_topic):
    make_topic("t", 3)
    make_topic("u", 1)
    producer = Producer({"cluster": cluster_path})
    metadata = producer.list_topics(timeout=1)
    assert set(metadata.topics) == {"t", "u"}
    partitions = metadata.topics["t"].partitions
    assert sorted(partitions) == [0, 1, 2]
    assert partitions[0].leader in metadata.brokers and partitions[0].isrs == partitions[0].replicas
    assert metadata.topics["t"].error is None
    missing = producer.list_topics("nope").topics["nope"]
    assert missing.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART and missing.partitions == {}
    producer.set_sasl_credentials("user", "secret")  # accepted: nothing to authenticate to
    producer.close()
    consumer = Consumer({"cluster": cluster_path})
    assert list(consumer.list_topics("t").topics) == ["t"]
    consumer.close()


def test_murmur2_partitioner_puts_unkeyed_records_on_one_partition(cluster_path, make_topic):
    make_topic("t", 4)
    seen = set()
    with Producer({"cluster": cluster_path, "partitioner": "murmur2", "batch.size": 1}) as producer:
        for _ in range(20):
            producer.produce("t", b"v", on_delivery=lambda err, msg: seen.add(msg.partition()))
    assert len(seen) == 1


# -- Consumer -------------------------------------------------------------------------


def test_closed_consumer_raises_runtime_error_and_close_is_idempotent(cluster_path, make_topic):
    make_topic("t")
    consumer = Consumer({"cluster": cluster_path, "group.id": "g"})
    consumer.close()
    consumer.close()
    tp = TopicPartition("t", 0)
    calls = [lambda: consumer.poll(0), lambda: consumer.consume(1, 0), consumer.assignment,
             lambda: consumer.assign([tp]), consumer.unassign, lambda: consumer.subscribe(["t"]),
             consumer.unsubscribe, lambda: consumer.commit(), lambda: consumer.committed([tp]),
             lambda: consumer.position([tp]), lambda: consumer.seek(TopicPartition("t", 0, 0)),
             lambda: consumer.get_watermark_offsets(tp), lambda: consumer.store_offsets(offsets=[tp]),
             lambda: consumer.offsets_for_times([tp]), lambda: consumer.pause([tp]),
             consumer.memberid]
    for call in calls:
        with pytest.raises(RuntimeError, match="Consumer closed"):
            call()
    with pytest.raises(RuntimeError, match="Handle has been closed"):  # confluent's wording here
        consumer.list_topics()


def test_a_consumer_whose_init_never_ran_counts_as_closed():
    class Uninitialized(Consumer):
        def __init__(self, conf):
            pass  # skips Consumer.__init__: nothing is open

    consumer = Uninitialized({"group.id": "g"})
    for call in (lambda: consumer.poll(0), consumer.assignment, lambda: consumer.subscribe(["t"]),
                 lambda: consumer.committed([TopicPartition("t", 0)]), consumer.consumer_group_metadata):
        with pytest.raises(RuntimeError, match="Consumer closed"):
            call()
    with pytest.raises(RuntimeError, match="Handle has been closed"):
        consumer.list_topics()
    consumer.close()  # does nothing


def test_consume_num_messages_range(cluster_path, make_topic):
    make_topic("t")
    consumer = Consumer({"cluster": cluster_path})
    for bad in (-100, 1_000_001):
        with pytest.raises(ValueError, match=r"num_messages must be between 0 and 1000000 \(1M\)"):
            consumer.consume(bad)
    assert consumer.consume(num_messages=10, timeout=0.001) == []
    consumer.close()


def test_store_offsets_with_auto_store_off_commits_only_what_was_stored(cluster_path, make_topic):
    make_topic("t")
    fill(cluster_path, "t", 10)
    consumer = Consumer({"cluster": cluster_path, "group.id": "g", "enable.auto.commit": False,
                         "enable.auto.offset.store": False})
    consumer.assign([TopicPartition("t", 0, 0)])
    messages = consumer.consume(6, timeout=2)
    assert len(messages) == 6
    with pytest.raises(NoOffsetError, match="no offset stored by store_offsets"):
        consumer.commit(asynchronous=False)  # nothing stored yet
    consumer.store_offsets(message=messages[2])
    assert consumer.commit(asynchronous=False) == [TopicPartition("t", 0, 3)]
    consumer.store_offsets(offsets=[TopicPartition("t", 0, 5)])
    consumer.commit(asynchronous=False)
    assert consumer.committed([TopicPartition("t", 0)])[0].offset == 5
    with pytest.raises(PartitionNotAssignedError):
        consumer.store_offsets(offsets=[TopicPartition("t", 7, 1)])
    consumer.close()


def test_commit_with_nothing_assigned_is_no_offset(cluster_path, make_topic):
    make_topic("t")
    results = []
    consumer = Consumer({"cluster": cluster_path, "group.id": "g",
                         "on_commit": lambda err, parts: results.append((err, parts))})
    with pytest.raises(NoOffsetError, match=r"no partition is assigned .*rebalancing.*poll\(\) until records"):
        consumer.commit(asynchronous=False)
    consumer.commit(asynchronous=True)
    consumer.poll(0.05)
    assert len(results) == 1 and isinstance(results[0][0], KStreamError)
    consumer.close()


def test_pause_keeps_position_and_resume_goes_on(cluster_path, make_topic):
    make_topic("t", 2)
    fill(cluster_path, "t", 5, partition=0)
    fill(cluster_path, "t", 5, partition=1)
    consumer = Consumer({"cluster": cluster_path})
    tps = [TopicPartition("t", 0, 0), TopicPartition("t", 1, 0)]
    consumer.assign(tps)
    first = consumer.poll(2)
    paused = TopicPartition("t", first.partition())
    consumer.pause([paused])
    rest = consumer.consume(20, timeout=0.3)
    assert rest and all(m.partition() != paused.partition for m in rest)
    assert consumer.position([paused])[0].offset == first.offset() + 1
    consumer.resume([paused])
    after = consumer.consume(20, timeout=0.3)
    assert [m.offset() for m in after if m.partition() == paused.partition] == list(range(first.offset() + 1, 5))
    consumer.close()


def test_incremental_assign_and_unassign(cluster_path, make_topic):
    make_topic("t", 3)
    consumer = Consumer({"cluster": cluster_path})
    consumer.incremental_assign([TopicPartition("t", 0, 0), TopicPartition("t", 1, 0)])
    consumer.incremental_assign([TopicPartition("t", 2, 0)])
    assert consumer.assignment() == [TopicPartition("t", p) for p in range(3)]
    consumer.incremental_unassign([TopicPartition("t", 1)])
    assert consumer.assignment() == [TopicPartition("t", 0), TopicPartition("t", 2)]
    consumer.close()


def test_watermarks_positions_and_offsets_for_times_shapes(cluster_path, make_topic):
    make_topic("t")
    fill(cluster_path, "t", 4)
    consumer = Consumer({"cluster": cluster_path})
    tp = TopicPartition("t", 0, 0)
    consumer.assign([tp])
    assert consumer.get_watermark_offsets(tp, cached=True) == (OFFSET_INVALID, OFFSET_INVALID)
    assert consumer.get_watermark_offsets(tp, timeout=1, cached=False) == (0, 4)
    consumer.poll(2)
    assert consumer.get_watermark_offsets(tp, cached=True) == (0, 4)
    positions = consumer.position([TopicPartition("t", 0), TopicPartition("t", 9)])
    assert [(p.topic, p.partition, p.offset) for p in positions] == [("t", 0, 1), ("t", 9, OFFSET_INVALID)]
    assert all(p.error is None for p in positions)
    found = consumer.offsets_for_times([TopicPartition("t", 0, int(time.time() * 1000) + 60_000)], timeout=1)
    assert isinstance(found, list) and found[0].offset == -1
    consumer.close()


def test_consumer_context_manager_and_logger_kwarg(cluster_path, make_topic):
    import logging
    make_topic("t")
    with Consumer({"cluster": cluster_path, "group.id": "g"}, logger=logging.getLogger("x")) as consumer:
        assert consumer.memberid() is None
    with pytest.raises(RuntimeError):
        consumer.assignment()


def test_auto_create_topics_enable_creates_a_missing_topic_on_produce(tmp_path):
    from kstream.admin import Admin, NewTopic
    path = str(tmp_path / "auto")
    with Admin({"cluster": path, "auto.create.topics.enable": "true", "num.partitions": 2}) as admin:
        admin.create_topics([NewTopic("first", 1, 1)])["first"].result()
    with Producer({"cluster": path}) as producer:
        producer.produce("made-on-the-fly", b"v")
    with Consumer({"cluster": path}) as consumer:
        metadata = consumer.list_topics("made-on-the-fly")
    assert sorted(metadata.topics["made-on-the-fly"].partitions) == [0, 1]


def test_delivered_and_consumed_message_shapes(cluster_path, make_topic):
    make_topic("t")
    delivered = []
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        producer.produce("t", b"v", key=b"k", headers={"h": "x"}, timestamp=1_700_000_000_123,
                         on_delivery=lambda err, msg: delivered.append(msg))
    sent = delivered[0]
    assert sent.timestamp() == (1, 1_700_000_000_123)
    assert sent.headers() == [("h", b"x")]
    assert isinstance(sent.latency(), float) and 0 <= sent.latency() < 60
    assert sent.leader_epoch() is None
    consumer = Consumer({"cluster": cluster_path})
    consumer.assign([TopicPartition("t", 0, OFFSET_BEGINNING)])
    got = consumer.poll(2)
    assert got.timestamp() == (1, 1_700_000_000_123) and got.headers() == [("h", b"x")]
    assert got.leader_epoch() == 0 and got.latency() is None
    consumer.close()


def test_malformed_headers_are_type_errors(cluster_path, make_topic):
    make_topic("t")
    with Producer({"cluster": cluster_path}) as producer:
        for bad in (("a", "b"), [("malformed_header")], {"anint": 1234}, [(1, b"x")]):
            with pytest.raises(TypeError):
                producer.produce("t", b"v", headers=bad)
        producer.produce("t", b"v", headers=[("dup", "1"), ("dup", "2"), ("none", None)])


def test_assigning_a_partition_again_moves_its_position(cluster_path, make_topic):
    make_topic("t")
    fill(cluster_path, "t", 5)
    consumer = Consumer({"cluster": cluster_path})
    consumer.assign([TopicPartition("t", 0, 0)])
    assert consumer.poll(2).offset() == 0
    consumer.incremental_assign([TopicPartition("t", 0, 3)])
    assert consumer.assignment() == [TopicPartition("t", 0)]
    assert consumer.poll(2).offset() == 3
    consumer.close()


def test_produce_batch_takes_confluents_list_of_dicts(cluster_path, make_topic):
    make_topic("t", 3)
    reports = []
    messages = [{"value": b"a", "key": "k"}, {"value": "b", "partition": 2, "headers": {"h": b"1"}},
                {"value": b"c", "partition": 7}, {}, {"value": b"e", "timestamp": 1_700_000_000_000,
                                                      "callback": lambda err, msg: reports.append("own")}]
    with Producer({"cluster": cluster_path}) as producer:
        queued = producer.produce_batch("t", messages, on_delivery=lambda err, msg: reports.append(msg.value()))
        assert queued == 4
        assert "_error" in messages[2] and all("_error" not in m for i, m in enumerate(messages) if i != 2)
        for bad, text in [("nope", "must be a list"), ([{"value": 1}], "Message value at index 0"),
                          ([{"value": b"x"}, "x"], "Message at index 1 must be a dict"),
                          ([{"partition": "1"}], "Message partition at index 0 must be int")]:
            with pytest.raises(TypeError, match=text):
                producer.produce_batch("t", bad)
    assert sorted(map(str, reports)) == sorted(["b'a'", "b'b'", "None", "own"])
    consumer = Consumer({"cluster": cluster_path})
    consumer.assign([TopicPartition("t", p, OFFSET_BEGINNING) for p in range(3)])
    got = {m.value(): m for m in consumer.consume(10, timeout=1)}
    consumer.close()
    assert set(got) == {b"a", b"b", None, b"e"}
    assert got[b"b"].partition() == 2 and got[b"b"].headers() == [("h", b"1")]
    assert got[b"e"].timestamp() == (1, 1_700_000_000_000)

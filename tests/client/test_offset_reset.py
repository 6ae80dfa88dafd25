"""A fetch position out of the log's range takes ``auto.offset.reset`` (issue 26, items 3 and
5), as librdkafka does on OFFSET_OUT_OF_RANGE: below the log start offset (retention deleted
the segment under the consumer) or past the log end offset (assign at 10**15, a committed
offset beyond the log). earliest/latest move the position silently (logged); ``error``
reports it once, through error_cb and a Message whose error() is ``_AUTO_OFFSET_RESET``,
and the partition waits for a seek(): never an exception on every poll()."""

from __future__ import annotations

import pytest

from kstream import Consumer, KafkaError, Producer, TopicPartition
from kstream.errors import NoOffsetError, OffsetOutOfRangeError
from kstream.groups import CommittedOffset, ConsumerGroups
from kstream.log.cluster.cluster import Cluster


@pytest.fixture
def trimmed(cluster_path, make_topic):
    """t: 100 records, one frame each, in small segments; retention deleted the first ones.
    Returns the log start offset."""
    make_topic("t", 1, config={"segment.bytes": "1024", "retention.bytes": "2048"})
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for i in range(100):
            producer.produce("t", str(i).encode())
            producer.flush()
        producer.cluster.partition("t", 0).leader_log.apply_retention()
    consumer = Consumer({"cluster": cluster_path})
    start = consumer.get_watermark_offsets(TopicPartition("t", 0))[0]
    consumer.close()
    assert 3 < start < 100
    return start


def first_record(consumer, limit=100):
    for _ in range(limit):
        message = consumer.poll(0.05)
        if message is not None:
            return message
    return None


def consumer_at(cluster_path, offset, reset, **extra):
    consumer = Consumer({"cluster": cluster_path, "auto.offset.reset": reset, "fetch.wait.max.ms": 10,
                         **extra})
    consumer.assign([TopicPartition("t", 0, offset)])
    return consumer


def test_below_log_start_with_earliest_resets_to_log_start(cluster_path, trimmed):
    consumer = consumer_at(cluster_path, 0, "earliest")
    message = first_record(consumer)
    assert message is not None and message.error() is None
    assert message.offset() == trimmed
    consumer.close()


def test_below_log_start_with_latest_resets_to_the_end(cluster_path, trimmed):
    consumer = consumer_at(cluster_path, 0, "latest")
    assert first_record(consumer, limit=5) is None  # no exception, nothing old
    assert consumer.position([TopicPartition("t", 0)])[0].offset == 100
    consumer.close()


def test_below_log_start_with_error_reports_once_and_waits_for_a_seek(cluster_path, trimmed):
    errors = []
    consumer = consumer_at(cluster_path, 0, "error", error_cb=errors.append)
    message = first_record(consumer)
    assert message is not None and message.error() is not None
    assert message.error().code() == KafkaError._AUTO_OFFSET_RESET
    assert isinstance(message.error().exception, OffsetOutOfRangeError)
    assert (message.topic(), message.partition(), message.offset()) == ("t", 0, 0)
    assert [e.code() for e in errors] == [KafkaError._AUTO_OFFSET_RESET]
    assert first_record(consumer, limit=5) is None  # once: not a crash loop
    assert len(errors) == 1
    consumer.seek(TopicPartition("t", 0, trimmed))
    assert first_record(consumer).offset() == trimmed
    consumer.close()


def test_poll_batch_raises_the_reset_error_once(cluster_path, trimmed):
    consumer = consumer_at(cluster_path, 0, "error")
    with pytest.raises(OffsetOutOfRangeError):
        consumer.poll_batch(timeout=1)
    assert consumer.poll_batch(timeout=0.2) is None
    consumer.close()


@pytest.mark.parametrize("reset, first", [("earliest", "start"), ("latest", None)])
def test_a_restarted_member_below_log_start_takes_the_reset(cluster_path, trimmed, reset, first):
    groups = ConsumerGroups(Cluster.open(cluster_path))
    groups.table.ensure_created()
    groups.table.write("g", [CommittedOffset("t", 0, 3, topic_id=groups.cluster.topic("t").topic_id)])
    groups.close()
    consumer = Consumer({"cluster": cluster_path, "group.id": "g", "auto.offset.reset": reset,
                         "enable.auto.commit": False, "heartbeat.interval.ms": 50, "fetch.wait.max.ms": 10})
    consumer.subscribe(["t"])
    message = first_record(consumer, limit=40)
    if first is None:
        assert message is None
        assert consumer.position([TopicPartition("t", 0)])[0].offset == 100
    else:
        assert message is not None and message.error() is None and message.offset() == trimmed
    consumer.close()


def test_assign_past_the_log_end_takes_the_reset(cluster_path, make_topic):
    make_topic("t", 1)
    with Producer({"cluster": cluster_path, "acks": "1"}) as producer:
        for i in range(20):
            producer.produce("t", str(i).encode())
    consumer = consumer_at(cluster_path, 10**15, "earliest")
    message = first_record(consumer)
    assert message is not None and message.offset() == 0
    consumer.close()
    consumer = consumer_at(cluster_path, 20, "earliest")  # the log end itself is a valid position
    assert first_record(consumer, limit=5) is None
    assert consumer.position([TopicPartition("t", 0)])[0].offset == 20
    consumer.close()


def test_a_committed_offset_past_the_log_end_takes_the_reset(cluster_path, make_topic):
    make_topic("t", 1)
    with Producer({"cluster": cluster_path, "acks": "1"}) as producer:
        for i in range(20):
            producer.produce("t", str(i).encode())
    groups = ConsumerGroups(Cluster.open(cluster_path))
    groups.table.ensure_created()  # a row commit() would refuse (it checks the log end)
    groups.table.write("g", [CommittedOffset("t", 0, 100, topic_id=groups.cluster.topic("t").topic_id)])
    groups.close()
    consumer = Consumer({"cluster": cluster_path, "group.id": "g", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "heartbeat.interval.ms": 50, "fetch.wait.max.ms": 10})
    consumer.subscribe(["t"])
    message = first_record(consumer)
    assert message is not None and message.error() is None and message.offset() == 0
    consumer.close()


def test_no_committed_offset_with_error_reports_once(cluster_path, make_topic):
    """librdkafka: no committed offset and auto.offset.reset=error is the same one-time
    _AUTO_OFFSET_RESET event, for a group member as for assign(); not an exception."""
    make_topic("t", 1)
    with Producer({"cluster": cluster_path, "acks": "1"}) as producer:
        for i in range(5):
            producer.produce("t", str(i).encode())
    errors = []
    consumer = Consumer({"cluster": cluster_path, "group.id": "g", "auto.offset.reset": "error",
                         "enable.auto.commit": False, "heartbeat.interval.ms": 50, "fetch.wait.max.ms": 10,
                         "error_cb": errors.append})
    consumer.subscribe(["t"])
    message = first_record(consumer)
    assert message is not None and message.error().code() == KafkaError._AUTO_OFFSET_RESET
    assert "no committed offset" in message.error().str()
    assert first_record(consumer, limit=5) is None
    assert len(errors) == 1
    assert consumer.position([TopicPartition("t", 0)])[0].offset < 0  # no position
    with pytest.raises(NoOffsetError, match="no assigned partition has a position yet"):
        consumer.commit(asynchronous=False)  # nothing valid to commit
    consumer.seek(TopicPartition("t", 0, 2))
    assert first_record(consumer).offset() == 2
    consumer.close()

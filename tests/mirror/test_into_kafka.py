"""kstream -> Apache Kafka: the copy, at least once (docs/MIRROR.md)."""

from __future__ import annotations

import pytest
from tests.mirror.mirror_support import by_partition, create_kafka_topic, read_kafka, sample

from kstream import Admin, NewTopic, Producer
from kstream.mirror import MirrorError, MirrorOptions, parse_endpoint
from kstream.mirror.into_kafka import IntoKafka

pytestmark = pytest.mark.kafka


def options(cluster, bootstrap, name, **kw):
    kw.setdefault("until_end", True)
    kw.setdefault("poll_timeout_s", 0.2)
    return MirrorOptions(parse_endpoint(f"cluster:{cluster}"), parse_endpoint(f"kafka:{bootstrap}"), name, **kw)


def make_kstream_topic(cluster, topic, partitions, config=None):
    with Admin({"cluster": cluster}) as admin:
        admin.create_topics([NewTopic(topic, partitions, config=config or {})])[topic].result()


def produce_kstream(cluster, topic, records, transactional_id=None, commit=True):
    producer = Producer({"cluster": cluster, **({"transactional.id": transactional_id} if transactional_id else {})})
    try:
        if transactional_id:
            producer.init_transactions()
            producer.begin_transaction()
        for partition, key, value, headers, timestamp in records:
            producer.produce(topic, value=value, key=key, partition=partition, timestamp=timestamp,
                             headers=list(headers) or None)
        producer.flush()
        if transactional_id:
            producer.commit_transaction() if commit else producer.abort_transaction()
    finally:
        producer.close()


def test_one_shot_copies_every_committed_record_and_a_second_run_nothing_new(
        kafka_broker, tmp_path, topic_name, mirror_name):
    cluster = str(tmp_path / "c")
    make_kstream_topic(cluster, topic_name, 3, {"retention.ms": "7200000", "flush.messages": "1"})
    committed = sample(3, 200)
    produce_kstream(cluster, topic_name, committed)
    produce_kstream(cluster, topic_name, sample(3, 30, salt="-aborted"), transactional_id="tx", commit=False)
    in_txn = sample(3, 30, salt="-txn")
    produce_kstream(cluster, topic_name, in_txn, transactional_id="tx")

    progress = IntoKafka(options(cluster, kafka_broker, mirror_name, topics=(topic_name,), chunk_records=64)).run()

    assert progress.records == 230
    assert by_partition(read_kafka(kafka_broker, topic_name, 3)) == by_partition(committed + in_txn)
    assert IntoKafka(options(cluster, kafka_broker, mirror_name, topics=(topic_name,))).run().records == 0
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    admin = AdminClient({"bootstrap.servers": kafka_broker})
    resource = ConfigResource(ResourceType.TOPIC, topic_name)
    config = admin.describe_configs([resource])[resource].result(timeout=30)
    assert config["retention.ms"].value == "7200000"
    assert config["flush.messages"].is_default  # each side's durability is its own


def test_continuous_mode_picks_up_records_produced_after_it_started(kafka_broker, tmp_path, topic_name, mirror_name):
    import threading
    import time

    cluster = str(tmp_path / "c")
    make_kstream_topic(cluster, topic_name, 2)
    first = sample(2, 20)
    produce_kstream(cluster, topic_name, first)
    mirror = IntoKafka(options(cluster, kafka_broker, mirror_name, topics=(topic_name,), until_end=False))
    stop = threading.Event()
    thread = threading.Thread(target=mirror.run, args=(stop,))
    thread.start()
    try:
        later = sample(2, 20, salt="-later")
        produce_kstream(cluster, topic_name, later)
        deadline = time.monotonic() + 30
        while mirror.progress.records < 40 and time.monotonic() < deadline:
            stop.wait(0.05)
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()
    assert mirror.progress.records == 40
    assert by_partition(read_kafka(kafka_broker, topic_name, 2)) == by_partition(first + later)


def test_a_partition_count_that_differs_on_kafka_is_an_error_and_writes_nothing(
        kafka_broker, tmp_path, topic_name, mirror_name):
    cluster = str(tmp_path / "c")
    make_kstream_topic(cluster, topic_name, 2)
    produce_kstream(cluster, topic_name, sample(2, 10))
    create_kafka_topic(kafka_broker, topic_name, 3)

    with pytest.raises(MirrorError, match=r"2 partitions in kstream .* but 3 on Apache Kafka"):
        IntoKafka(options(cluster, kafka_broker, mirror_name, topics=(topic_name,))).run()
    assert read_kafka(kafka_broker, topic_name, 3) == []


def test_records_read_past_the_end_at_start_are_left_for_the_next_run(
        kafka_broker, tmp_path, topic_name, mirror_name, monkeypatch):
    from kstream.mirror.kstream_side import KstreamSide

    cluster = str(tmp_path / "c")
    make_kstream_topic(cluster, topic_name, 1)
    records = sample(1, 20)
    produce_kstream(cluster, topic_name, records)
    real = KstreamSide.end_offsets
    # as if the last 8 records were appended just after the mirror read the end: one batch holds them all
    monkeypatch.setattr(KstreamSide, "end_offsets", lambda self, tps: {tp: 12 for tp in real(self, tps)})
    assert IntoKafka(options(cluster, kafka_broker, mirror_name, topics=(topic_name,))).run().records == 12
    monkeypatch.setattr(KstreamSide, "end_offsets", real)

    assert IntoKafka(options(cluster, kafka_broker, mirror_name, topics=(topic_name,))).run().records == 8
    assert read_kafka(kafka_broker, topic_name, 1) == records

"""Apache Kafka -> kstream: the copy, exactly once (docs/MIRROR.md)."""

from __future__ import annotations

import pytest
from tests.mirror.mirror_support import (
    by_partition,
    create_kafka_topic,
    produce_kafka,
    read_kstream,
    sample,
)

from kstream.mirror import MirrorError, MirrorOptions, parse_endpoint
from kstream.mirror.into_kstream import IntoKstream

pytestmark = pytest.mark.kafka


def options(bootstrap, cluster, name, **kw):
    kw.setdefault("until_end", True)
    kw.setdefault("poll_timeout_s", 0.2)
    return MirrorOptions(parse_endpoint(f"kafka:{bootstrap}"), parse_endpoint(f"cluster:{cluster}"), name, **kw)


def test_one_shot_copies_every_record_with_its_key_value_headers_timestamp_and_partition(
        kafka_broker, tmp_path, topic_name, mirror_name):
    create_kafka_topic(kafka_broker, topic_name, 3, {"retention.ms": "3600000", "min.insync.replicas": "1"})
    records = sample(3, 300)
    produce_kafka(kafka_broker, topic_name, records)
    cluster = str(tmp_path / "c")

    progress = IntoKstream(options(kafka_broker, cluster, mirror_name, topics=(topic_name,), chunk_records=64)).run()

    assert progress.records == 300
    assert by_partition(read_kstream(cluster, topic_name, 3)) == by_partition(records)
    from kstream import Admin

    with Admin({"cluster": cluster}) as admin:
        config = admin.describe_topic(topic_name).config
    assert config.get("retention.ms") == "3600000"  # on the allow list
    assert "min.insync.replicas" not in config  # MM2's exclude list


def test_a_second_one_shot_run_copies_nothing_new_and_a_third_only_what_came_since(
        kafka_broker, tmp_path, topic_name, mirror_name):
    create_kafka_topic(kafka_broker, topic_name, 2)
    first = sample(2, 50)
    produce_kafka(kafka_broker, topic_name, first)
    cluster = str(tmp_path / "c")
    assert IntoKstream(options(kafka_broker, cluster, mirror_name, topics=(topic_name,))).run().records == 50

    assert IntoKstream(options(kafka_broker, cluster, mirror_name, topics=(topic_name,))).run().records == 0

    later = sample(2, 20, salt="-later")
    produce_kafka(kafka_broker, topic_name, later)
    assert IntoKstream(options(kafka_broker, cluster, mirror_name, topics=(topic_name,))).run().records == 20
    assert by_partition(read_kstream(cluster, topic_name, 2)) == by_partition(first + later)


def test_transactional_source_data_arrives_only_once_committed(kafka_broker, tmp_path, topic_name, mirror_name):
    create_kafka_topic(kafka_broker, topic_name, 2)
    committed = sample(2, 40, salt="-c")
    produce_kafka(kafka_broker, topic_name, committed, transactional_id=f"{topic_name}-tx")
    produce_kafka(kafka_broker, topic_name, sample(2, 40, salt="-aborted"), transactional_id=f"{topic_name}-tx",
                  commit=False)
    plain = sample(2, 10, salt="-p")
    produce_kafka(kafka_broker, topic_name, plain)
    cluster = str(tmp_path / "c")

    progress = IntoKstream(options(kafka_broker, cluster, mirror_name, topics=(topic_name,))).run()

    assert progress.records == 50
    assert by_partition(read_kstream(cluster, topic_name, 2)) == by_partition(committed + plain)


def test_offset_syncs_record_each_change_of_the_translation(kafka_broker, tmp_path, topic_name, mirror_name):
    import json

    create_kafka_topic(kafka_broker, topic_name, 1)
    produce_kafka(kafka_broker, topic_name, sample(1, 10), transactional_id=f"{topic_name}-tx")  # 10 + a marker
    # the broker writes the commit marker after commit_transaction() returns: records produced
    # before it lands would take offset 10 and the marker 15 (a loaded machine does that)
    wait_for_high_watermark(kafka_broker, topic_name, 11)
    produce_kafka(kafka_broker, topic_name, sample(1, 5, salt="-2"))
    cluster = str(tmp_path / "c")
    run = options(kafka_broker, cluster, mirror_name, topics=(topic_name,), chunk_records=100)
    IntoKstream(run).run()

    from kstream import OFFSET_BEGINNING, Consumer, TopicPartition

    with Consumer({"cluster": cluster, "group.id": "r", "isolation.level": "read_committed"}) as consumer:
        consumer.assign([TopicPartition(run.offset_syncs_topic, 0, OFFSET_BEGINNING)])
        syncs = [json.loads(m.value()) for m in consumer.consume(100, 5)]
    # Kafka: 0..9, marker 10, 11..15; kstream: 0..14 in one transaction. Two translations.
    assert [(s["source_offset"], s["target_offset"]) for s in syncs] == [(0, 0), (11, 10)]


def wait_for_high_watermark(bootstrap, topic, offset, timeout_s=30):
    import time

    from confluent_kafka import Consumer as KafkaConsumer
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    consumer = KafkaConsumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    deadline = time.monotonic() + timeout_s
    try:
        while consumer.get_watermark_offsets(KafkaTopicPartition(topic, 0), timeout=10)[1] < offset:
            assert time.monotonic() < deadline, f"{topic}[0] did not reach offset {offset} within {timeout_s}s"
            time.sleep(0.02)
    finally:
        consumer.close()


def test_a_partition_count_that_differs_is_an_error_naming_both_and_writes_nothing(
        kafka_broker, tmp_path, topic_name, mirror_name):
    from kstream import Admin, NewTopic

    create_kafka_topic(kafka_broker, topic_name, 3)
    produce_kafka(kafka_broker, topic_name, sample(3, 9))
    cluster = str(tmp_path / "c")
    with Admin({"cluster": cluster}) as admin:
        admin.create_topics([NewTopic(topic_name, 2)])[topic_name].result()

    with pytest.raises(MirrorError, match=r"3 partitions on Apache Kafka .* but 2 in kstream"):
        IntoKstream(options(kafka_broker, cluster, mirror_name, topics=(topic_name,))).run()

    assert read_kstream(cluster, topic_name, 2) == []
    with Admin({"cluster": cluster}) as admin:
        assert f"__mirror.{mirror_name}.offset-syncs" not in admin.list_topics().topics


def test_an_unknown_topic_is_an_error_naming_it(kafka_broker, tmp_path, topic_name, mirror_name):
    cluster = str(tmp_path / "c")
    with pytest.raises(MirrorError, match=rf"unknown topic\(s\) '{topic_name}' on Apache Kafka"):
        IntoKstream(options(kafka_broker, cluster, mirror_name, topics=(topic_name,))).run()


def test_an_unreachable_broker_is_an_error_within_the_timeout(tmp_path, mirror_name):
    import socket
    import time

    with socket.socket() as unused:  # a port nobody listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(MirrorError, match=rf"127.0.0.1:{port} did not answer within 2s"):
        IntoKstream(options(f"127.0.0.1:{port}", str(tmp_path / "c"), mirror_name, topics=("t",),
                            timeout_s=2)).run()
    assert time.monotonic() - started < 10


def test_a_pattern_copies_the_topics_whose_whole_name_matches(kafka_broker, tmp_path, topic_name, mirror_name):
    for suffix in ("a", "b", "a-not"):
        create_kafka_topic(kafka_broker, f"{topic_name}.{suffix}", 1)
        produce_kafka(kafka_broker, f"{topic_name}.{suffix}", sample(1, 5, salt=suffix))
    cluster = str(tmp_path / "c")

    progress = IntoKstream(options(kafka_broker, cluster, mirror_name, pattern=rf"{topic_name}\.[ab]")).run()

    assert progress.records == 10
    from kstream import Admin

    with Admin({"cluster": cluster}) as admin:
        copied = sorted(t for t in admin.list_topics().topics if not t.startswith("__"))
    assert copied == [f"{topic_name}.a", f"{topic_name}.b"]
    assert read_kstream(cluster, f"{topic_name}.b", 1) == sample(1, 5, salt="b")


def test_a_commit_failing_on_the_committer_thread_stops_the_run_and_a_rerun_copies_the_rest_once(
        kafka_broker, tmp_path, topic_name, mirror_name, monkeypatch):
    """Commits overlap the next read (docs/MIRROR.md): a transaction failing mid-way (after its
    records were appended) is aborted, its error is raised by run(), and nothing after it is
    committed; a rerun starts from the last committed positions."""
    from kstream.client.producer import Producer

    create_kafka_topic(kafka_broker, topic_name, 2)
    records = sample(2, 400)
    produce_kafka(kafka_broker, topic_name, records)
    cluster = str(tmp_path / "c")
    real = Producer.send_offsets_to_transaction
    calls = []

    def failing_third(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise MirrorError("the disk went away (test)")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Producer, "send_offsets_to_transaction", failing_third)
    with pytest.raises(MirrorError, match="disk went away"):
        IntoKstream(options(kafka_broker, cluster, mirror_name, topics=(topic_name,), chunk_records=20)).run()
    assert len(calls) == 3  # no transaction after the failed one
    copied = by_partition(read_kstream(cluster, topic_name, 2))
    source = by_partition(records)
    assert 0 < sum(map(len, copied.values())) < 400
    assert all(copied[p] == source[p][:len(copied[p])] for p in copied)  # a prefix of each partition, once

    monkeypatch.setattr(Producer, "send_offsets_to_transaction", real)
    rest = IntoKstream(options(kafka_broker, cluster, mirror_name, topics=(topic_name,), chunk_records=20)).run()
    assert rest.records == 400 - sum(map(len, copied.values()))
    assert by_partition(read_kstream(cluster, topic_name, 2)) == source


def test_chunk_bytes_bounds_each_kstream_transaction(kafka_broker, tmp_path, topic_name, mirror_name, monkeypatch):
    """--chunk-bytes bounds the records held for one kstream transaction: 300 small records
    (at least 23 Arrow bytes each: offsets, timestamp, value) with a 4 KiB bound take several
    transactions of at most about 4 KiB each, where --chunk-records alone allows one."""
    from kstream.client.producer import Producer

    create_kafka_topic(kafka_broker, topic_name, 1)
    records = sample(1, 300)
    produce_kafka(kafka_broker, topic_name, records)
    cluster = str(tmp_path / "c")
    sizes: list[int] = []
    real = Producer.produce_batch

    def recording(self, topic, table, *args, **kwargs):
        if topic == topic_name:
            sizes.append(table.nbytes)
        return real(self, topic, table, *args, **kwargs)

    monkeypatch.setattr(Producer, "produce_batch", recording)
    run = options(kafka_broker, cluster, mirror_name, topics=(topic_name,), chunk_records=100_000, chunk_bytes=4096)
    progress = IntoKstream(run).run()

    assert progress.records == 300 and progress.transactions >= 2
    assert max(sizes) <= 2 * 4096, sizes  # a consume() asks for what the room holds at the sizes read
    assert by_partition(read_kstream(cluster, topic_name, 1)) == by_partition(records)

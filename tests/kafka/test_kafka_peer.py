"""The Kafka peer answers as Apache Kafka: records round-trip through confluent-kafka,
topics have the partitions and replicas asked for, and the launcher's settings reach the
broker. The three-broker cluster (replication) is slow: `make test-slow`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from tests.kafka.kafka_support import skip_without_peer

from kstream.errors import KStreamError
from kstream.tools.perf import kafka_peer
from kstream.tools.perf.kafka_peer import KafkaPeer, api_versions_answered

pytestmark = pytest.mark.kafka

TIMEOUT_S = 30


def create_topic(bootstrap, name, partitions=1, replicas=1, config=None):
    from confluent_kafka.admin import AdminClient

    kafka_peer.create_topic(bootstrap, name, partitions, replicas, config, TIMEOUT_S)
    return AdminClient({"bootstrap.servers": bootstrap})


def produce(bootstrap, topic, records, **config):
    """Send (partition, key, value) triples; return the delivered (partition, offset, key, value)."""
    from confluent_kafka import Producer

    delivered, errors = [], []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            delivered.append((msg.partition(), msg.offset(), msg.key(), msg.value()))

    producer = Producer({"bootstrap.servers": bootstrap, **config})
    for partition, key, value in records:
        producer.produce(topic, value, key, partition=partition, on_delivery=on_delivery)
    remaining = producer.flush(TIMEOUT_S)
    del producer  # (librdkafka's threads end with it, not after the broker has gone)
    assert remaining == 0
    assert errors == []
    return sorted(delivered)


def consume_all(bootstrap, topic, partitions, count):
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        seen = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(seen) < count and time.monotonic() < deadline:
            for message in consumer.consume(count, 0.5):
                assert message.error() is None, message.error()
                seen.append((message.partition(), message.offset(), message.key(), message.value()))
        return sorted(seen)
    finally:
        consumer.close()


def test_records_round_trip(kafka_broker, topic_name):
    create_topic(kafka_broker, topic_name)
    records = [(0, f"k{i}".encode(), f"value {i}".encode()) for i in range(10)]
    delivered = produce(kafka_broker, topic_name, records, acks="all")
    assert delivered == [(0, i, f"k{i}".encode(), f"value {i}".encode()) for i in range(10)]
    assert consume_all(kafka_broker, topic_name, 1, 10) == delivered


def test_topic_with_three_partitions(kafka_broker, topic_name):
    admin = create_topic(kafka_broker, topic_name, partitions=3)
    metadata = admin.list_topics(topic_name, timeout=TIMEOUT_S).topics[topic_name]
    assert sorted(metadata.partitions) == [0, 1, 2]
    records = [(i % 3, None, bytes([i])) for i in range(9)]
    delivered = produce(kafka_broker, topic_name, records)
    assert [(p, o) for p, o, _, _ in delivered] == [(p, o) for p in range(3) for o in range(3)]
    assert consume_all(kafka_broker, topic_name, 3, 9) == delivered


def broker_config(bootstrap, name):
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.BROKER, "1")
    return admin.describe_configs([resource])[resource].result(TIMEOUT_S)[name].value


def test_flush_messages_reaches_the_broker_and_stop_cleans_up(kafka_broker):
    # The session's broker keeps Kafka's default (no forced fsync) ...
    assert broker_config(kafka_broker, "log.flush.interval.messages") == str(2**63 - 1)
    # ... and a peer started with flush_messages=1 fsyncs every append; stop() ends its JVM and folder.
    skip_without_peer()
    peer = KafkaPeer(1, flush_messages=1).start()
    try:
        assert broker_config(peer.bootstrap, "log.flush.interval.messages") == "1"
        processes, directory, port = [n.process for n in peer.nodes], peer.directory, peer.nodes[0].broker_port
    finally:
        peer.stop()
    assert all(p.returncode is not None for p in processes)
    assert not directory.exists()
    assert not api_versions_answered(port)


def test_a_broker_that_cannot_start_says_why_and_leaves_nothing(tmp_path):
    skip_without_peer()
    peer = KafkaPeer(1, broker_config={"num.io.threads": "none"}, directory=tmp_path / "peer")
    with pytest.raises(KStreamError, match="num.io.threads") as failure:
        peer.start(timeout_s=60)
    assert "none" in str(failure.value)
    assert peer.nodes == [] and peer not in kafka_peer._RUNNING
    with pytest.raises(KStreamError, match="not started"):
        peer.bootstrap  # noqa: B018


@pytest.mark.slow
def test_a_port_taken_before_the_broker_binds_it_makes_it_start_again_on_new_ports(monkeypatch):
    skip_without_peer()
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        first = iter([taken])
        free_port = kafka_peer.free_port
        monkeypatch.setattr(kafka_peer, "free_port", lambda: next(first, None) or free_port())
        with KafkaPeer(1) as peer:
            assert peer.nodes[0].broker_port != taken
            assert api_versions_answered(peer.nodes[0].broker_port)


@pytest.mark.slow
def test_three_brokers_replicate_with_acks_all(topic_name):
    skip_without_peer()
    with KafkaPeer(3) as peer:
        assert len(peer.bootstrap.split(",")) == 3
        admin = create_topic(peer.bootstrap, topic_name, partitions=3, replicas=3,
                             config={"min.insync.replicas": "2"})
        records = [(i % 3, None, f"r{i}".encode()) for i in range(30)]
        delivered = produce(peer.bootstrap, topic_name, records, acks="all", **{"enable.idempotence": True})
        assert len(delivered) == 30
        metadata = admin.list_topics(topic_name, timeout=TIMEOUT_S).topics[topic_name]
        for partition in metadata.partitions.values():
            assert sorted(partition.replicas) == [1, 2, 3]
            assert sorted(partition.isrs) == [1, 2, 3]
        assert consume_all(peer.bootstrap, topic_name, 3, 30) == delivered


@pytest.mark.slow
def test_cli_prints_the_bootstrap_and_stops_on_ctrl_c():
    skip_without_peer()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cli = subprocess.Popen([sys.executable, "-m", "kstream.tools.perf.kafka_peer", "--brokers", "1"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        bootstrap = cli.stdout.readline().strip()
        host, _, port = bootstrap.partition(":")
        assert host == "127.0.0.1"
        assert api_versions_answered(int(port))
        cli.send_signal(signal.SIGINT)
        assert cli.wait(60) == 0
        assert "stopped in" in cli.stderr.read()
        assert not api_versions_answered(int(port))
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()

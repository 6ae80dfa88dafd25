"""The Kafka peer's settings and checks that need no JVM (tests/kafka starts real brokers)."""

from __future__ import annotations

import socket
import threading

import pytest

from kstream.errors import KStreamError
from kstream.tools.perf import kafka_peer


def test_one_node_keeps_kafkas_durability_and_fits_one_broker(tmp_path):
    properties = kafka_peer.node_properties(1, "1@127.0.0.1:9093", 9092, 9093, tmp_path, brokers=1)
    assert properties["process.roles"] == "broker,controller"
    assert properties["listeners"] == "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert properties["offsets.topic.replication.factor"] == "1"
    assert properties["transaction.state.log.min.isr"] == "1"
    assert "log.flush.interval.messages" not in properties  # Kafka's default: fsync left to the OS


def test_three_nodes_replicate_internal_topics_and_flush_messages_is_an_option(tmp_path):
    properties = kafka_peer.node_properties(2, "1@a,2@b,3@c", 1, 2, tmp_path, brokers=3, flush_messages=1)
    assert properties["node.id"] == "2"
    assert properties["offsets.topic.replication.factor"] == "3"
    assert properties["transaction.state.log.min.isr"] == "2"
    assert properties["log.flush.interval.messages"] == "1"
    with pytest.raises(KStreamError, match="flush_messages=0"):
        kafka_peer.node_properties(1, "1@a", 1, 2, tmp_path, brokers=1, flush_messages=0)


def test_cluster_ids_are_kafka_uuids_never_read_as_options():
    ids = {kafka_peer.cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)


def test_missing_names_the_jars_and_java(tmp_path, monkeypatch):
    assert "run `make kafka`" in kafka_peer.missing(tmp_path)
    (tmp_path / "broker").mkdir()
    (tmp_path / "broker" / "kafka_2.13-4.4.0.jar").touch()
    monkeypatch.setenv(kafka_peer.KAFKA_LIB_ENV, str(tmp_path))
    if kafka_peer.missing() is None:  # (java on PATH)
        assert kafka_peer.kafka_version() == "4.4.0"
    monkeypatch.setenv("PATH", str(tmp_path))
    assert kafka_peer.missing().startswith("no java on PATH")
    with pytest.raises(KStreamError, match="no java"):
        kafka_peer.KafkaPeer(1).start()


def test_api_versions_is_not_fooled_by_a_listener_that_is_not_kafka():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]

        def answer_garbage():
            conn, _ = server.accept()
            with conn:
                conn.recv(100)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

        thread = threading.Thread(target=answer_garbage)
        thread.start()
        assert not kafka_peer.api_versions_answered(port)
        thread.join()
    assert not kafka_peer.api_versions_answered(port)  # nothing listening

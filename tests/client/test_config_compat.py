"""confluent-kafka configs on kstream: librdkafka names accepted, honoured or refused clearly."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time

import pytest

from kstream import ConfigError, Consumer, KafkaError, Producer, TopicPartition
from kstream.config.librdkafka import IGNORED, render_markdown

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_network_and_security_keys_are_accepted(cluster_path, make_topic):
    make_topic("t")
    conf = {"cluster": cluster_path, "bootstrap.servers": "kafka:9092", "security.protocol": "SASL_SSL",
            "sasl.mechanisms": "PLAIN", "sasl.username": "u", "sasl.password": "p",
            "ssl.ca.location": "/etc/ca.pem", "socket.timeout.ms": "100", "request.timeout.ms": 30000,
            "reconnect.backoff.ms": 10, "api.version.request": True, "broker.version.fallback": "0.10",
            "debug": "all", "client.id": "me", "log.thread.name": True}
    with Producer(conf) as producer:
        producer.produce("t", b"v")
    Consumer({**conf, "group.id": "g", "session.timeout.ms": "6000"}).close()


def test_unknown_keys_still_fail_with_a_hint(cluster_path, make_topic):
    make_topic("t")
    with pytest.raises(ConfigError, match=r"unknown option 'bootstrap.server'.*did you mean bootstrap.servers"):
        Producer({"cluster": cluster_path, "bootstrap.server": "x"})
    with pytest.raises(ConfigError, match=r"did you mean linger.ms"):
        Producer({"cluster": cluster_path, "linger.sm": 5})
    with pytest.raises(ConfigError, match="should.fail"):
        Producer({"cluster": cluster_path, "should.fail": False})


def test_aliases_and_nested_topic_config(cluster_path, make_topic):
    make_topic("t")
    producer = Producer({"cluster": cluster_path, "message.timeout.ms": "250", "queue.buffering.max.ms": 7,
                         "compression.codec": "lz4"})
    assert producer._options["delivery.timeout.ms"] == 250
    assert producer._options["linger.ms"] == 7
    assert producer._options["compression.type"] == "lz4"
    producer.close()
    with pytest.raises(ConfigError, match="same setting"):
        Producer({"cluster": cluster_path, "message.timeout.ms": 1, "delivery.timeout.ms": 2})
    consumer = Consumer({"cluster": cluster_path, "default.topic.config": {"auto.offset.reset": "smallest"}})
    assert consumer._options["auto.offset.reset"] == "earliest"
    consumer.close()


def test_string_numbers_and_bools_work_as_librdkafka_takes_them(cluster_path, make_topic):
    make_topic("t")
    consumer = Consumer({"cluster": cluster_path, "group.id": "g", "enable.auto.commit": "false",
                         "session.timeout.ms": "6000", "enable.auto.offset.store": "true"})
    assert consumer._options["enable.auto.commit"] is False
    assert consumer._options["session.timeout.ms"] == 6000
    consumer.close()


def test_gzip_and_snappy_are_refused_naming_the_supported_codecs(cluster_path, make_topic):
    make_topic("t")
    for codec in ("gzip", "snappy"):
        with pytest.raises(ConfigError, match=r"not supported by kstream.*lz4 or zstd.*allowed: none, lz4, zstd"):
            Producer({"cluster": cluster_path, "compression.type": codec})


def test_callbacks_are_checked(cluster_path, make_topic):
    make_topic("t")
    for name in ("error_cb", "stats_cb", "throttle_cb", "oauth_cb", "on_delivery"):
        with pytest.raises(ConfigError, match=f"'{name}' must be callable"):
            Producer({"cluster": cluster_path, name: "not callable"})
    with pytest.raises(ConfigError, match="logging.Logger"):
        Consumer({"cluster": cluster_path, "logger": 42})
    Producer({"cluster": cluster_path, "throttle_cb": print, "oauth_cb": print}).close()


def test_no_config_is_a_type_error_as_in_confluent():
    with pytest.raises(TypeError, match="expected configuration dict"):
        Producer()
    with pytest.raises(TypeError, match="expected configuration dict"):
        Consumer()


def test_producer_properties_given_to_a_consumer_are_ignored(cluster_path, make_topic):
    make_topic("t")
    Consumer({"cluster": cluster_path, "acks": "all", "linger.ms": 5}).close()
    Producer({"cluster": cluster_path, "group.id": "g", "auto.offset.reset": "earliest"}).close()


def test_bootstrap_servers_without_cluster_says_once_which_cluster(cluster_path, make_topic):
    make_topic("t")
    code = (
        "import logging, sys\n"
        "logging.basicConfig(stream=sys.stderr)\n"
        "from kstream import Producer\n"
        "for _ in range(3):\n"
        "    Producer({'bootstrap.servers': 'localhost:9092'}).close()\n"
    )
    env = {**os.environ, "KSTREAM_CLUSTER": cluster_path,
           "PYTHONPATH": os.pathsep.join([os.path.join(ROOT, "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                          check=True)
    assert done.stderr.count("bootstrap.servers") == 1, done.stderr
    assert os.path.abspath(cluster_path) in done.stderr and "KSTREAM_CLUSTER" in done.stderr


def test_logger_gets_the_clients_warnings(cluster_path, make_topic, caplog):
    make_topic("t")
    logger = logging.getLogger("my.app")
    errors = []
    producer = Producer({"cluster": cluster_path, "logger": logger, "error_cb": errors.append, "acks": "1"})
    producer.produce("t", b"x" * 10, on_delivery=lambda err, msg: None)
    # a failed batch (here: the partition's log dir taken offline) goes to error_cb and the logger
    producer._reports.errors.append(KafkaError(KafkaError.UNKNOWN, "boom"))
    with caplog.at_level(logging.WARNING, logger="my.app"):
        producer.flush()
    assert [e.str() for e in errors] == ["boom"]
    assert any(r.name == "my.app" and "boom" in r.getMessage() for r in caplog.records)
    producer.close()


def test_producer_stats_cb_emits_librdkafka_shaped_json(cluster_path, make_topic):
    make_topic("t", 2)
    seen = []
    producer = Producer({"cluster": cluster_path, "stats_cb": seen.append, "statistics.interval.ms": 1,
                         "client.id": "app"})
    for i in range(10):
        producer.produce("t", b"v", key=str(i).encode())
    producer.flush()
    time.sleep(0.01)
    producer.poll(0)
    assert seen
    stats = json.loads(seen[-1])
    assert (stats["type"], stats["client_id"]) == ("producer", "app")
    for field in ("name", "ts", "time", "msg_cnt", "msg_size", "txmsgs", "rxmsgs", "brokers", "topics"):
        assert field in stats
    assert stats["txmsgs"] == 10
    parts = stats["topics"]["t"]["partitions"]
    assert sum(p["txmsgs"] for p in parts.values()) == 10
    assert stats["brokers"] == {}  # no broker connections to describe
    producer.close()


def test_consumer_stats_cb_has_lag_and_committed_offsets(cluster_path, make_topic):
    make_topic("t")
    with Producer({"cluster": cluster_path}) as producer:
        for i in range(20):
            producer.produce("t", str(i).encode())
    seen = []
    consumer = Consumer({"cluster": cluster_path, "group.id": "g", "stats_cb": seen.append,
                         "statistics.interval.ms": 1, "enable.auto.commit": False})
    consumer.assign([TopicPartition("t", 0, 0)])
    got = consumer.consume(5, timeout=2)
    assert len(got) == 5
    consumer.commit(asynchronous=False)
    time.sleep(0.01)
    consumer.poll(0)
    stats = json.loads(seen[-1])
    partition = stats["topics"]["t"]["partitions"]["0"]
    assert stats["type"] == "consumer" and stats["rxmsgs"] >= 5
    assert (partition["hi_offset"], partition["lo_offset"], partition["ls_offset"]) == (20, 0, 20)
    assert partition["committed_offset"] == 5
    assert partition["consumer_lag"] == 15
    assert stats["cgrp"]["assignment_size"] == 1
    consumer.close()


def test_config_doc_lists_the_librdkafka_names():
    with open(os.path.join(ROOT, "docs", "CONFIG.md")) as f:
        assert render_markdown() in f.read(), "regenerate docs/CONFIG.md's librdkafka section"
    assert "bootstrap.servers" in IGNORED and "sasl.password" in IGNORED


def test_consumer_error_cb_hears_of_a_corrupt_batch(cluster_path, make_topic):
    from kstream.log.storage import format as fmt
    make_topic("t")
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for i in range(2):
            producer.produce("t", f"value-{i}".encode() * 10)
    heard = []
    consumer = Consumer({"cluster": cluster_path, "error_cb": heard.append})
    path = os.path.join(consumer.cluster.partition("t", 0).leader_dir, fmt.segment_file_name(0))
    data = bytearray(open(path, "rb").read())
    data[len(data) - 10] ^= 0xFF  # inside the last frame's payload
    open(path, "wb").write(bytes(data))
    consumer.assign([TopicPartition("t", 0, 0)])
    while consumer.poll(0.2) is not None:
        pass
    assert len(heard) == 1 and heard[0].code() == KafkaError._BAD_MSG
    consumer.close()


def test_oauth_cb_is_called_on_librdkafkas_schedule_and_retried_after_a_failure(cluster_path, make_topic,
                                                                                  monkeypatch):
    import kstream.client.callbacks as callbacks
    monkeypatch.setattr(callbacks, "RETRY_S", 0.01)
    make_topic("t")
    calls = []
    heard = []

    def oauth_cb(config):
        calls.append(config)
        if len(calls) == 1:
            raise RuntimeError("identity provider down")
        return "token", time.time() + 300.0

    conf = {"cluster": cluster_path, "group.id": "g", "security.protocol": "sasl_plaintext",
            "sasl.mechanisms": "OAUTHBEARER", "sasl.oauthbearer.config": "scope=x", "oauth_cb": oauth_cb,
            "error_cb": heard.append}
    consumer = Consumer(conf)
    deadline = time.time() + 5
    while len(calls) < 2 and time.time() < deadline:
        consumer.poll(0.02)
    consumer.poll(0.02)
    assert calls == ["scope=x", "scope=x"]  # failed once, retried, then not again for 240 s
    assert len(heard) == 1 and "identity provider down" in heard[0].str()
    consumer.close()
    # Without OAUTHBEARER, oauth_cb is only checked, never called (as librdkafka).
    producer = Producer({"cluster": cluster_path, "oauth_cb": oauth_cb})
    producer.poll(0)
    producer.close()
    assert len(calls) == 2


def test_set_sasl_credentials_is_accepted_and_checked(cluster_path, make_topic):
    make_topic("t")
    for client in (Producer({"cluster": cluster_path}), Consumer({"cluster": cluster_path, "group.id": "d"})):
        client.set_sasl_credentials("username", "password")
        with pytest.raises(TypeError):
            client.set_sasl_credentials(None, "password")
        with pytest.raises(TypeError):
            client.set_sasl_credentials("username", None)
        client.close()


def test_short_session_timeout_is_refused_at_join_not_at_construction(cluster_path, make_topic):
    make_topic("t")
    consumer = Consumer({"cluster": cluster_path, "group.id": "g", "session.timeout.ms": "90"})
    assert consumer.poll(0.01) is None
    with pytest.raises(ConfigError, match=r"session.timeout.ms=90 is below the group's minimum 100"):
        consumer.subscribe(["t"])
    consumer.close()

"""Subclasses of the clients, as confluent-kafka users (and its own tests) write them: kstream's
internal calls never go through an overridable public method, and the read-only ``config``."""

from __future__ import annotations

import pytest

from kstream import Consumer, Producer, TopicPartition
from kstream.admin import AdminClient


class NarrowConsumer(Consumer):
    """Overrides assignment calls with other signatures (upstream's tests.common.TestConsumer)."""

    def assign(self, partitions):
        super().assign(partitions)

    def unassign(self, partitions):
        super().incremental_unassign(partitions)

    def incremental_assign(self, partitions, extra):
        raise AssertionError("kstream called an overridden incremental_assign")


def test_overridden_unassign_is_not_called_by_assign_subscribe_or_close(cluster_path, make_topic):
    make_topic("t", partitions=2)
    consumer = NarrowConsumer({"cluster": cluster_path, "group.id": "g"})
    consumer.assign([TopicPartition("t", 0)])
    consumer.assign([TopicPartition("t", 1)])  # replaces the assignment without calling unassign()
    assert consumer.assignment() == [TopicPartition("t", 1)]
    consumer.unassign([TopicPartition("t", 1)])
    assert consumer.assignment() == []
    consumer.subscribe(["t"])
    consumer.close()


def test_config_is_the_effective_configuration_as_strings_and_read_only(cluster_path, make_topic):
    make_topic("t")

    def error_cb(err):
        pass

    producer = Producer({"cluster": cluster_path, "client.id": "me", "bootstrap.servers": "host:9092",
                         "linger.ms": 7, "enable.idempotence": True, "error_cb": error_cb})
    config = producer.config
    assert config["client.id"] == "me" and config["linger.ms"] == "7"
    assert config["enable.idempotence"] == "true"  # librdkafka's spelling of a bool
    assert config["batch.size"] == str(Producer({"cluster": cluster_path}).config["batch.size"])  # a default
    assert config["bootstrap.servers"] == "host:9092"  # accepted librdkafka names, as given
    assert "error_cb" not in config and all(isinstance(v, str) for v in config.values())
    config["client.id"] = "changed"
    assert producer.config["client.id"] == "me"  # a copy
    try:
        producer.config = {}
    except AttributeError:
        pass
    else:
        raise AssertionError("config is read-only")
    producer.close()
    consumer = Consumer({"cluster": cluster_path, "group.id": "g", "session.timeout.ms": 1000})
    assert (consumer.config["group.id"], consumer.config["session.timeout.ms"]) == ("g", "1000")
    consumer.close()
    with AdminClient({"cluster": cluster_path, "client.id": "adm"}) as admin:
        assert admin.config["client.id"] == "adm"


def test_a_producer_whose_init_never_ran_counts_as_closed():
    class Uninitialized(Producer):
        def __init__(self, conf):
            pass  # skips Producer.__init__: nothing is open

    producer = Uninitialized({})
    calls = [lambda: producer.produce("t", b"v"), producer.poll, producer.flush, producer.purge,
             lambda: producer.produce_batch("t", [{"value": b"v"}]), producer.init_transactions,
             producer.begin_transaction, producer.commit_transaction, producer.abort_transaction]
    for call in calls:
        with pytest.raises(RuntimeError, match="Producer has been closed"):
            call()
    assert len(producer) == 0
    assert Producer.__dict__["_topics"] == {}  # the class-level stand-in is still empty

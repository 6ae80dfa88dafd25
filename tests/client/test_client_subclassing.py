"""Subclasses of the clients, as confluent-kafka users (and its own tests) write them: kstream's
internal calls never go through an overridable public method, and the read-only ``config``."""

from __future__ import annotations

from kstream import Consumer, TopicPartition


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

"""The mirror's group requests to Kafka wait for a coordinator that is not ready yet.

A new Kafka cluster answers its first group request with NOT_COORDINATOR while it creates
``__consumer_offsets`` (seen from `kstream mirror offsets --apply` on a fresh broker: docs/GRADUATE.md's
test run alone failed with "describing group 'etl' ... NOT_COORDINATOR"). Kafka's Java clients retry
it; librdkafka's admin calls give it back at once. A stand-in admin client plays the broker here, so
the test needs confluent-kafka but no broker.
"""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace

import pytest

from kstream.mirror.errors import MirrorError
from kstream.mirror.kafka_side import KafkaSide

ck = pytest.importorskip("confluent_kafka")


class NotReadyAdmin:
    """Answers each group request with ``errors`` (KafkaError codes) first, then ``result``."""

    def __init__(self, errors: list[int], result: object):
        self.errors = list(errors)
        self.result = result
        self.calls = 0

    def _answer(self, group: str) -> dict[str, Future]:
        self.calls += 1
        future: Future = Future()
        if self.errors:
            future.set_exception(ck.KafkaException(ck.KafkaError(self.errors.pop(0))))
        else:
            future.set_result(self.result)
        return {group: future}

    def describe_consumer_groups(self, groups, request_timeout=None):
        return self._answer(groups[0])

    def list_consumer_group_offsets(self, requests, request_timeout=None):
        return self._answer(requests[0].group_id)

    def alter_consumer_group_offsets(self, requests, request_timeout=None):
        return self._answer(requests[0].group_id)


def side_with(admin: NotReadyAdmin, timeout_s: float = 5.0) -> KafkaSide:
    side = KafkaSide("127.0.0.1:9", timeout_s)
    side._admin = admin
    return side


NOT_READY = [ck.KafkaError.NOT_COORDINATOR, ck.KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
             ck.KafkaError.COORDINATOR_NOT_AVAILABLE]


def test_describing_a_group_waits_for_the_coordinator():
    admin = NotReadyAdmin(NOT_READY, SimpleNamespace(members=[SimpleNamespace(member_id="m-1")]))
    assert side_with(admin).active_members("etl") == ["m-1"]
    assert admin.calls == 4


def test_listing_and_setting_a_groups_offsets_wait_for_the_coordinator():
    offsets = SimpleNamespace(topic_partitions=[ck.TopicPartition("clicks", 0, 7)])
    admin = NotReadyAdmin(NOT_READY[:1], offsets)
    assert side_with(admin).group_offsets("etl") == {("clicks", 0): 7}
    assert admin.calls == 2
    admin = NotReadyAdmin(NOT_READY[:2], offsets)
    side_with(admin).alter_group_offsets("etl", {("clicks", 0): 7})
    assert admin.calls == 3


def test_a_coordinator_never_ready_fails_after_the_timeout_naming_the_error():
    admin = NotReadyAdmin([ck.KafkaError.NOT_COORDINATOR] * 100, None)
    with pytest.raises(MirrorError, match="describing group 'etl' at 127.0.0.1:9 failed: .*NOT_COORDINATOR"):
        side_with(admin, timeout_s=0.5).active_members("etl")
    assert 2 <= admin.calls < 10


def test_other_errors_are_not_tried_again():
    admin = NotReadyAdmin([ck.KafkaError.GROUP_AUTHORIZATION_FAILED], None)
    with pytest.raises(MirrorError, match="GROUP_AUTHORIZATION_FAILED"):
        side_with(admin).active_members("etl")
    assert admin.calls == 1

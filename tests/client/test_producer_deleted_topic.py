"""A producer that wrote to a topic which was then deleted (and maybe re-created) reports
its later records' failure as UNKNOWN_TOPIC_OR_PART, and still closes cleanly (issue 26,
item 3)."""

from __future__ import annotations

import pytest

from kstream import KafkaError, Producer
from kstream.admin import Admin, NewTopic


@pytest.mark.parametrize("recreated", [False, True])
def test_an_old_producer_of_a_deleted_topic(cluster_path, make_topic, recreated):
    make_topic("t", 1)
    reports = []
    producer = Producer({"cluster": cluster_path, "acks": "1", "error_cb": lambda _e: None})
    producer.produce("t", b"a", on_delivery=lambda err, _m: reports.append(err))
    producer.flush()
    with Admin({"cluster": cluster_path}) as admin:
        admin.delete_topics(["t"])["t"].result()
        if recreated:
            admin.create_topics([NewTopic("t", 1, 1)])["t"].result()
    producer.produce("t", b"b", on_delivery=lambda err, _m: reports.append(err))
    producer.flush()
    assert reports[0] is None
    assert reports[1] is not None and reports[1].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert producer.close() is True  # no TopicNotFoundError: the deleted partition has nothing to sync

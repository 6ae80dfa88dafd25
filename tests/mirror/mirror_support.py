"""Write and read both sides of a mirror in the tests: records as comparable tuples."""

from __future__ import annotations

import time
from typing import Any

from kstream import OFFSET_BEGINNING, Consumer, TopicPartition

Record = tuple[int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...], int]
"""(partition, key, value, headers, timestamp ms): what a mirror keeps, order per partition."""


def kafka_admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


def create_kafka_topic(bootstrap: str, topic: str, partitions: int, config: dict[str, str] | None = None) -> None:
    from confluent_kafka.admin import NewTopic

    admin = kafka_admin(bootstrap)  # kept alive until the result: a collected client cancels its calls
    futures = admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})])
    futures[topic].result(timeout=30)


NOW_MS = int(time.time() * 1000)  # recent timestamps: kstream's retention (7 days) would drop old ones


def sample(partitions: int, count: int, salt: str = "") -> list[Record]:
    """``count`` records spread over ``partitions``, with keys (some null), headers and timestamps."""
    out = []
    for i in range(count):
        key = None if i % 7 == 0 else f"k{i % 13}{salt}".encode()
        headers = (("h", f"{i}".encode()), ("n", None)) if i % 3 == 0 else ()
        out.append((i % partitions, key, f"v{i}{salt}".encode() * (1 + i % 4), headers, NOW_MS - 60_000 + i))
    return out


def produce_kafka(bootstrap: str, topic: str, records: list[Record], transactional_id: str | None = None,
                  commit: bool = True) -> None:
    from confluent_kafka import Producer

    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "linger.ms": 5}
    if transactional_id:
        config["transactional.id"] = transactional_id
    producer = Producer(config)
    if transactional_id:
        producer.init_transactions(30)
        producer.begin_transaction()
    for partition, key, value, headers, timestamp in records:
        producer.produce(topic, value=value, key=key, partition=partition, timestamp=timestamp,
                         headers=list(headers) or None)
    if transactional_id:
        producer.commit_transaction(30) if commit else producer.abort_transaction(30)
    assert producer.flush(30) == 0


def read_kafka(bootstrap: str, topic: str, partitions: int) -> list[Record]:
    """Every committed record of ``topic`` (read_committed, up to the last stable offset)."""
    from confluent_kafka import Consumer as KafkaConsumer
    from confluent_kafka import KafkaError
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    consumer = KafkaConsumer({"bootstrap.servers": bootstrap, **_READER})
    return _read_to_end(consumer, KafkaTopicPartition, topic, partitions, 30, KafkaError._PARTITION_EOF)


def read_kstream(cluster: str, topic: str, partitions: int) -> list[Record]:
    """Every committed record of a kstream topic (read_committed, up to the end)."""
    return _read_to_end(Consumer({"cluster": cluster, **_READER}), TopicPartition, topic, partitions, 10, None)


_READER = {"group.id": "reader", "enable.auto.commit": False, "isolation.level": "read_committed",
           "enable.partition.eof": True}


def _read_to_end(consumer: Any, topic_partition: Any, topic: str, partitions: int, timeout_s: float,
                 eof_code: int | None) -> list[Record]:
    """What a confluent-shaped ``consumer`` reads of ``topic`` from the beginning until every
    partition reported its end (``eof_code``: the only error expected; None: any error is an end)."""
    consumer.assign([topic_partition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    out: list[Record] = []
    at_end: set[int] = set()
    try:
        while len(at_end) < partitions:
            message = consumer.poll(timeout_s)
            assert message is not None, f"no record nor end of partition within {timeout_s}s ({topic})"
            if message.error() is not None:
                assert eof_code is None or message.error().code() == eof_code, message.error()
                at_end.add(message.partition())
                continue
            at_end.discard(message.partition())
            out.append((message.partition(), message.key(), message.value(),
                        tuple(message.headers() or ()), message.timestamp()[1]))
    finally:
        consumer.close()
    return out


def by_partition(records: list[Record]) -> dict[int, list[Record]]:
    out: dict[int, list[Record]] = {}
    for record in records:
        out.setdefault(record[0], []).append(record)
    return out

"""Compaction side by side with Apache Kafka (issue 25): the same seeded writes (puts, updates,
tombstones) to a compacted topic on the session's broker (confluent-kafka) and on kstream (its
confluent drop-in, only the connection changed), both cleaned, then what survives per key
compared. What each side may keep besides is in docs/COMPAT.md ("Compaction beside Kafka")."""

from __future__ import annotations

import importlib
import random
import time

import pytest

from kstream.log.cluster.cluster import Cluster

pytestmark = pytest.mark.kafka

TIMEOUT_S = 30
CLEAN_WAIT_S = 120  # Kafka's cleaner wakes every log.cleaner.backoff.ms (15 s by default)
ROLL_MS = 200  # segment.ms: the writes' segment is sealed by the sentinel written after it
TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.ms": str(ROLL_MS), "min.cleanable.dirty.ratio": "0.01",
                "min.compaction.lag.ms": "0", "delete.retention.ms": "100"}
SENTINEL = (b"zz-sentinel", b"rolls the segment")


def writes(seed: int, count: int = 300, keys: int = 20) -> list[tuple[bytes, bytes | None]]:
    """Seeded (key, value) writes, a value None being a tombstone; a deleted key may come back."""
    rng = random.Random(seed)
    return [(f"k{rng.randrange(keys)}".encode(), None if rng.random() < 0.15 else f"v{i}".encode())
            for i in range(count)]


def run_side(client: str, connection: dict, topic: str, records: list[tuple[bytes, bytes | None]]) -> None:
    """Create the compacted topic and write ``records`` then the sentinel through ``client``
    (``confluent_kafka`` or ``kstream``, the same calls), one partition, acks=all."""
    lib = importlib.import_module(client)
    admin_lib = importlib.import_module(f"{client}.admin")
    admin = admin_lib.AdminClient(connection)
    admin.create_topics([admin_lib.NewTopic(topic, 1, 1, config=TOPIC_CONFIG)])[topic].result(TIMEOUT_S)
    errors = []

    def on_delivery(err, _msg):
        if err is not None:
            errors.append(err)

    producer = lib.Producer({**connection, "acks": "all", "linger.ms": 5})
    for key, value in records:
        producer.produce(topic, value, key, partition=0, on_delivery=on_delivery)
    assert producer.flush(TIMEOUT_S) == 0
    time.sleep(2 * ROLL_MS / 1000)  # the next write rolls the segment: the writes above are cleanable
    producer.produce(topic, SENTINEL[1], SENTINEL[0], partition=0, on_delivery=on_delivery)
    assert producer.flush(TIMEOUT_S) == 0
    assert errors == []


def surviving(client: str, connection: dict, topic: str) -> list[tuple[int, bytes, bytes | None]]:
    """(offset, key, value) of every record a consumer reads from the start to the sentinel."""
    lib = importlib.import_module(client)
    consumer = lib.Consumer({**connection, "group.id": f"g-{topic}", "enable.auto.commit": False,
                             "enable.partition.eof": True})
    out = []
    try:
        consumer.assign([lib.TopicPartition(topic, 0, lib.OFFSET_BEGINNING)])
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().code() == lib.KafkaError._PARTITION_EOF:
                    return out
                raise AssertionError(f"{client}: {message.error()}")
            out.append((message.offset(), message.key(), message.value()))
        raise AssertionError(f"{client}: no end of partition in {TIMEOUT_S}s")
    finally:
        consumer.close()


def compacted(records: list[tuple[int, bytes, bytes | None]]) -> bool:
    """At most one record per key: the cleaner has been over every sealed segment."""
    keys = [key for _, key, _ in records]
    return len(keys) == len(set(keys))


def test_kafka_and_kstream_keep_the_same_latest_record_of_every_key(kafka_broker, topic_name, cluster_path):
    records = writes(seed=25)
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    for offset, (key, value) in enumerate(records):
        latest[key] = (offset, value)
    sentinel_offset = len(records)
    kafka = {"bootstrap.servers": kafka_broker}
    ours = {"cluster": cluster_path}
    run_side("confluent_kafka", kafka, topic_name, records)
    run_side("kstream", ours, topic_name, records)
    opened = Cluster.open(cluster_path)  # kstream's cleaner: what `kstream topics clean` runs
    try:
        opened.clean_topic(topic_name, force=True)
        time.sleep(0.2)  # past delete.retention.ms: the second clean may drop the tombstones
        opened.clean_topic(topic_name, force=True)
    finally:
        opened.close()
    theirs = surviving("confluent_kafka", kafka, topic_name)
    deadline = time.monotonic() + CLEAN_WAIT_S
    while not compacted(theirs) and time.monotonic() < deadline:  # Kafka's cleaner runs in the background
        time.sleep(1)
        theirs = surviving("confluent_kafka", kafka, topic_name)
    assert compacted(theirs), f"Kafka's cleaner did not run in {CLEAN_WAIT_S}s ({len(theirs)} records)"
    mine = surviving("kstream", ours, topic_name)
    assert compacted(mine)
    for side, got in (("kafka", theirs), ("kstream", mine)):
        by_key = {key: (offset, value) for offset, key, value in got}
        assert by_key.pop(SENTINEL[0]) == (sentinel_offset, SENTINEL[1]), side  # the active segment's
        for key, (offset, value) in latest.items():
            if value is not None:  # a live key: its latest record, at its own offset
                assert by_key.get(key) == (offset, value), (side, key)
            else:  # a deleted key: gone, or its tombstone (within delete.retention.ms), never older
                assert by_key.get(key, (offset, None)) == (offset, None), (side, key)
        assert set(by_key) <= set(latest), side
    # The same records survive on both sides, but for tombstones one side may still keep.
    live = lambda got: [r for r in got if r[2] is not None]  # noqa: E731
    assert live(theirs) == live(mine)

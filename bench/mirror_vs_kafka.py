"""The mirror beside confluent-kafka on one Apache Kafka broker, one run, alternating, medians (issue 23).

    python -m bench.mirror_vs_kafka [--records 200000] [--record-size 100] [--partitions 4] [--repeats 5]

One Apache Kafka broker (kstream.tools.perf.kafka_peer, Kafka's default durability: acks=all on
one broker, no fsync per message) and kstream clusters in a temporary folder get the same records:
``--records`` values of ``--record-size`` random bytes, keys ``k<i>``, a header, over
``--partitions`` partitions. Each repeat, alternating the two sides of each pair:

(a) kstream -> Kafka: ``IntoKafka`` (kstream read_committed -> confluent-kafka, acks=all,
    idempotent, positions committed in kstream after each flush) from a kstream topic into a new
    Kafka topic, and the same with ``--exactly-once`` (each ``--chunk-records`` chunk one Kafka
    transaction with the positions in it), against confluent-kafka's produce() of the same
    records (same producer settings, not transactional: its best rate, from Python lists in
    memory) into a new Kafka topic, flush() included;
(b) Kafka -> kstream: ``IntoKstream`` (read_committed confluent-kafka consumer -> one kstream
    transaction per ``--chunk-records``, acks=all, fsynced, exactly once) from the Kafka topic into
    a new kstream cluster, against confluent-kafka's consume() of the same topic (read_committed,
    batches of 10,000, no processing).

Prints records/s medians and the ratio mirror / confluent-kafka per direction (the goal: >= 0.8).
Starts a Kafka broker: run under ``flock /tmp/kstream-spark.lock`` and ``flock /tmp/kstream-bench.lock``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid

from kstream import Admin, NewTopic, Producer
from kstream.mirror import MirrorOptions, parse_endpoint
from kstream.mirror.into_kafka import IntoKafka
from kstream.mirror.into_kstream import IntoKstream
from kstream.tools.perf.kafka_peer import KafkaPeer


def records(count: int, size: int, partitions: int) -> list[tuple[int, bytes, bytes]]:
    payload = os.urandom(size)
    return [(i % partitions, f"k{i}".encode(), payload) for i in range(count)]


def kafka_producer(bootstrap: str):
    from confluent_kafka import Producer as KafkaProducer

    # the mirror's own producer settings (kstream.mirror.kafka_side.KafkaSide.producer)
    return KafkaProducer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                          "linger.ms": 5, "batch.size": 1 << 20, "queue.buffering.max.messages": 1_000_000})


def create_kafka_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.admin import NewTopic as KafkaNewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([KafkaNewTopic(topic, partitions, 1)])[topic].result(timeout=30)


def confluent_produce(bootstrap: str, data: list[tuple[int, bytes, bytes]], partitions: int) -> float:
    topic = f"p-{uuid.uuid4().hex[:8]}"
    create_kafka_topic(bootstrap, topic, partitions)
    producer = kafka_producer(bootstrap)
    headers = [("h", b"1")]
    started = time.perf_counter()
    for partition, key, value in data:
        while True:
            try:
                producer.produce(topic, value=value, key=key, partition=partition, headers=headers)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    return len(data) / (time.perf_counter() - started)


def confluent_consume(bootstrap: str, topic: str, partitions: int, count: int) -> float:
    from confluent_kafka import Consumer as KafkaConsumer
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    consumer = KafkaConsumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                              "isolation.level": "read_committed"})  # librdkafka's prefetch defaults: its best
    consumer.assign([KafkaTopicPartition(topic, p, -2) for p in range(partitions)])
    got = 0
    started = time.perf_counter()
    while got < count:
        got += sum(1 for m in consumer.consume(10_000, 5) if m.error() is None)
    rate = got / (time.perf_counter() - started)
    consumer.close()
    return rate


def mirror_into_kafka(cluster: str, topic: str, bootstrap: str, chunk_records: int, exactly_once: bool) -> float:
    """IntoKafka of kstream ``topic`` into a new Kafka topic (a new mirror name: a fresh copy)."""
    name = f"b{uuid.uuid4().hex[:8]}"
    options = MirrorOptions(parse_endpoint(f"cluster:{cluster}"), parse_endpoint(f"kafka:{bootstrap}"), name,
                            topics=(topic,), until_end=True, poll_timeout_s=0.1, chunk_records=chunk_records,
                            exactly_once=exactly_once)
    started = time.perf_counter()
    copied = IntoKafka(options).run().records
    return copied / (time.perf_counter() - started)


def mirror_into_kstream(bootstrap: str, topic: str, folder: str, chunk_records: int) -> float:
    name = f"b{uuid.uuid4().hex[:8]}"
    options = MirrorOptions(parse_endpoint(f"kafka:{bootstrap}"), parse_endpoint(f"cluster:{folder}/{name}"), name,
                            topics=(topic,), until_end=True, poll_timeout_s=0.1, chunk_records=chunk_records)
    started = time.perf_counter()
    copied = IntoKstream(options).run().records
    return copied / (time.perf_counter() - started)


def fill_kstream(cluster: str, topic: str, data: list[tuple[int, bytes, bytes]], partitions: int) -> None:
    with Admin({"cluster": cluster}) as admin:
        admin.create_topics([NewTopic(topic, partitions)])[topic].result()
    producer = Producer({"cluster": cluster, "linger.ms": 5})
    for partition, key, value in data:
        producer.produce(topic, value=value, key=key, partition=partition, headers=[("h", b"1")])
    producer.flush()
    producer.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--chunk-records", type=int, default=10_000)
    args = parser.parse_args(argv)
    data = records(args.records, args.record_size, args.partitions)
    results: dict[str, list[float]] = {k: [] for k in ("produce", "into_kafka", "into_kafka_eos", "consume",
                                                       "into_kstream")}
    with tempfile.TemporaryDirectory(prefix="mirror-bench-") as folder, KafkaPeer(1) as peer:
        source_cluster = os.path.join(folder, "source")
        fill_kstream(source_cluster, "bench", data, args.partitions)
        kafka_topic = f"src-{uuid.uuid4().hex[:8]}"
        create_kafka_topic(peer.bootstrap, kafka_topic, args.partitions)
        confluent_produce_into(peer.bootstrap, kafka_topic, data)
        mirror_into_kstream(peer.bootstrap, kafka_topic, folder, args.chunk_records)  # warm-up, both paths
        for repeat in range(args.repeats):
            # alternate which side of each pair goes first
            pairs = [("produce", lambda: confluent_produce(peer.bootstrap, data, args.partitions)),
                     ("into_kafka", lambda: mirror_into_kafka_fresh(source_cluster, peer.bootstrap,
                                                                    args.chunk_records, False)),
                     ("into_kafka_eos", lambda: mirror_into_kafka_fresh(source_cluster, peer.bootstrap,
                                                                        args.chunk_records, True))]
            pairs2 = [("consume", lambda: confluent_consume(peer.bootstrap, kafka_topic, args.partitions,
                                                            args.records)),
                      ("into_kstream", lambda: mirror_into_kstream(peer.bootstrap, kafka_topic, folder,
                                                                   args.chunk_records))]
            for pair in (pairs, pairs2):
                for key, run in (pair if repeat % 2 == 0 else pair[::-1]):
                    results[key].append(run())
            print(f"repeat {repeat + 1}: " + ", ".join(f"{k} {v[-1]:,.0f}/s" for k, v in results.items()),
                  file=sys.stderr, flush=True)
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"\n{args.records:,} records of {args.record_size} bytes, {args.partitions} partitions, "
          f"medians of {args.repeats}\n")
    print("| direction | mirror records/s | confluent-kafka records/s | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| kstream -> Kafka (vs produce) | {med['into_kafka']:,.0f} | {med['produce']:,.0f} | "
          f"{med['into_kafka'] / med['produce']:.2f} |")
    print(f"| kstream -> Kafka --exactly-once (vs produce) | {med['into_kafka_eos']:,.0f} | {med['produce']:,.0f} | "
          f"{med['into_kafka_eos'] / med['produce']:.2f} |")
    print(f"| Kafka -> kstream (vs consume) | {med['into_kstream']:,.0f} | {med['consume']:,.0f} | "
          f"{med['into_kstream'] / med['consume']:.2f} |")
    for key, values in results.items():
        print(f"{key}: " + ", ".join(f"{v:,.0f}" for v in values))
    return 0


def confluent_produce_into(bootstrap: str, topic: str, data: list[tuple[int, bytes, bytes]]) -> None:
    producer = kafka_producer(bootstrap)
    for partition, key, value in data:
        while True:
            try:
                producer.produce(topic, value=value, key=key, partition=partition, headers=[("h", b"1")])
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0


def mirror_into_kafka_fresh(source_cluster: str, bootstrap: str, chunk_records: int, exactly_once: bool) -> float:
    """The mirror keeps topic names, so each run copies a kstream topic of its own (a clone of
    the source made before the clock starts) into a new Kafka topic of that name."""
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    _clone_topic(source_cluster, "bench", topic)
    return mirror_into_kafka(source_cluster, topic, bootstrap, chunk_records, exactly_once)


def _clone_topic(cluster: str, source: str, target: str) -> None:
    """A new kstream topic with ``source``'s records (outside the timed part)."""
    from kstream import OFFSET_BEGINNING, Consumer, TopicPartition

    with Admin({"cluster": cluster}) as admin:
        partitions = len(admin.list_topics().topics[source].partitions)
        admin.create_topics([NewTopic(target, partitions)])[target].result()
    producer = Producer({"cluster": cluster, "linger.ms": 5})
    with Consumer({"cluster": cluster, "group.id": "clone"}) as consumer:
        consumer.assign([TopicPartition(source, p, OFFSET_BEGINNING) for p in range(partitions)])
        lows_highs = [consumer.get_watermark_offsets(TopicPartition(source, p)) for p in range(partitions)]
        total = sum(high - low for low, high in lows_highs)
        got = 0
        while got < total:
            batch = consumer.poll_batch(100_000, 5)
            if batch is None:
                break
            table = batch.select(["key", "value", "headers", "partition"])
            producer.produce_batch(target, table)
            got += batch.num_rows
    producer.flush()
    producer.close()


if __name__ == "__main__":
    sys.exit(main())

"""The idempotent producer: every record once, in order; the settings it refuses.

    idempotence.py <bootstrap> <topic>

``enable.idempotence=true`` with 200 records to one partition, flushed in several rounds:
the partition holds them once each, at contiguous offsets, in order. Then the
configurations librdkafka refuses with idempotence (acks other than all, a
max.in.flight above 5): the error code printed, not its text (each library words it
its own way: docs/COMPAT.md, "Side by side", error texts).
"""

import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def main(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(10)

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 2})
    reports = []
    for round_ in range(4):
        for i in range(50):
            producer.produce(topic, key=b"k", value=str(round_ * 50 + i),
                             on_delivery=lambda err, msg: reports.append((err, msg.offset())))
        producer.flush(10)
    errors = [err for err, _ in reports if err is not None]
    print(f"delivered: {len(reports)}, errors: {errors}, offsets contiguous from 0: "
          f"{[offset for _, offset in reports] == list(range(200))}")

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-g", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    values, deadline = [], time.monotonic() + 10
    while len(values) < 200 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            values.append(int(msg.value()))
    consumer.close()
    print(f"read: {len(values)}, each once and in order: {values == list(range(200))}")

    for extra in ({"acks": 1}, {"acks": 0}, {"max.in.flight.requests.per.connection": 6}):
        try:
            Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, **extra})
            print(f"enable.idempotence with {extra}: accepted")
        except KafkaException as err:
            print(f"enable.idempotence with {extra}: refused, {err.args[0].name()}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

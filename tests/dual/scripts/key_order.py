"""Per-key ordering across partitions: each key stays in one partition, in the order produced.

    key_order.py <bootstrap> <topic>

Five keys, 40 records interleaved, a topic of three partitions. Printed: for each key, whether
all its records share one partition and whether they come back in the order produced, and
how many keys each partition holds. Not printed: which partition a key lands in (the
default partitioners differ: librdkafka's is consistent_random, a CRC32 of the key;
kstream's is murmur2, as Kafka's Java client: docs/COMPAT.md, "Side by side", key partitioning).
"""

import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

KEYS = [f"user-{n}" for n in range(5)]
RECORDS = 40


def main(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])[topic].result(10)

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce(topic, key=KEYS[i % len(KEYS)], value=str(i))
    print("not delivered:", producer.flush(10))

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-g", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(3)])
    seen, deadline = [], time.monotonic() + 10
    while len(seen) < RECORDS and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            seen.append(msg)
    consumer.close()

    print("records read:", len(seen))
    for key in KEYS:
        mine = [m for m in seen if m.key() == key.encode()]
        values = [int(m.value()) for m in mine]
        offsets = [m.offset() for m in mine]
        print(f"{key}: {len(mine)} records, one partition: {len({m.partition() for m in mine}) == 1}, "
              f"in produce order: {values == sorted(values)}, offsets increasing: {offsets == sorted(offsets)}")
    per_partition = sorted(len({m.key() for m in seen if m.partition() == p}) for p in range(3))
    print("keys per partition (sorted):", per_partition)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

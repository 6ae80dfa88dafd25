"""Transactions and read_committed: a committed and an aborted transaction, read both ways.

    transactions.py <bootstrap> <topic>

Writes 2 plain records, a transaction of 3 records that commits, one of 2 that aborts,
and one more plain record, to one partition. Printed: what a read_committed and a
read_uncommitted consumer see (offsets included: Kafka's transaction markers take an
offset each), and the watermarks.
"""

import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def read(bootstrap, topic, isolation):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-{isolation}",
                         "isolation.level": isolation, "enable.partition.eof": True,
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    seen, deadline = [], time.monotonic() + 10
    while time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                seen.append(f"end at {msg.offset()}")
                break
            seen.append(f"error {msg.error().name()}")
            continue
        seen.append(f"{msg.offset()}:{msg.value().decode()}")
    print(f"{isolation}: {' '.join(seen)}")
    print(f"  position: {consumer.position([TopicPartition(topic, 0)])[0].offset}, "
          f"watermarks: {consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=5, cached=False)}")
    consumer.close()


def main(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(10)

    plain = Producer({"bootstrap.servers": bootstrap})
    for value in ("plain-1", "plain-2"):
        plain.produce(topic, value=value)
    plain.flush(10)

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-tx"})
    producer.init_transactions(10)
    producer.begin_transaction()
    for value in ("committed-1", "committed-2", "committed-3"):
        producer.produce(topic, value=value)
    producer.commit_transaction(10)
    print("committed a transaction of 3")

    producer.begin_transaction()
    for value in ("aborted-1", "aborted-2"):
        producer.produce(topic, value=value)
    producer.flush(10)
    producer.abort_transaction(10)
    print("aborted a transaction of 2")

    plain.produce(topic, value="plain-3")
    plain.flush(10)

    read(bootstrap, topic, "read_committed")
    read(bootstrap, topic, "read_uncommitted")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

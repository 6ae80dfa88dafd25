"""seek() to the beginning, the end and an offset, and position() after each.

    seek.py <bootstrap> <topic>

Five records to one partition; a consumer with the partition assigned reads two, seeks to
OFFSET_BEGINNING, to OFFSET_END (then a sixth record is written and read), and to offset 3.
"""

import sys
import time

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def next_record(consumer):
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            return f"{msg.offset()}:{msg.value().decode()}"
    return None


def main(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(10)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(5):
        producer.produce(topic, value=f"value-{i}")
    producer.flush(10)

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-g", "enable.auto.commit": False})
    tp = TopicPartition(topic, 0)
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    print("read:", next_record(consumer), next_record(consumer))
    print("position:", consumer.position([tp])[0].offset)

    consumer.seek(TopicPartition(topic, 0, OFFSET_BEGINNING))
    print("after seek to the beginning:", next_record(consumer), "position:", consumer.position([tp])[0].offset)

    consumer.seek(TopicPartition(topic, 0, OFFSET_END))
    print("after seek to the end, nothing to read:", consumer.poll(1.0))
    producer.produce(topic, value="value-5")
    producer.flush(10)
    print("a sixth record written, read:", next_record(consumer), "position:", consumer.position([tp])[0].offset)

    consumer.seek(TopicPartition(topic, 0, 3))
    print("after seek to 3:", next_record(consumer), "position:", consumer.position([tp])[0].offset)
    consumer.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

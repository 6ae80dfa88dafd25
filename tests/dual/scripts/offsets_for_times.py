"""offsets_for_times(): the first offset at or after a timestamp.

    offsets_for_times.py <bootstrap> <topic>

Six records with create times 1000, 2000, 2000, 3000, 5000, 8000 ms (given to produce(), so
nothing depends on the clock) to one partition. Asked: before the first, on a timestamp
two records share, between two records, on the last, after the last.
"""

import sys

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

TIMESTAMPS = [1000, 2000, 2000, 3000, 5000, 8000]


def main(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(10)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, timestamp in enumerate(TIMESTAMPS):
        producer.produce(topic, value=str(i), timestamp=timestamp)
    producer.flush(10)

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-g"})
    for asked in (0, 1000, 2000, 2500, 8000, 9000):
        [found] = consumer.offsets_for_times([TopicPartition(topic, 0, asked)], timeout=10)
        print(f"at or after {asked}: offset {found.offset}, error {found.error}")
    consumer.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

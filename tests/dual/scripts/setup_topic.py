"""Set-up for the example cases: create a topic and write records to it (confluent-kafka).

    setup_topic.py <bootstrap> <topic> <partitions> <records>

Record i has key ``k<i>``, value ``value-<i>`` and goes to partition ``i % partitions``, so
both sides hold the same records at the same offsets. Prints nothing the harness compares.
"""

import sys

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic


def main(bootstrap, topic, partitions, records):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(10)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(records):
        producer.produce(topic, value=f"value-{i}", key=f"k{i}", partition=i % partitions)
    remaining = producer.flush(10)
    print(f"created {topic} with {partitions} partitions; {records - remaining} records written")
    return 0 if remaining == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))

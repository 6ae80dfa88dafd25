"""A transactional producer with its own transaction.timeout.ms (a producer setting in Kafka).

    transaction_timeout.py <bootstrap> <topic>

confluent-kafka's default is 60000 ms; an application that keeps transactions open longer,
or wants a dead producer's transaction aborted sooner, sets it. Printed: whether the producer
is built, and a committed transaction's records as read_committed sees them.
"""

import sys

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def main(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(10)
    for timeout_ms in (10000, 120000):
        try:
            producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-{timeout_ms}",
                                 "transaction.timeout.ms": timeout_ms})
        except KafkaException as err:
            print(f"transaction.timeout.ms={timeout_ms}: refused, {err.args[0].name()}")
            continue
        producer.init_transactions(10)
        producer.begin_transaction()
        producer.produce(topic, value=f"within {timeout_ms} ms")
        producer.commit_transaction(10)
        print(f"transaction.timeout.ms={timeout_ms}: committed")

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-g", "isolation.level": "read_committed",
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    values = []
    while (msg := consumer.poll(5.0)) is not None:
        if msg.error():
            break  # the end of the partition
        values.append(msg.value().decode())
    consumer.close()
    print("read_committed:", values)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

"""A transactional producer with its own transaction.timeout.ms (a producer setting in Kafka).

    transaction_timeout.py <bootstrap> <topic>

confluent-kafka's default is 60000 ms; an application that keeps transactions open longer,
or wants a dead producer's transaction aborted sooner, sets it, up to the broker's
transaction.max.timeout.ms (900000 by default: init_transactions() refuses more with
INVALID_TRANSACTION_TIMEOUT). librdkafka itself refuses, when the producer is built, a
message.timeout.ms above transaction.timeout.ms. Printed: what each producer got, and the
committed transactions' records as read_committed sees them.
"""

import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def describe(error):
    return f"{error.name()} (fatal={error.fatal()}, retriable={error.retriable()})"


def main(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(10)
    attempts = [("transaction.timeout.ms=10000", {"transaction.timeout.ms": 10000}),
                ("transaction.timeout.ms=120000", {"transaction.timeout.ms": 120000}),
                ("transaction.timeout.ms=900000", {"transaction.timeout.ms": 900000}),
                ("transaction.timeout.ms=900001", {"transaction.timeout.ms": 900001}),
                ("transaction.timeout.ms=10000 message.timeout.ms=20000",
                 {"transaction.timeout.ms": 10000, "message.timeout.ms": 20000})]
    for n, (name, settings) in enumerate(attempts):
        try:
            producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-{n}", **settings})
        except KafkaException as err:
            print(f"{name}: refused when built, {describe(err.args[0])}")
            continue
        try:
            producer.init_transactions(10)
        except KafkaException as err:
            print(f"{name}: init_transactions() refused, {describe(err.args[0])}")
            continue
        producer.begin_transaction()
        producer.produce(topic, value=f"within {settings['transaction.timeout.ms']} ms")
        producer.commit_transaction(10)
        print(f"{name}: committed")

    # Two open transactions, one of a producer with a short timeout: past it (and past Kafka's sweep
    # for timed-out transactions, transaction.abort.timed.out.transaction.cleanup.interval.ms =
    # 10 s), the short one is aborted and its producer may not commit; the long one commits.
    short = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-short",
                      "transaction.timeout.ms": 1000})
    long = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-long",
                     "transaction.timeout.ms": 60000})
    for producer, value in ((short, "short, left open"), (long, "long, left open")):
        producer.init_transactions(10)
        producer.begin_transaction()
        producer.produce(topic, value=value)
        producer.flush(10)
    time.sleep(12)
    for name, producer in (("short", short), ("long", long)):
        try:
            producer.commit_transaction(10)
            print(f"{name}: committed after 12 s")
        except KafkaException as err:
            print(f"{name}: commit after 12 s refused, {describe(err.args[0])}")

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

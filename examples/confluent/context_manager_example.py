#!/usr/bin/env python
"""AdminClient, Producer and Consumer as context managers (confluent-kafka's
examples/context_manager_example.py, written for kstream: the same command line,
a cluster path where Kafka has brokers).

    python examples/confluent/context_manager_example.py <cluster>

Leaving each ``with`` block releases the client: the producer flushes first,
the consumer leaves its group and commits its offsets.
"""

import sys

from kstream import Consumer, KafkaError, Producer
from kstream.admin import AdminClient, NewTopic

TOPIC = "context-manager-example"


def create_topic(cluster):
    print("=== AdminClient Context Manager Example ===")
    with AdminClient({"cluster": cluster}) as admin:
        for name, future in admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)]).items():
            try:
                future.result()
                print(f"Topic '{name}' created successfully")
            except Exception as err:  # an existing topic is reported, not fatal
                print(f"Failed to create topic '{name}': {err}")
        admin.poll(timeout=1.0)


def produce(cluster):
    print("\n=== Producer Context Manager Example ===")

    def report(err, msg):
        if err:
            print(f"Message failed delivery: {err}")
        else:
            print(f"Message delivered to {msg.topic()} [{msg.partition()}] @ offset {msg.offset()}")

    with Producer({"cluster": cluster}) as producer:
        for i in range(5):
            producer.produce(TOPIC, key=f"key-{i}", value=f"Message {i} from context manager example".encode(),
                             callback=report)
            producer.poll(0)
        print(f"Produced 5 messages to topic '{TOPIC}'")


def consume(cluster):
    print("\n=== Consumer Context Manager Example ===")
    conf = {"cluster": cluster, "group.id": "context-manager-example-group", "auto.offset.reset": "earliest"}
    with Consumer(conf) as consumer:
        consumer.subscribe([TOPIC])
        count = 0
        while count < 5:
            msg = consumer.poll(timeout=1.0)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                print(f"Consumer error: {msg.error()}")
                break
            print(f"Consumed message: key={msg.key().decode()}, value={msg.value().decode()}, "
                  f"partition={msg.partition()}, offset={msg.offset()}")
            count += 1


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(f"Usage: {argv[0]} <cluster>\n")
        return 1
    create_topic(argv[1])
    produce(argv[1])
    consume(argv[1])
    print("\n=== All examples completed successfully! ===")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python
"""Read, transform, write exactly once (confluent-kafka's examples/eos_transactions.py, written
for kstream: the same command line, a cluster path where Kafka has brokers).

    python examples/confluent/eos_transactions.py -b <cluster> -t <input topic> [-o <output topic>]
           [-p <input partition>] [-g <group>]

Each record of one input partition is written to the output topic with its key and value
base64-encoded. Every 100 records (and at the end of the input) the output and the
consumer's input position are committed together, in one transaction
(``send_offsets_to_transaction``): after a crash anywhere, a rerun with the same group
continues where the last commit left off and writes nothing twice. The input is assumed
to hold no duplicates. One partition per transactional producer: see KIP-447 for groups
with several members.
"""

import argparse
from base64 import b64encode
from uuid import uuid4

from kstream import Consumer, KafkaError, Producer, TopicPartition

COMMIT_EVERY = 100


def transform(msg):
    """The record's key and value, base64-encoded (None stays None)."""
    key, value = msg.key(), msg.value()
    return (None if key is None else b64encode(key)), (None if value is None else b64encode(value))


def on_delivery(err, msg):
    if err:
        print(f"Message delivery failed ({msg.topic()} [{msg.partition()}]): {err}")


def commit(producer, consumer):
    """The input position goes with the transaction: both are committed, or neither."""
    producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                         consumer.consumer_group_metadata())
    producer.commit_transaction()


def main(args):
    consumer = Consumer({
        "cluster": args.brokers,
        "group.id": args.group_id,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,  # offsets are committed by the transactions only
        "enable.partition.eof": True,
    })
    # One input partition, assigned by hand: its committed offset is where this run starts.
    consumer.assign([TopicPartition(args.input_topic, args.input_partition)])

    producer = Producer({"cluster": args.brokers, "transactional.id": "eos_transactions.py"})
    producer.init_transactions()  # fences an earlier run, finishing what it left decided
    producer.begin_transaction()

    at_end = set()
    in_transaction = 0
    print("=== Starting Consume-Transform-Process loop ===")
    while True:
        producer.poll(0)
        msg = consumer.poll(timeout=1.0)
        if msg is None:
            continue
        where = (msg.topic(), msg.partition())
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                at_end.add(where)
                print(f"=== Reached the end of {where[0]} [{where[1]}] at {msg.offset()}====")
                if len(at_end) == len(consumer.assignment()):
                    print("=== Reached end of input ===")
                    break
            continue
        at_end.discard(where)

        key, value = transform(msg)
        producer.produce(args.output_topic, value, key, on_delivery=on_delivery)
        in_transaction += 1

        if in_transaction == COMMIT_EVERY:
            print(f"=== Committing transaction with {in_transaction} messages at input offset "
                  f"{msg.offset()} ===")
            commit(producer, consumer)
            producer.begin_transaction()
            in_transaction = 0

    print(f"=== Committing final transaction with {in_transaction} messages ===")
    commit(producer, consumer)
    consumer.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Exactly Once Semantics (EOS) example")
    parser.add_argument("-b", dest="brokers", required=True, help="kstream cluster path")
    parser.add_argument("-t", dest="input_topic", required=True,
                        help="Input topic to consume from (written by some other producer)")
    parser.add_argument("-o", dest="output_topic", default="output_topic", help="Output topic")
    parser.add_argument("-p", dest="input_partition", default=0, type=int, help="Input partition to consume from")
    parser.add_argument("-g", dest="group_id", default="eos_example_" + str(uuid4()), help="Consumer group")
    main(parser.parse_args())

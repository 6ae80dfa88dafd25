"""Print every record of a topic, partition by partition (confluent-kafka).

    read_topic.py <bootstrap> <topic> [read_committed|read_uncommitted]

Reads each partition from its beginning until the end of the partition (its high
watermark, or its last stable offset under read_committed) and prints
``partition offset key value`` per record, partitions in order. Nothing to normalise.
"""

import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition


def main(bootstrap, topic, isolation="read_uncommitted"):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "isolation.level": isolation})
    partitions = sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    records, at_end, deadline = [], set(), time.monotonic() + 10
    while len(at_end) < len(partitions) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                at_end.add(msg.partition())
                continue
            raise SystemExit(f"error: {msg.error()}")
        records.append((msg.partition(), msg.offset(), msg.key(), msg.value()))
    consumer.close()
    print(f"{len(records)} records ({isolation}); partitions at their end: {sorted(at_end)}")
    for partition, offset, key, value in sorted(records):
        print(f"  {partition} {offset} {key} {value}")


if __name__ == "__main__":
    main(*sys.argv[1:])

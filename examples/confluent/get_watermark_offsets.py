#!/usr/bin/env python
"""Committed offset and lag of a group per partition (confluent-kafka's
examples/get_watermark_offsets.py, written for kstream: the same command line,
a cluster path where Kafka has brokers).

    python examples/confluent/get_watermark_offsets.py <cluster> <group.id> <topic> [<topic2> ...]

The consumer does not join the group: group.id only says whose offsets committed() reads.
"""

import sys

import kstream


def main(argv):
    if len(argv) < 4:
        sys.stderr.write(f"Usage: {argv[0]} <cluster> <group.id> <topic> <topic2..>\n")
        return 1
    cluster, group = argv[1:3]
    consumer = kstream.Consumer({"cluster": cluster, "group.id": group})
    print(f"{'Topic [Partition]':<50}  {'Committed':>9}  {'Lag':>9}")
    print("=" * 72)
    for topic in argv[3:]:
        metadata = consumer.list_topics(topic, timeout=10)
        if metadata.topics[topic].error is not None:
            raise kstream.KafkaException(metadata.topics[topic].error)
        partitions = [kstream.TopicPartition(topic, p) for p in metadata.topics[topic].partitions]
        for tp in consumer.committed(partitions, timeout=10):
            low, high = consumer.get_watermark_offsets(tp, timeout=10, cached=False)
            committed = "-" if tp.offset == kstream.OFFSET_INVALID else str(tp.offset)
            if high < 0:
                lag = "no hwmark"
            elif tp.offset < 0:
                lag = str(high - low)  # nothing committed: everything is lag
            else:
                lag = str(high - tp.offset)
            print(f"{f'{tp.topic} [{tp.partition}]':<50}  {committed:>9}  {lag:>9}")
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

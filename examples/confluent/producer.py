#!/usr/bin/env python
"""Send each line of stdin as a record to a topic (confluent-kafka's examples/producer.py,
written for kstream: the same command line, a cluster path where Kafka has brokers).

    python examples/confluent/producer.py <cluster> <topic> < lines.txt

Delivery reports go to stderr; ported code changes only the import and
``bootstrap.servers`` -> ``cluster``.
"""

import sys

from kstream import Producer


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(f"Usage: {argv[0]} <cluster> <topic>\n")
        return 1
    cluster, topic = argv[1], argv[2]
    conf = {"cluster": cluster}
    producer = Producer(**conf)

    def report(err, msg):
        if err is not None:
            sys.stderr.write(f"%% Message failed delivery: {err}\n")
        else:
            sys.stderr.write(f"%% Message delivered to {msg.topic()} [{msg.partition()}] @ {msg.offset()}\n")

    for line in sys.stdin:
        try:
            producer.produce(topic, line.rstrip("\n"), callback=report)
        except BufferError:
            sys.stderr.write(f"%% Local producer queue is full ({len(producer)} messages awaiting "
                             "delivery): try again\n")
        producer.poll(0)  # serve the reports of batches already sent

    sys.stderr.write(f"%% Waiting for {len(producer)} deliveries\n")
    producer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

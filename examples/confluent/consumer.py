#!/usr/bin/env python
"""A consumer group member printing what it reads (confluent-kafka's examples/consumer.py,
written for kstream: the same command line, a cluster path where Kafka has brokers).

    python examples/confluent/consumer.py [-T <interval ms>] <cluster> <group> <topic1> [<topic2> ...]

Values go to stdout, positions and EOF events to stderr, statistics (-T) as
JSON to stdout. Runs until Ctrl-C, then closes (committing its offsets).
"""

import getopt
import json
import logging
import sys
from pprint import pformat

from kstream import Consumer, KafkaError, KafkaException


def print_stats(stats_json):
    print(f"\nKAFKA Stats: {pformat(json.loads(stats_json))}\n")


def usage(program):
    sys.stderr.write(f"Usage: {program} [options..] <cluster> <group> <topic1> <topic2> ..\n"
                     "\n Options:\n  -T <intvl>   Enable client statistics at specified interval (ms)\n")
    sys.exit(1)


def main(argv):
    options, args = getopt.getopt(argv[1:], "T:")
    if len(args) < 3:
        usage(argv[0])
    cluster, group, topics = args[0], args[1], args[2:]
    conf = {"cluster": cluster, "group.id": group, "session.timeout.ms": 6000,
            "default.topic.config": {"auto.offset.reset": "smallest"}}
    for name, value in options:
        try:
            interval = int(value)
        except ValueError:
            sys.stderr.write(f"Invalid option value for {name}: {value}\n")
            sys.exit(1)
        if interval <= 0:
            sys.stderr.write(f"{name} option value needs to be larger than zero: {value}\n")
            sys.exit(1)
        conf["stats_cb"] = print_stats
        conf["statistics.interval.ms"] = interval

    logger = logging.getLogger("consumer")
    logger.setLevel(logging.DEBUG)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)-15s %(levelname)-8s %(message)s"))
    logger.addHandler(handler)

    consumer = Consumer(conf, logger=logger)
    consumer.subscribe(topics, on_assign=lambda c, partitions: print("Assignment:", partitions, flush=True))
    try:
        while True:
            msg = consumer.poll(timeout=1.0)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    sys.stderr.write(f"%% {msg.topic()} [{msg.partition()}] reached end at offset "
                                     f"{msg.offset()}\n")
                    continue
                raise KafkaException(msg.error())
            sys.stderr.write(f"%% {msg.topic()} [{msg.partition()}] at offset {msg.offset()} "
                             f"with key {msg.key()!s}:\n")
            print(msg.value(), flush=True)
    except KeyboardInterrupt:
        sys.stderr.write("%% Aborted by user\n")
    finally:
        consumer.close()  # commits the final offsets


if __name__ == "__main__":
    main(sys.argv)

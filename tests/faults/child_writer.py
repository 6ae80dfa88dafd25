"""A producer run as a child process by the fault tests.

Modes:
  batches CLUSTER TOPIC WRITER_ID COUNT   append COUNT batches, each a run of values
                                           "WRITER_ID:BATCH:I" (i = 0..k-1) to partition 0/1
  acked CLUSTER TOPIC                      produce forever with acks=all; print the value of
                                           each record once its delivery report says delivered
"""

from __future__ import annotations

import random
import sys

import pyarrow as pa

from kstream import Producer


def batches(cluster: str, topic: str, writer: str, count: int) -> None:
    rng = random.Random(writer)
    with Producer({"cluster": cluster, "acks": "1"}) as producer:
        for b in range(count):
            size = rng.randint(1, 50)
            values = [f"{writer}:{b}:{i}:{size}".encode() for i in range(size)]
            producer.produce_batch(topic, pa.table({"value": values}), partition=b % 2)


def acked(cluster: str, topic: str) -> None:
    out = sys.stdout

    def report(err, msg):
        if err is None:
            out.write(f"{msg.value().decode()} {msg.partition()} {msg.offset()}\n")

    producer = Producer({"cluster": cluster, "acks": "all", "linger.ms": 1, "batch.size": 2000})
    i = 0
    while True:
        producer.produce(topic, f"r{i}".encode() + b"." * (i % 97), on_delivery=report)
        i += 1
        if i % 17 == 0:
            producer.poll(0)
            out.flush()


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "batches":
        batches(args[0], args[1], args[2], int(args[3]))
    elif mode == "acked":
        acked(args[0], args[1])
    else:
        raise SystemExit(f"unknown mode {mode}")

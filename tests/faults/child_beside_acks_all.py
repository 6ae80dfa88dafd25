"""A writer beside an acks=all frame whose fsync is still running, run as a child process by
tests/faults/test_hw_beside_acks_all.py: it writes, prints "W", and waits for its SIGKILL
(a clean close would fsync everything and hide what a power cut can take).

  sink CLUSTER TOPIC     a Spark sink task's write (kstream.sink.writer.write_task's producer)
  acks1 CLUSTER TOPIC    an acks=1 producer's record
"""

from __future__ import annotations

import sys

import pyarrow as pa

from kstream import Producer
from kstream.log.transactions.sink import SinkStore, SinkTaskWriter
from kstream.sink.writer import SinkOptions, sink_producer


def main(mode: str, cluster: str, topic: str) -> None:
    if mode == "sink":
        producer = sink_producer(SinkOptions.from_options({"cluster": cluster, "topic": topic}))
        producer.bind_sink_transaction(SinkTaskWriter(SinkStore(producer.cluster), "query:test"))
        producer.produce_batch(topic, pa.table({"value": [b"sink"]}), partition=0)
    else:
        producer = Producer({"cluster": cluster, "acks": "1", "linger.ms": 0})
        producer.produce(topic, b"acks-1", partition=0)
    producer.flush()
    print("W", flush=True)
    sys.stdin.read()  # until killed


if __name__ == "__main__":
    main(*sys.argv[1:4])

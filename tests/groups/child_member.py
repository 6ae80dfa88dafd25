"""A group member run as a child process by the membership tests.

  child_member.py CLUSTER GROUP TOPIC OUT_FILE NAME

Consumes in batches with commit-after-process: each batch's records are
written to OUT_FILE ("generation partition offset value" per line) and
flushed, then the batch's offsets are committed synchronously. Runs until
killed (SIGKILL) or terminated (SIGTERM: leaves the group cleanly).
"""

from __future__ import annotations

import signal
import sys
import time

from kstream import Consumer
from kstream.errors import FencedError


def main(cluster: str, group: str, topic: str, out_path: str, name: str) -> None:
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    consumer = Consumer({"cluster": cluster, "group.id": group, "client.id": name,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "heartbeat.interval.ms": 100, "session.timeout.ms": 1500,
                         "max.poll.interval.ms": 10_000, "fetch.wait.max.ms": 20})
    consumer.subscribe([topic])
    with open(out_path, "a") as out:
        while not stop:
            messages = [m for m in consumer.consume(10, 0.2) if m.error() is None]
            if not messages:
                continue
            generation = consumer.consumer_group_metadata().generation
            for m in messages:
                out.write(f"{generation} {m.partition()} {m.offset()} {m.value().decode()}\n")
            out.flush()
            time.sleep(0.01)  # "processing"
            try:
                consumer.commit(asynchronous=False)
            except FencedError:
                pass  # the group moved on: the next poll revokes and rejoins
    consumer.close()


if __name__ == "__main__":
    main(*sys.argv[1:6])

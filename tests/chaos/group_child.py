"""Child processes of the group and exactly-once rounds (:mod:`chaos.group_rounds`).

  member CLUSTER GROUP TOPIC OUT NAME PAUSE_FLAG SESSION_MS
      A group member consuming with commit-after-process. Appends to OUT, flushed:
      "R member_id partition offset value" per record handed out, then the batch is
      committed: "C member_id generation" on success, "F member_id error" when fenced.
      Once the file PAUSE_FLAG exists, the next write to the group offsets table (in the
      middle of a commit) first appends "paused" and stops the process (SIGSTOP); after
      SIGCONT "resumed". SIGTERM: leaves the group, appends "EXIT", exits 0.
  sink CLUSTER SINK_ID TOPIC ROWS PAUSE_AT
      One Spark task attempt of the exactly-once sink, driven as sink/writer.py's
      write_task does: ROWS is a JSON file of [value, partition]; each row is appended
      alone (produce, flush). Prints "S producer_id" once its writer exists; before row
      PAUSE_AT (-1: never) prints "P" and waits for a line on stdin (not a signal: one
      may land on the producer's thread and leave the main thread asleep); "F i error" when an
      append is fenced (and stops); "D producer_id partitions records" when done.
  commit CLUSTER SINK_ID BATCH WRITES
      A driver's commit of a micro-batch: prints "R" when ready, commits on a line on
      stdin, then prints "C True|False" (or "F error").
"""

from __future__ import annotations

import json
import os
import signal
import sys


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def member(cluster: str, group: str, topic: str, out_path: str, name: str, pause_flag: str,
           session_ms: str) -> None:
    from kstream import Consumer
    from kstream.errors import FencedError
    from kstream.groups.offsets_table import OffsetsTable

    out = open(out_path, "a", buffering=1)
    stop: list[int] = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    real_write = OffsetsTable.write
    paused: list[int] = []

    def write(self, *args, **kwargs):
        if not paused and os.path.exists(pause_flag):
            paused.append(1)
            out.write("paused\n")
            os.kill(os.getpid(), signal.SIGSTOP)
            out.write("resumed\n")
        return real_write(self, *args, **kwargs)

    OffsetsTable.write = write  # type: ignore[method-assign]
    consumer = Consumer({"cluster": cluster, "group.id": group, "client.id": name,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "heartbeat.interval.ms": 100, "session.timeout.ms": int(session_ms),
                         "max.poll.interval.ms": 10_000, "fetch.wait.max.ms": 20})
    consumer.subscribe([topic])
    while not stop:
        messages = [m for m in consumer.consume(10, 0.1) if m.error() is None]
        if not messages:
            continue
        membership = consumer.consumer_group_metadata()
        member_id, generation = membership.member_id, membership.generation
        for m in messages:
            out.write(f"R {member_id} {m.partition()} {m.offset()} {m.value().decode()}\n")
        try:
            consumer.commit(asynchronous=False)
            out.write(f"C {member_id} {generation}\n")
        except FencedError as err:
            out.write(f"F {member_id} {str(err)[:100]}\n")
    consumer.close()
    out.write("EXIT\n")


def sink(cluster: str, sink_id: str, topic: str, rows_path: str, pause_at: str) -> None:
    from kstream import Producer
    from kstream.errors import FencedError
    from kstream.log.transactions.expiry import try_expire
    from kstream.log.transactions.sink import SinkStore, SinkTaskWriter

    with open(rows_path) as f:
        rows = json.load(f)
    producer = Producer({"cluster": cluster, "acks": "1", "enable.idempotence": False, "linger.ms": 0})
    store = SinkStore(producer.cluster)
    try_expire(store.transactions)  # as write_task does
    writer = SinkTaskWriter(store, sink_id)
    producer.bind_sink_transaction(writer)
    _say(f"S {writer.producer_id}")
    for i, (value, partition) in enumerate(rows):
        if i == int(pause_at):
            _say("P")
            sys.stdin.readline()
        try:
            producer.produce(topic, value.encode(), partition=partition)
            producer.flush()
        except FencedError as err:
            _say(f"F {i} {str(err)[:150]}")
            producer.close()
            return
    producer.close()
    _say(f"D {writer.producer_id} {json.dumps(sorted(writer.partitions), separators=(',', ':'))} {len(rows)}")


def commit(cluster: str, sink_id: str, batch: str, writes: str) -> None:
    from kstream.errors import FencedError
    from kstream.log.cluster.cluster import Cluster
    from kstream.log.transactions.sink import SinkStore, TaskWrites

    opened = Cluster.open(cluster)
    task_writes = [TaskWrites(w[0], tuple(tuple(p) for p in w[1]), w[2]) for w in json.loads(writes)]
    _say("R")
    sys.stdin.readline()
    try:
        _say(f"C {SinkStore(opened).commit(sink_id, int(batch), task_writes)}")
    except FencedError as err:
        _say(f"F {str(err)[:150]}")
    opened.close()


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    {"member": member, "sink": sink, "commit": commit}[mode](*args)

"""A consume-transform-produce pipeline, exactly once (run as a child process by test_eos_offsets).

    python eos_pipeline.py CLUSTER GROUP TRANSACTIONAL_ID BATCH [subscribe]

Reads topic "in" partition 0 (assigned, or with "subscribe" as a member of GROUP with a
1 s session timeout) from the group's committed offset, writes b"out-" + value to
"out" partition 0, and commits every BATCH records' output and input offsets in one
transaction (send_offsets_to_transaction). Stops at the end of "in". Set KSTREAM_CRASH_AT
to SIGKILL it at a step of a commit (kstream.log.storage.faults.crash_point).
"""

from __future__ import annotations

import os
import sys

from kstream import Consumer, Producer, TopicPartition


def run(cluster: str, group: str, transactional_id: str, batch: int, subscribe: bool = False) -> int:
    consumer = Consumer({"cluster": cluster, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "session.timeout.ms": 1000, "heartbeat.interval.ms": 50})
    if subscribe:
        consumer.subscribe(["in"])
    else:
        consumer.assign([TopicPartition("in", 0)])
    timeout_ms = int(os.environ.get("EOS_TRANSACTION_TIMEOUT_MS", "60000"))  # the test's choice
    producer = Producer({"cluster": cluster, "transactional.id": transactional_id, "linger.ms": 0,
                         "transaction.timeout.ms": timeout_ms})
    producer.init_transactions()
    producer.begin_transaction()
    done = pending = 0
    try:
        for _ in range(100_000):  # a bound: the inputs are far fewer
            message = consumer.poll(30.0)
            if message is None:
                raise SystemExit("no record and no end of partition within 30 s")
            if message.error():
                break  # the end of "in"
            producer.produce("out", b"out-" + message.value(), partition=0)
            done += 1
            pending += 1
            if pending == batch:
                producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                     consumer.consumer_group_metadata())
                producer.commit_transaction()
                producer.begin_transaction()
                pending = 0
        producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                             consumer.consumer_group_metadata())
        producer.commit_transaction()
    finally:
        consumer.close()
        producer.close()
    return done


if __name__ == "__main__":
    print(run(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:] == ["subscribe"]))

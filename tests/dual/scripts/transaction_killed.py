"""A producer killed in the middle of a transaction: read_committed never sees its records.

    transaction_killed.py <bootstrap> <topic>

A child process (this script with ``child``) opens a transaction, writes 3 records, flushes
them and says so; the parent SIGKILLs it. While the transaction hangs, a read_committed
consumer sees only what was committed before it. Then a new producer with the same
transactional.id calls init_transactions(), which fences the dead one and aborts its
transaction; it commits 2 records of its own. read_committed sees the records committed
before and after, none of the dead producer's; read_uncommitted sees them too.
"""

import os
import signal
import subprocess
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def transactional(bootstrap, topic):
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-tx"})
    producer.init_transactions(10)
    return producer


def child(bootstrap, topic):
    producer = transactional(bootstrap, topic)
    producer.begin_transaction()
    for value in ("doomed-1", "doomed-2", "doomed-3"):
        producer.produce(topic, value=value)
    producer.flush(10)
    print("written, not committed", flush=True)
    time.sleep(60)


def read(bootstrap, topic, isolation):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-{isolation}",
                         "isolation.level": isolation, "enable.partition.eof": True,
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    seen, deadline = [], time.monotonic() + 10
    while time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                break
            continue
        seen.append(msg.value().decode())
    consumer.close()
    print(f"  {isolation}: {seen}")


def main(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(10)

    first = transactional(bootstrap, topic)
    first.begin_transaction()
    first.produce(topic, value="before")
    first.commit_transaction(10)
    first.close()

    doomed = subprocess.Popen([sys.executable, __file__, bootstrap, topic, "child"], stdout=subprocess.PIPE,
                              text=True)
    print("child:", doomed.stdout.readline().strip())
    os.kill(doomed.pid, signal.SIGKILL)
    print("child killed:", doomed.wait() == -signal.SIGKILL)

    print("while its transaction hangs:")
    read(bootstrap, topic, "read_committed")

    after = transactional(bootstrap, topic)  # fences the dead producer, aborting its transaction
    after.begin_transaction()
    for value in ("after-1", "after-2"):
        after.produce(topic, value=value)
    after.commit_transaction(10)
    print("after a new producer with its transactional.id committed:")
    read(bootstrap, topic, "read_committed")
    read(bootstrap, topic, "read_uncommitted")


if __name__ == "__main__":
    if sys.argv[3:] == ["child"]:
        child(sys.argv[1], sys.argv[2])
    else:
        main(sys.argv[1], sys.argv[2])

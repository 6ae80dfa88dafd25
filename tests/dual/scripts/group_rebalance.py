"""A consumer group's join, rebalance and leave, through on_assign / on_revoke.

    group_rebalance.py <bootstrap> <topic>

A topic of 4 partitions; consumer A joins the group alone, B joins, then B leaves (close()).
Each callback prints who got it and the partitions (sorted). The classic eager protocol
(librdkafka's default ``range,roundrobin``): on every rebalance each member is revoked
all it had, then assigned its new share. Both consumers are polled from one thread until
the group settles, so the printed order is the order the callbacks ran in.
"""

import sys
import time

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 4


def shown(partitions):
    """All or none by list; a share by its size and shape (which half a member gets depends on
    the order of the member ids, which are random)."""
    numbers = sorted(p.partition for p in partitions)
    if len(numbers) in (0, PARTITIONS):
        return str(numbers)
    contiguous = numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    return f"{len(numbers)} partitions{' (contiguous)' if contiguous else ''}"


def member(bootstrap, topic, name, events, owned):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-g",
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 100,
                         "auto.offset.reset": "earliest"})

    def on_assign(c, partitions):
        owned[name] = sorted(p.partition for p in partitions)
        events.append(f"{name} assigned {shown(partitions)}")

    def on_revoke(c, partitions):
        events.append(f"{name} revoked {shown(partitions)}")
        owned[name] = []

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    return consumer


def settle(consumers, owned, want, events):
    """Poll every member until the owned partitions are ``want`` (a dict name -> count)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for consumer in consumers:
            consumer.poll(0.05)
        counts = {name: len(owned.get(name, [])) for name in want}
        if counts == want and sorted(p for n in want for p in owned[n]) == list(range(PARTITIONS)):
            return
    events.append(f"did not settle: owned {owned}")


def main(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])[topic].result(10)
    events, owned = [], {}

    a = member(bootstrap, topic, "A", events, owned)
    settle([a], owned, {"A": 4}, events)
    print("A alone:", events)
    events.clear()

    b = member(bootstrap, topic, "B", events, owned)
    settle([a, b], owned, {"A": 2, "B": 2}, events)
    print("B joins:")
    for name in ("A", "B"):
        print(f"  {name}: {[e for e in events if e.startswith(name)]}")
    print("  shares disjoint, covering the topic:", sorted(owned["A"] + owned["B"]) == list(range(PARTITIONS)))
    events.clear()

    b.close()
    print("B leaves, in close():", events)
    events.clear()
    settle([a], owned, {"A": 4}, events)
    print("then A:", events)
    events.clear()
    a.close()
    print("A leaves, in close():", events)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

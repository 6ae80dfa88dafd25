"""A group member run as a child process, to be killed or stopped by the test.

  child_idle_member.py CLUSTER GROUP TOPIC STATUS_FILE KIND SESSION_TIMEOUT_MS

KIND ``consumer``: a Consumer subscribed to TOPIC (heartbeats every 100 ms) that reads
what is there, commits it, writes "ready" to STATUS_FILE and keeps polling. KIND ``spark``:
what a Spark query with ``group.id`` does on its driver (claims the group, commits its
offsets), without Spark; then it sleeps. Runs until killed (SIGKILL) or terminated (SIGTERM:
a consumer leaves the group cleanly).
"""

from __future__ import annotations

import signal
import sys
import time

from kstream import Consumer
from kstream.groups import ConsumerGroups
from kstream.log.cluster.cluster import Cluster


def ready(status_path: str) -> None:
    with open(status_path, "a") as f:
        f.write("ready\n")


def consumer(cluster: str, group: str, topic: str, status_path: str, session_timeout_ms: int) -> None:
    stop: list[int] = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    member = Consumer({"cluster": cluster, "group.id": group, "client.id": "idle",
                       "enable.auto.commit": False, "auto.offset.reset": "earliest",
                       "heartbeat.interval.ms": 100, "session.timeout.ms": session_timeout_ms,
                       "fetch.wait.max.ms": 20})
    member.subscribe([topic])
    said = False
    while not stop:
        messages = [m for m in member.consume(10, 0.1) if m.error() is None]
        if messages:
            member.commit(asynchronous=False)
        if not said and member.assignment() and not messages:
            said = True
            ready(status_path)
    member.close()


def spark(cluster: str, group: str, topic: str, status_path: str) -> None:
    groups = ConsumerGroups(Cluster.open(cluster))
    member_id, generation = groups.coordinator.claim(group, "spark-query")
    end = groups.ends(topic, 0)[2]
    groups.commit(group, {(topic, 0): end}, member_id=member_id, generation=generation)
    ready(status_path)
    while True:
        time.sleep(1)


if __name__ == "__main__":
    cluster_arg, group_arg, topic_arg, status_arg, kind, timeout_arg = sys.argv[1:7]
    if kind == "spark":
        spark(cluster_arg, group_arg, topic_arg, status_arg)
    else:
        consumer(cluster_arg, group_arg, topic_arg, status_arg, int(timeout_arg))

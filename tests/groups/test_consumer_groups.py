"""The Python Consumer in a group, in one process: subscribe, rebalance, commit, committed, auto
commit, expiry of a silent member, fencing of a zombie, records-lag."""

from __future__ import annotations

import time

import pytest

from kstream import Consumer, Producer
from kstream.errors import ConfigError, FencedError, TopicNotFoundError
from kstream.message import OFFSET_INVALID, TopicPartition


@pytest.fixture
def topic(cluster_path, make_topic):
    make_topic("events", partitions=4)
    with Producer({"cluster": cluster_path, "acks": "1"}) as producer:
        for p in range(4):
            for i in range(5):
                producer.produce("events", f"{p}:{i}".encode(), partition=p)
        producer.flush()
    return "events"


def consumer(cluster_path, **extra):
    config = {"cluster": cluster_path, "group.id": "g", "auto.offset.reset": "earliest",
              "enable.auto.commit": False, "heartbeat.interval.ms": 50, "session.timeout.ms": 2000,
              "max.poll.interval.ms": 5000, "fetch.wait.max.ms": 10}
    return Consumer({**config, **extra})


def owned(c):
    return {(tp.topic, tp.partition) for tp in c.assignment()}


def poll_until(consumers, condition, timeout=15.0):
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        for c in consumers:
            m = c.poll(0.02)
            if m is not None and m.error() is None:
                seen.append((c, m))
            sets = [owned(x) for x in consumers]
            assert all(not (a & b) for i, a in enumerate(sets) for b in sets[i + 1:]), "two owners"
        if condition():
            return seen
    raise AssertionError("condition not reached")


def test_subscribe_commit_and_resume(cluster_path, topic):
    assigned, revoked = [], []
    c = consumer(cluster_path)
    c.subscribe([topic], on_assign=lambda _, ps: assigned.append(sorted(ps)),
                on_revoke=lambda _, ps: revoked.append(sorted(ps)))
    got = []
    while len(got) < 20:
        m = c.poll(5)
        assert m is not None
        got.append(m)
    assert assigned == [[TopicPartition(topic, p) for p in range(4)]]
    last = max((m for m in got if m.partition() == 2), key=lambda m: m.offset())
    committed = c.commit(message=last, asynchronous=False)
    # (TopicPartition equality ignores the offset, as confluent-kafka's does: compare it too)
    assert [(tp.topic, tp.partition, tp.offset) for tp in committed] == [(topic, 2, 5)]
    c.commit(asynchronous=False)  # every position
    assert [tp.offset for tp in c.committed([TopicPartition(topic, p) for p in range(4)])] == [5] * 4
    c.close()
    assert revoked == [[TopicPartition(topic, p) for p in range(4)]]

    with Producer({"cluster": cluster_path}) as producer:
        producer.produce(topic, b"new", partition=1)
    c2 = consumer(cluster_path)
    c2.subscribe([topic])
    m = c2.poll(10)
    assert (m.partition(), m.offset(), m.value()) == (1, 5, b"new")
    c2.close()


def test_rebalance_on_join_and_leave_never_two_owners(cluster_path, topic):
    a, b = consumer(cluster_path, **{"client.id": "a"}), consumer(cluster_path, **{"client.id": "b"})
    a.subscribe([topic])
    poll_until([a], lambda: len(owned(a)) == 4)
    b.subscribe([topic])
    poll_until([a, b], lambda: len(owned(a)) == 2 and len(owned(b)) == 2)
    assert owned(a) | owned(b) == {(topic, p) for p in range(4)}
    b.close()  # leave: a gets everything back
    poll_until([a], lambda: len(owned(a)) == 4)
    a.close()


def test_silent_member_expires_and_its_commits_are_fenced(cluster_path, topic):
    a = consumer(cluster_path, **{"session.timeout.ms": 400})
    zombie = consumer(cluster_path, **{"session.timeout.ms": 400})
    a.subscribe([topic])
    zombie.subscribe([topic])
    poll_until([a, zombie], lambda: len(owned(a)) == 2 and len(owned(zombie)) == 2)
    zombie._group._membership._stop.set()  # the zombie's heartbeats stop (a long GC pause, say)
    zombie._group._membership._thread.join()
    poll_until([a], lambda: len(owned(a)) == 4)
    with pytest.raises(FencedError):
        zombie.commit(asynchronous=False)
    a.close()
    zombie._group._membership = None  # it was expired; nothing to leave
    zombie.close()


def test_auto_commit_and_async_commit_callback(cluster_path, topic):
    results = []
    c = consumer(cluster_path, **{"enable.auto.commit": True, "auto.commit.interval.ms": 0,
                                  "on_commit": lambda err, ps: results.append((err, ps))})
    c.subscribe([topic])
    got = [c.poll(5) for _ in range(20)]
    assert all(m is not None for m in got)
    c.poll(0.1)  # auto commit runs in poll (between fetched batches)
    committed = {tp.partition: tp.offset for tp in c.committed([TopicPartition(topic, p) for p in range(4)])}
    assert committed == {p: 5 for p in range(4)}
    assert c.commit(asynchronous=True) is None
    deadline = time.monotonic() + 10
    while not results and time.monotonic() < deadline:
        c.poll(0.05)
    assert results and results[0][0] is None
    c.close()


def test_records_lag_and_committed_without_commits(cluster_path, topic):
    c = consumer(cluster_path, **{"max.partition.fetch.bytes": 1})
    c.assign([TopicPartition(topic, 0, 0)])
    assert c.committed([TopicPartition(topic, 0)])[0].offset == OFFSET_INVALID
    m = c.poll(5)
    assert m.offset() == 0
    lag = c.records_lag()[TopicPartition(topic, 0)]
    assert lag["records-lag-max"] >= lag["records-lag"] >= 0 and lag["records-lag-max"] <= 5
    c.close()


def test_group_calls_need_group_id_and_known_topics(cluster_path, topic):
    with Consumer({"cluster": cluster_path}) as c, pytest.raises(ConfigError, match="group.id"):
        c.subscribe([topic])
    c = consumer(cluster_path)
    with pytest.raises(TopicNotFoundError, match="events"):
        c.subscribe(["nope"])
    c.close()


def test_static_member_comes_back_without_a_rebalance(cluster_path, topic):
    revoked = []
    a = consumer(cluster_path, **{"group.instance.id": "host-a", "client.id": "a"})
    b = consumer(cluster_path, **{"group.instance.id": "host-b", "client.id": "b"})
    a.subscribe([topic])
    b.subscribe([topic], on_revoke=lambda _, ps: revoked.append(ps))
    poll_until([a, b], lambda: len(owned(a)) == 2 and len(owned(b)) == 2)
    revoked.clear()
    a_partitions, generation = owned(a), b.consumer_group_metadata().generation
    a.close()  # a static member does not leave: its slot waits for it
    again = consumer(cluster_path, **{"group.instance.id": "host-a", "client.id": "a"})
    again.subscribe([topic])
    poll_until([again, b], lambda: owned(again) == a_partitions)
    assert b.consumer_group_metadata().generation == generation and owned(b) and not revoked
    again.close()
    b.close()

"""GroupSession drives its consumer only through the GroupMember it is handed: a member that is not
a Consumer (a recording stand-in) gets its partitions, its commits and its revocation."""

from __future__ import annotations

import time

from kstream import Producer
from kstream.client.config import client_options
from kstream.client.consumer_group import GroupMember, GroupSession
from kstream.config.options import CONSUMER_OPTIONS
from kstream.log.cluster.cluster import Cluster
from kstream.message import OFFSET_INVALID, TopicPartition


class RecordingMember:
    """Holds an assignment as a Consumer would, and records what the session asked of it."""

    def __init__(self):
        self.partitions: list[TopicPartition] = []
        self.calls: list[str] = []

    def assignment(self):
        return [TopicPartition(tp.topic, tp.partition) for tp in self.partitions]

    def take(self, partitions):
        self.calls.append("take")
        self.partitions += partitions

    def give_up(self):
        self.calls.append("give_up")
        self.partitions = []

    def offsets_to_commit(self):
        return [TopicPartition(tp.topic, tp.partition, 7) for tp in self.partitions]


def test_a_session_assigns_commits_and_revokes_through_its_member(cluster_path, make_topic):
    make_topic("t", partitions=2)
    with Producer({"cluster": cluster_path, "acks": "1"}) as producer:
        for i in range(20):
            producer.produce("t", b"v", partition=i % 2)
        producer.flush()
    options, broker = client_options(CONSUMER_OPTIONS, {
        "cluster": cluster_path, "group.id": "g", "enable.auto.commit": True, "heartbeat.interval.ms": 50,
        "session.timeout.ms": 2000}, {}, "a Consumer")
    cluster = Cluster.open(cluster_path, broker)
    recorder = RecordingMember()
    owner = object()  # what the rebalance callbacks are handed (the Consumer, in real use)
    member = GroupMember(owner, recorder.assignment, recorder.take, recorder.give_up,
                         recorder.offsets_to_commit)
    assigned, revoked = [], []
    session = GroupSession(cluster, member, options, on_commit=None)
    try:
        session.subscribe(["t"], on_assign=lambda who, ps: assigned.append((who, sorted(ps))),
                          on_revoke=lambda who, ps: revoked.append((who, sorted(ps))), on_lost=None)
        deadline = time.monotonic() + 15
        while not recorder.partitions and time.monotonic() < deadline:
            session.maintain()
            time.sleep(0.02)
        # nothing committed yet: each partition starts at OFFSET_INVALID (auto.offset.reset)
        assert sorted(recorder.partitions) == [TopicPartition("t", 0, OFFSET_INVALID),
                                               TopicPartition("t", 1, OFFSET_INVALID)]
        assert [o.offset for o in recorder.partitions] == [OFFSET_INVALID, OFFSET_INVALID]
        assert assigned == [(owner, [TopicPartition("t", 0), TopicPartition("t", 1)])]
        session.unsubscribe()  # auto commit first, then revoke
        assert recorder.calls[-1] == "give_up" and recorder.partitions == []
        assert revoked == [(owner, [TopicPartition("t", 0), TopicPartition("t", 1)])]
        assert [tp.offset for tp in session.committed([TopicPartition("t", 0), TopicPartition("t", 1)])] == [7, 7]
    finally:
        session.close()
        cluster.close()

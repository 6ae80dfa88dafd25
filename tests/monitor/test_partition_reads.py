"""PartitionReads against oracles: LogReader's own log ends and each record's timestamp as
produced; the shared-reads evaluation of every group against one group_lag per group."""

import time

import pytest

from kstream.groups import ConsumerGroups
from kstream.log.cluster import Cluster
from kstream.log.log_reader import LogReader
from kstream.monitor import partition_reads
from kstream.monitor.lag import all_groups_lag, group_lag, groups_summary
from kstream.monitor.partition_reads import PartitionReads
from kstream.producer import Producer

T0 = int(time.time() * 1000) - 3600_000  # recent: retention (7 days) deletes nothing here
BATCHES = (3, 1, 5)  # records per produce_batch call: frames of different sizes


@pytest.fixture
def cluster(cluster_path, make_topic):
    """a: 3 partitions, each written as frames of 3, 1 and 5 records (timestamp T0 + partition
    * 100 s + offset s); b: 1 partition, 4 records; empty: 2 partitions, nothing written."""
    import pyarrow as pa

    make_topic("a", 3)
    make_topic("b", 1)
    make_topic("empty", 2)
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for p in range(3):
            offset = 0
            for size in BATCHES:
                stamps = [T0 + p * 100_000 + (offset + i) * 1000 for i in range(size)]
                producer.produce_batch("a", pa.table({"value": [b"v"] * size, "timestamp": stamps}),
                                       partition=p)
                offset += size
        for i in range(4):
            producer.produce("b", b"w", timestamp=T0 + i)
    return cluster_path


def expected_ends(cluster, topic, partition):
    info = cluster.topic(topic)
    placement = info.partitions[partition]
    reader = LogReader(cluster.replica_dirs(info, placement)[placement.leader])
    try:
        return reader.log_start_offset(), reader.log_end_offset()
    finally:
        reader.close()


@pytest.mark.parametrize("max_open", [1, 64])
def test_offsets_and_timestamps_match_the_log(cluster, monkeypatch, max_open):
    monkeypatch.setattr(partition_reads, "MAX_OPEN_READERS", max_open)  # 1: every switch re-opens
    opened = Cluster.open(cluster)
    try:
        with PartitionReads(opened) as reads:
            for _ in range(2):  # the second pass answers from what the first one read
                for topic, partition in [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("empty", 1)]:
                    assert reads.offsets(topic, partition) == expected_ends(opened, topic, partition)
                for p in range(3):
                    for offset in (8, 0, 3, 4, 5, 2, 7):  # out of order, inside and across frames
                        assert reads.timestamp("a", p, offset) == T0 + p * 100_000 + offset * 1000
                    assert reads.timestamp("a", p, 9) is None  # the log end: no record
                    assert reads.timestamp("a", p, 50) is None
                assert [reads.timestamp("b", 0, o) for o in range(4)] == [T0, T0 + 1, T0 + 2, T0 + 3]
                assert reads.timestamp("empty", 0, 0) is None
            assert len(reads._readers) <= max_open
    finally:
        opened.close()


def test_snapshot_does_not_see_later_records_and_a_new_one_does(cluster):
    opened = Cluster.open(cluster)
    try:
        with PartitionReads(opened) as reads:
            assert reads.offsets("b", 0) == expected_ends(opened, "b", 0) == (0, 4)
            with Producer({"cluster": cluster}) as producer:
                producer.produce("b", b"late", timestamp=T0 + 99)
            assert reads.offsets("b", 0) == (0, 4)  # one evaluation, one snapshot
        with PartitionReads(opened) as fresh:
            assert fresh.offsets("b", 0) == expected_ends(opened, "b", 0) == (0, 5)
            assert fresh.timestamp("b", 0, 4) == T0 + 99
    finally:
        opened.close()


def test_every_group_at_once_equals_each_group_alone(cluster):
    """The oracle: group_lag per group (a fresh evaluation each). Groups share partitions at
    different offsets, one group covers two topics, one has committed nothing of 'a'."""
    opened = Cluster.open(cluster)
    service = ConsumerGroups(opened)
    try:
        service.commit("g1", {("a", 0): 2, ("a", 1): 9, ("a", 2): 4})
        service.commit("g2", {("a", 0): 3, ("a", 1): 0, ("b", 0): 1})
        service.commit("g3", {("b", 0): 4})
        service.commit("g1", {("a", 0): 5, ("a", 1): 9, ("a", 2): 4})
    finally:
        service.close()
    now = T0 + 3600_000
    plain = ConsumerGroups(opened)  # the CLI's describe: its own reads per group
    try:
        together = all_groups_lag(opened, now)
        described = {g: plain.describe(g) for g in ("g1", "g2", "g3")}
    finally:
        plain.close()
        opened.close()
    assert [lag.group for lag in together] == ["g1", "g2", "g3"]
    for lag in together:
        assert lag == group_lag(cluster, lag.group, now_ms=now)
        assert [(p.topic, p.partition, p.committed, p.log_start_offset, p.high_watermark, p.log_end, p.lag)
                for p in lag.partitions] == \
            [(p.topic, p.partition, p.committed, p.log_start_offset, p.high_watermark, p.log_end_offset, p.lag)
             for p in described[lag.group].partitions]
    summary = {s.group: s for s in groups_summary(cluster, now_ms=now)}
    assert summary["g1"].total_lag == 4 + 0 + 5 and summary["g3"].total_lag == 0
    assert summary["g2"].max_lag_seconds == pytest.approx((now - (T0 + 1)) / 1000)  # b-0 at offset 1

"""PartitionReads against oracles: LogReader's own log ends and each record's timestamp as
produced; the shared-reads evaluation of every group against one group_lag per group."""

import os
import shutil
import time

import pytest

from kstream.client.producer import Producer
from kstream.groups import ConsumerGroups
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage.log_reader import LogReader
from kstream.tools.monitor import partition_reads
from kstream.tools.monitor.lag import all_groups_lag, group_lag, groups_summary
from kstream.tools.monitor.partition_reads import PartitionReads

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


@pytest.fixture
def empty_memos():
    """The cross-evaluation memos start (and end) empty: tests do not see each other's files."""
    partition_reads.LOG_ENDS.clear()
    partition_reads.TIMESTAMPS.clear()
    yield
    partition_reads.LOG_ENDS.clear()
    partition_reads.TIMESTAMPS.clear()


def check_reads(reads, opened):
    for topic, partition in [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("empty", 1)]:
        assert reads.offsets(topic, partition) == expected_ends(opened, topic, partition)
    for p in range(3):
        for offset in (8, 0, 3, 4, 5, 2, 7):  # out of order, inside and across frames
            assert reads.timestamp("a", p, offset) == T0 + p * 100_000 + offset * 1000
        assert reads.timestamp("a", p, 9) is None  # the log end: no record
        assert reads.timestamp("a", p, 50) is None
    assert [reads.timestamp("b", 0, o) for o in range(4)] == [T0, T0 + 1, T0 + 2, T0 + 3]
    assert reads.timestamp("empty", 0, 0) is None


def test_offsets_and_timestamps_match_the_log(cluster, empty_memos):
    opened = Cluster.open(cluster)
    try:
        with PartitionReads(opened) as reads:
            for _ in range(2):  # the second pass answers from what the first one read
                check_reads(reads, opened)
        ends, stamps = partition_reads.LOG_ENDS, partition_reads.TIMESTAMPS
        ends_hits, stamps_misses = ends.hits, stamps.misses
        with PartitionReads(opened) as again:  # a new evaluation: the same figures from the memos
            check_reads(again, opened)
        assert ends.hits - ends_hits == 4  # a-0..2, b-0 (empty-1 has no segment)
        assert stamps.misses == stamps_misses  # nothing decoded again
    finally:
        opened.close()


def test_a_segment_replaced_by_one_of_the_same_size_is_read_again(cluster, empty_memos):
    """A writer that cuts a torn tail (or truncates a diverged follower) renames a new file
    over the segment: same path, maybe the same size, other frames. The memo must not
    answer for the old file. Here a-0's segment and indexes become copies of a-1's (the same
    layout, so the same sizes; timestamps 100 s later)."""
    opened = Cluster.open(cluster)
    try:
        with PartitionReads(opened) as reads:
            assert reads.timestamp("a", 0, 4) == T0 + 4000
            a0, a1 = reads.leader_dir("a", 0), reads.leader_dir("a", 1)
        names = sorted(os.listdir(a0))
        for name in names:
            source = os.path.join(a1, name)
            if os.path.isfile(source) and not name.endswith(".lock"):
                shutil.copyfile(source, os.path.join(a0, name + ".tmp"))
                os.replace(os.path.join(a0, name + ".tmp"), os.path.join(a0, name))
        with PartitionReads(opened) as fresh:
            assert fresh.offsets("a", 0) == expected_ends(opened, "a", 0) == (0, 9)
            assert [fresh.timestamp("a", 0, o) for o in (4, 0, 8)] == \
                [T0 + 100_000 + o * 1000 for o in (4, 0, 8)]
    finally:
        opened.close()


def test_a_rolled_segment_gives_the_new_log_end(cluster_path, make_topic, empty_memos):
    """Small segments: each produce may roll a new active segment; every evaluation's log end
    and log start equal a fresh LogReader's, and each record's timestamp stays right."""
    make_topic("r", 1, config={"segment.bytes": "1024"})
    opened = Cluster.open(cluster_path)
    try:
        with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
            for i in range(12):
                producer.produce("r", b"x" * 300, timestamp=T0 + i)
                producer.flush()
                with PartitionReads(opened) as reads:
                    assert reads.offsets("r", 0) == expected_ends(opened, "r", 0) == (0, i + 1)
                    assert [reads.timestamp("r", 0, o) for o in range(i + 1)] == \
                        [T0 + o for o in range(i + 1)]
        assert sum(n.endswith(".log") for n in os.listdir(reads.leader_dir("r", 0))) > 2  # it rolled
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


def test_memo_offsets_table_reads_what_the_table_reads(cluster):
    """The shared evaluation's offsets table (rows converted once per data file) against the
    plain one, field by field, before and after a new commit and for a group with none."""
    from kstream.groups.offsets_table import OffsetsTable
    from kstream.tools.monitor.lag import MemoOffsetsTable

    opened = Cluster.open(cluster)
    service = ConsumerGroups(opened)
    try:
        service.commit("g1", {("a", 0): 2, ("a", 1): 9})
        retention = opened.config["offsets.history.retention.ms"]
        for _ in range(2):
            memo, plain = MemoOffsetsTable(cluster, retention), OffsetsTable(cluster, retention)
            assert memo.read("g1") == plain.read("g1") and len(plain.read("g1")) >= 2
            assert memo.read("nobody") == plain.read("nobody") == {}
            assert memo.read("g1", version=1) == plain.read("g1", version=1)
            service.commit("g1", {("a", 0): 5, ("b", 0): 1})
        assert MemoOffsetsTable(cluster, retention).read("g1")[("a", 0)].offset == 5
    finally:
        service.close()
        opened.close()

"""The group offsets table: rows as an independent reader sees them, idempotence, fencing,
bad input leaving the table unchanged, history reads, lag with no live consumer."""

from __future__ import annotations

import datetime as dt
import os
import time

import duckdb
import pytest
from deltalake import DeltaTable

from kstream import Producer
from kstream.errors import (
    FencedError,
    GroupBusyError,
    OffsetOutOfRangeError,
    PartitionNotFoundError,
    TopicNotFoundError,
)
from kstream.groups import ConsumerGroups, MemberSpec, OffsetCommit
from kstream.groups.offsets_table import TABLE_DIR, OffsetsHistoryError
from kstream.log.cluster.cluster import Cluster


@pytest.fixture
def groups(cluster_path, make_topic):
    make_topic("orders", partitions=3)
    make_topic("payments", partitions=2)
    with Producer({"cluster": cluster_path, "acks": "1"}) as producer:
        for p in range(3):
            for i in range(10):
                producer.produce("orders", f"o{p}-{i}".encode(), partition=p)
        for _ in range(4):
            producer.produce("payments", b"x", partition=0)
        producer.flush()
    service = ConsumerGroups(Cluster.open(cluster_path))
    yield service
    service.close()


def table_rows(cluster_path, version=None):
    table = DeltaTable(os.path.join(cluster_path, TABLE_DIR), version=version)
    rows = table.to_pyarrow_dataset().to_table(use_threads=False).to_pylist()
    return sorted((r["group"], r["topic"], r["partition"], r["offset"]) for r in rows)


def test_commit_rows_seen_by_deltalake_and_duckdb(groups, cluster_path):
    groups.commit("g1", {("orders", 0): 5, ("orders", 1): OffsetCommit(7, metadata="m")})
    groups.commit("g2", {("payments", 0): 4})
    groups.commit("g1", {("orders", 0): 6})  # merges with g1's other partitions
    assert table_rows(cluster_path) == [("g1", "orders", 0, 6), ("g1", "orders", 1, 7),
                                       ("g2", "payments", 0, 4)]
    rows = duckdb.sql(
        f"SELECT \"group\", topic, \"partition\", \"offset\", metadata FROM "
        f"read_parquet('{cluster_path}/{TABLE_DIR}/*/*.parquet', hive_partitioning=true) "
        f"WHERE filename IN (SELECT unnest(?))", params=[[
            u.removeprefix("file://") for u in
            DeltaTable(os.path.join(cluster_path, TABLE_DIR)).file_uris()]]).fetchall()
    assert sorted(rows) == [("g1", "orders", 0, 6, None), ("g1", "orders", 1, 7, "m"),
                            ("g2", "payments", 0, 4, None)]
    committed = groups.committed("g1")
    assert committed[("orders", 1)].metadata == "m"
    assert committed[("orders", 0)].leader_epoch == 0
    assert committed[("orders", 0)].committer == groups.identity


def test_recommits_are_idempotent(groups):
    first = groups.commit("g", {("orders", 0): 3}, transaction=("app", 1))
    assert first is not None
    assert groups.commit("g", {("orders", 0): 9}, transaction=("app", 1)) is None  # replay
    assert groups.commit("g", {("orders", 0): 3}) is None  # same offsets: nothing to write
    assert groups.table.version() == first
    assert groups.committed("g")[("orders", 0)].offset == 3
    assert groups.table.transaction_version("app") == 1
    assert groups.commit("g", {("orders", 0): 4}, transaction=("app", 2)) == first + 1


@pytest.mark.parametrize("offsets, error", [
    ({("nope", 0): 1}, TopicNotFoundError),
    ({("orders", 3): 1}, PartitionNotFoundError),
    ({("orders", 0): 11}, OffsetOutOfRangeError),
    ({("orders", 0): -5}, OffsetOutOfRangeError),
])
def test_bad_commits_change_nothing(groups, offsets, error):
    groups.commit("g", {("orders", 0): 2})
    version = groups.table.version()
    with pytest.raises(error) as info:
        groups.commit("g", {("orders", 1): 1, **offsets})
    assert str(info.value)  # says what was wrong
    assert groups.table.version() == version
    assert {k: v.offset for k, v in groups.committed("g").items()} == {("orders", 0): 2}


def test_commit_at_log_end_is_allowed(groups):
    groups.commit("g", {("orders", 2): 10})
    assert groups.committed("g")[("orders", 2)].offset == 10


def test_stale_generation_and_unknown_member_are_fenced(groups):
    coordinator = groups.coordinator
    spec = MemberSpec("c", ("orders",), session_timeout_ms=60_000)
    a = coordinator.join("g", spec)
    generation = coordinator.describe("g").generation
    groups.commit("g", {("orders", 0): 1}, member_id=a, generation=generation)
    b = coordinator.join("g", spec)  # a rebalance starts; a may still commit (generation valid)
    groups.commit("g", {("orders", 0): 2}, member_id=a, generation=generation)
    assert coordinator.rejoin("g", a)
    assert coordinator.describe("g").generation == generation + 1
    version = groups.table.version()
    with pytest.raises(FencedError, match="generation"):
        groups.commit("g", {("orders", 0): 0}, member_id=a, generation=generation)
    with pytest.raises(FencedError, match="no longer in group"):
        groups.commit("g", {("orders", 0): 0}, member_id="ghost", generation=generation + 1)
    with pytest.raises(FencedError, match="active member"):
        groups.commit("g", {("orders", 0): 0})
    assert groups.table.version() == version
    assert groups.committed("g")[("orders", 0)].offset == 2
    coordinator.leave("g", a)
    coordinator.leave("g", b)


def test_history_by_version_and_timestamp(groups):
    v1 = groups.commit("g", {("orders", 0): 2})
    time.sleep(0.05)
    between = dt.datetime.now(dt.UTC)
    time.sleep(0.05)
    groups.commit("g", {("orders", 0): 8})
    assert groups.committed("g", version=v1)[("orders", 0)].offset == 2
    assert groups.committed("g", timestamp=between)[("orders", 0)].offset == 2
    assert groups.committed("g")[("orders", 0)].offset == 8
    with pytest.raises(OffsetsHistoryError, match="history"):
        groups.committed("g", version=999)


def test_lag_with_no_live_consumer(groups, cluster_path):
    groups.commit("g", {("orders", 0): 4, ("orders", 2): 10, ("payments", 0): 1})
    lag = {(p.topic, p.partition): p.lag for p in groups.lag("g", topics=["orders"])}
    # hand-computed: orders has 10 records per partition, payments-0 has 4
    assert lag == {("orders", 0): 6, ("orders", 1): None, ("orders", 2): 0, ("payments", 0): 3}
    description = groups.describe("g")
    assert description.state == "Empty" and description.total_lag == 9


def test_reset_and_delete_refused_while_members_are_active(groups):
    groups.commit("g", {("orders", 0): 4})
    member = groups.coordinator.join("g", MemberSpec("c", ("orders",)))
    with pytest.raises(GroupBusyError, match="active member"):
        groups.reset_offsets("g", {("orders", 0): 0})
    with pytest.raises(GroupBusyError):
        groups.delete("g")
    assert groups.committed("g")[("orders", 0)].offset == 4
    groups.reset_offsets("g", {("orders", 0): 0}, force=True)  # fences the member
    assert groups.committed("g")[("orders", 0)].offset == 0
    with pytest.raises(FencedError):
        groups.commit("g", {("orders", 0): 1}, member_id=member, generation=1)
    groups.delete("g")
    assert groups.committed("g") == {} and "g" not in groups.list_groups()


def test_group_names_needing_quotes(groups):
    groups.commit("it's a/group", {("orders", 0): 1})
    groups.commit("other", {("orders", 0): 2})
    assert groups.committed("it's a/group")[("orders", 0)].offset == 1
    assert groups.list_groups() == ["it's a/group", "other"]


def test_vacuum_drops_old_files_and_keeps_the_latest(tmp_path):
    from kstream.groups import CommittedOffset, OffsetsTable

    table = OffsetsTable(str(tmp_path), history_retention_ms=0)
    for i in range(5):
        table.write("g", [CommittedOffset("t", 0, i), CommittedOffset("t", 1, i)])
    data_files = lambda: [f for _, _, fs in os.walk(table.path) for f in fs if f.endswith(".parquet")]  # noqa: E731
    assert len(data_files()) == 5
    assert table.read("g", version=2)[("t", 0)].offset == 1
    removed = table.vacuum()
    assert len(removed) == 4 and len(data_files()) == 1
    assert table.read("g")[("t", 1)].offset == 4
    with pytest.raises(OffsetsHistoryError, match="vacuum"):
        table.read("g", version=2)


def test_a_fenced_query_leaving_does_not_disturb_the_new_owner(groups):
    old, _ = groups.coordinator.claim("q", "spark-query")
    new, generation = groups.coordinator.claim("q", "spark-query")  # the old query is fenced
    groups.coordinator.leave("q", old)  # the old query stops (and leaves) after that
    state = groups.coordinator.describe("q")
    assert state.state == "Stable" and state.generation == generation and state.member(new)
    groups.commit("q", {("orders", 0): 3}, member_id=new, generation=generation)
    assert groups.committed("q")[("orders", 0)].offset == 3


def test_lag_when_the_lock_file_lost_its_high_watermark(groups, cluster_path):
    """A power loss can zero the lock file's published HW (it is never fsynced): describe
    rebuilds it from the replicas' durable log ends instead of showing lag 0."""
    from kstream.log.storage import format as fmt

    groups.commit("g", {("orders", 0): 4})
    info = groups.cluster.topic("orders")
    with open(groups.cluster.lock_path(info, 0), "r+b") as f:
        f.seek(fmt.LOCK_HIGH_WATERMARK_POSITION)
        f.write(b"\0" * fmt.LOCK_HIGH_WATERMARK.size)
    fresh = ConsumerGroups(Cluster.open(cluster_path))
    try:
        lag = {(p.topic, p.partition): p.lag for p in fresh.lag("g", topics=["orders"])}
        assert lag[("orders", 0)] == 6  # 10 records (acks=all: durable), committed 4
    finally:
        fresh.close()
        fresh.cluster.close()


def test_lag_and_describe_show_the_engine_s_bounds_after_a_lost_high_watermark(lost_hw):
    """A power cut took the published HW: lag and describe show the figures of bounds()."""
    path, expected = lost_hw
    service = ConsumerGroups(Cluster.open(path))
    try:
        service.commit("g", {("t", 0): 3})
        [lag] = service.lag("g")
        [described] = service.describe("g").partitions
    finally:
        service.close()
        service.cluster.close()
    for p in (lag, described):
        assert (p.log_start_offset, p.high_watermark, p.log_end_offset) == (
            expected.log_start_offset, expected.high_watermark, expected.log_end_offset)
        assert p.lag == expected.high_watermark - 3

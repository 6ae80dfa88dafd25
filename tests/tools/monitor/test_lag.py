"""group_lag / groups_summary on a real cluster: lag, lag_seconds, commit history, status."""

import os

import pytest

from kstream.client.producer import Producer
from kstream.groups import ConsumerGroups
from kstream.log.cluster.cluster import Cluster
from kstream.tools.monitor.burrow import PartitionStatus as S
from kstream.tools.monitor.commit_history import recent_commits
from kstream.tools.monitor.lag import group_lag, groups_summary
from kstream.tools.monitor.metrics_topic import Sample, write_samples

T0 = 1_700_000_000_000  # record timestamps: T0 + offset seconds


@pytest.fixture
def cluster(cluster_path, make_topic):
    make_topic("events", 2)
    with Producer({"cluster": cluster_path}) as producer:
        for offset in range(20):
            for partition in (0, 1):
                producer.produce("events", b"v", partition=partition, timestamp=T0 + offset * 1000)
    return cluster_path


def commit(cluster_path, group, offsets):
    opened = Cluster.open(cluster_path)
    service = ConsumerGroups(opened)
    try:
        service.commit(group, offsets)
    finally:
        service.close()
        opened.close()


def listing(path):
    return sorted(os.path.join(d, f) for d, _, files in os.walk(path) for f in files)


def test_lag_and_lag_seconds_per_partition(cluster):
    commit(cluster, "g", {("events", 0): 5, ("events", 1): 20})
    now = T0 + 60_000
    result = group_lag(cluster, "g", now_ms=now)
    by_partition = {p.partition: p for p in result.partitions}
    p0, p1 = by_partition[0], by_partition[1]
    assert (p0.committed, p0.high_watermark, p0.log_end, p0.lag) == (5, 20, 20, 15)
    assert p0.lag_seconds == pytest.approx((now - (T0 + 5000)) / 1000)  # the record at offset 5
    assert (p1.lag, p1.lag_seconds, p1.status) == (0, 0.0, S.OK)
    assert result.total_lag == 15 and result.state == "Empty" and result.members == 0
    assert result.member_list == ()
    assert len(p0.commits) == 1


def test_commit_history_comes_from_delta_versions_and_drives_the_status(cluster):
    # A commit that changes no offset writes nothing; p1 moves, so each is a version where p0
    # stays at 2.
    for offset in (1, 3, 5):
        commit(cluster, "stalled", {("events", 0): 2, ("events", 1): offset})
    for offset in (3, 6, 9):
        commit(cluster, "moving", {("events", 0): offset})
    commit(cluster, "rewound", {("events", 0): 10})
    commit(cluster, "rewound", {("events", 0): 4})
    history = recent_commits(cluster, per_group=10)
    assert [c.offsets[("events", 0)] for c in history["moving"]] == [3, 6, 9]
    assert [c.offsets for c in history["stalled"]][-1] == {("events", 0): 2, ("events", 1): 5}
    assert all(a.version < b.version for a, b in zip(history["moving"], history["moving"][1:], strict=False))
    assert {g: len(c) for g, c in recent_commits(cluster, ["moving"], per_group=2).items()} == {"moving": 2}

    last = max(c.ts_ms for cs in history.values() for c in cs)
    stalled = group_lag(cluster, "stalled", now_ms=history["stalled"][-1].ts_ms, min_distance_ms=0)
    p0 = next(p for p in stalled.partitions if p.partition == 0)
    assert p0.status is S.STALL and len(p0.commits) == 3 and p0.log_ends_sampled == 0
    assert stalled.status is S.ERR  # Burrow: a group is never STALL, its worst is ERR
    rewound = group_lag(cluster, "rewound", now_ms=last, min_distance_ms=0)
    assert rewound.partitions[0].status is S.REWIND
    # Without log end samples every past lag is measured against today's end: it shrinks as
    # the offsets move, so "moving" is OK; far in the future it has stopped committing.
    moved = history["moving"][-1].ts_ms
    assert group_lag(cluster, "moving", now_ms=moved, min_distance_ms=0).status is S.OK
    assert group_lag(cluster, "moving", now_ms=moved + 10**9, min_distance_ms=0).status is S.ERR


def test_log_end_at_a_commit_comes_from_the_nearest_metrics_sample(cluster):
    for offset in (3, 6, 9):
        commit(cluster, "slow", {("events", 0): offset})
    commits = recent_commits(cluster, ["slow"], per_group=10)["slow"]
    # The log grew faster than the group read: lag 7, 9, 11 at the three commits.
    write_samples(cluster, [Sample(c.ts_ms, "log", "high_watermark", float(c.offsets[("events", 0)] + lag),
                                   topic="events", partition=0)
                            for c, lag in zip(commits, (7, 9, 11), strict=True)])
    result = group_lag(cluster, "slow", now_ms=commits[-1].ts_ms, min_distance_ms=0)
    p0 = result.partitions[0]
    assert p0.log_ends_sampled == 3
    assert [c.lag for c in p0.commits] == [7, 9, 11]
    assert p0.status is S.WARN and result.status is S.WARN


def test_groups_summary_lists_every_group_and_writes_nothing(cluster):
    commit(cluster, "a", {("events", 0): 20, ("events", 1): 20})
    commit(cluster, "b", {("events", 0): 10})
    before = listing(cluster)
    summary = groups_summary(cluster, now_ms=T0 + 100_000)
    assert [(s.group, s.total_lag, s.partitions) for s in summary] == [("a", 0, 2), ("b", 10, 1)]
    assert summary[0].status is S.OK and summary[0].max_lag_seconds == 0.0
    assert summary[1].max_lag_seconds == pytest.approx(90.0)  # record at offset 10 is T0 + 10 s
    assert listing(cluster) == before


def test_missing_cluster_is_an_error_and_creates_nothing(tmp_path):
    from kstream.errors import ClusterNotFoundError

    missing = str(tmp_path / "nothing")
    with pytest.raises(ClusterNotFoundError):
        group_lag(missing, "g")
    with pytest.raises(ClusterNotFoundError):
        groups_summary(missing)
    assert not os.path.exists(missing)


def test_fence_rewrites_and_vacuumed_files_are_not_commits(cluster):
    from kstream.groups.offsets_table import CommittedOffset, OffsetsTable

    commit(cluster, "g", {("events", 0): 3})
    commit(cluster, "g", {("events", 0): 7})
    table = OffsetsTable(cluster, 7 * 24 * 3600 * 1000)
    table.write("g", [CommittedOffset("events", 0, 7)], custom_metadata={"kstream.operation": "fence"})
    assert [c.offsets[("events", 0)] for c in recent_commits(cluster, ["g"], per_group=10)["g"]] == [3, 7]
    oldest = recent_commits(cluster, ["g"], per_group=10)["g"][0]
    os.remove(next(p for p in listing(os.path.join(cluster, "__consumer_offsets"))
                   if p.endswith(".parquet") and "group=g" in p
                   and _offsets_in(p) == {("events", 0): 3}))
    after = recent_commits(cluster, ["g"], per_group=10)["g"]
    assert [c.offsets[("events", 0)] for c in after] == [7]
    assert oldest.version not in [c.version for c in after]  # history starts after the vacuumed file


def _offsets_in(path):
    import pyarrow.parquet as pq

    rows = pq.read_table(path, columns=["topic", "partition", "offset"]).to_pydict()
    return {(t, p): o for t, p, o in zip(rows["topic"], rows["partition"], rows["offset"], strict=True)}


def test_a_live_member_shows_with_its_partitions(cluster):
    from kstream.client.consumer import Consumer

    consumer = Consumer({"cluster": cluster, "group.id": "live", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    try:
        consumer.subscribe(["events"])
        for _ in range(100):  # bounded: the join completes on poll
            if consumer.poll(0.05) is not None:
                break
        consumer.commit(asynchronous=False)
        result = group_lag(cluster, "live")
        assert (result.state, result.members, len(result.member_list)) == ("Stable", 1, 1)
        assert result.member_list[0].member_id == consumer.memberid()
        assert {p.owner for p in result.partitions} == {consumer.memberid()}
    finally:
        consumer.close()


def test_nearest_sample_is_the_closer_neighbour_earlier_on_a_tie():
    """_nearest against the plain formula it replaced (min over both neighbours by distance)."""
    import bisect
    import random

    from kstream.tools.monitor.lag import NEAREST_SAMPLE_MS, _nearest

    def oracle(times, values, ts_ms):
        i = bisect.bisect_left(times, ts_ms)
        best = min((j for j in (i - 1, i) if 0 <= j < len(times)), key=lambda j: abs(times[j] - ts_ms))
        return int(values[best]) if abs(times[best] - ts_ms) <= NEAREST_SAMPLE_MS else None

    rng = random.Random(12)
    for _ in range(2000):
        times = sorted(rng.sample(range(0, 5 * NEAREST_SAMPLE_MS, 1000), rng.randint(1, 6)))
        values = [float(rng.randint(0, 100)) for _ in times]
        ts_ms = rng.choice([*times, *(t + d for t in times for d in (-1, 1, NEAREST_SAMPLE_MS,
                                                                      NEAREST_SAMPLE_MS + 1))])
        ts_ms = ts_ms if rng.random() < 0.9 else rng.randint(-NEAREST_SAMPLE_MS, 6 * NEAREST_SAMPLE_MS)
        assert _nearest((times, values), ts_ms) == oracle(times, values, ts_ms)
    assert _nearest(None, 5) is None
    assert _nearest(([0, 2000], [1.0, 2.0]), 1000) == 1  # a tie: the earlier sample


def test_a_lost_high_watermark_shows_as_the_engine_rebuilds_it(lost_hw):
    """The console's group pages (one shared read of each partition) show bounds()'s figures
    after a power cut took the published HW."""
    path, expected = lost_hw
    commit(path, "g", {("t", 0): 3})
    [p] = group_lag(path, "g", now_ms=T0).partitions
    assert (p.log_start_offset, p.high_watermark, p.log_end) == (
        expected.log_start_offset, expected.high_watermark, expected.log_end_offset)
    assert p.lag == expected.high_watermark - 3

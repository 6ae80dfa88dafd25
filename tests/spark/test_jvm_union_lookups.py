"""Both readers on a tiered topic's lookups that reach into the lake (issue 24, docs/JVM_READER.md
"Tiered topics"): offsets for times (startingTimestamp, endingTimestamp, startingOffsetsByTimestamp,
endingOffsetsByTimestamp, the strategy) resolved over lake + log as one offset space, and
latestPerKey reducing lake and log together. The JVM reader and the Python reader must return
the same rows (and the same errors), and both must equal an oracle taken from a read_committed
consumer before retention deleted what the lake holds. Under reader=auto the JVM reader serves
these reads (no hand-over to Python any more).

The topic: two partitions of many small segments; each round three plain records (keys k0..k4,
some tombstones, one of them stamped 1.5 s before the previous round: timestamps are not
monotonic; and in the tiered rounds one of keys L0..L3, never written again), a committed
transaction and an aborted one (gaps in the lake; under
read_uncommitted the log still has the aborted records). Eight rounds are tiered, then three
more rounds go to the log only, then retention deletes every segment the lake holds."""

from __future__ import annotations

import json
import os
import re
import sys
import time

import pytest
from tests.spark.jvm_support import JAR, NO_JAR_REASON, ReadBoth, load

from kstream import Admin, Consumer, NewTopic, Producer, TopicPartition
from kstream.log.cluster.cluster import Cluster
from kstream.log.partition_bounds import bounds
from kstream.tiering import Tierer

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tiering"))
from tier_helpers import SEGMENT_BYTES, null_lake_cell, recorded_ends, retention_everywhere

pytestmark = [pytest.mark.spark, pytest.mark.jvm]
if JAR is None:
    pytest.skip(NO_JAR_REASON, allow_module_level=True)

PARTITIONS = 2
KEYS = 5
BASE_MS = int(time.time()) * 1000 - 3_600_000 + 123  # recent (time retention keeps it), with milliseconds
TIERED_ROUNDS = 8
LOG_ROUNDS = 3


def _stamp(r: int, i: int) -> int:
    """Plain record i of round r: 100 ms apart, record 1 of each round 1.5 s back in time."""
    return BASE_MS + r * 1000 - 1500 if i == 1 else BASE_MS + r * 1000 + i * 100


def _rounds(cluster_path: str, first: int, count: int) -> None:
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as plain, \
            Producer({"cluster": cluster_path, "transactional.id": "lookups", "linger.ms": 0}) as tx:
        tx.init_transactions()
        for r in range(first, first + count):
            for p in range(PARTITIONS):
                for i in range(3):
                    k = (r + i) % KEYS
                    value = None if (r + i + p) % 7 == 3 else f"v-{p}-{r}-{i}".encode() * 6
                    plain.produce("t", value, key=f"k{k}".encode(), partition=p, timestamp=_stamp(r, i))
                if r < TIERED_ROUNDS:  # keys whose latest record is in the lake (L1's a tombstone)
                    plain.produce("t", None if r == 5 else f"l-{p}-{r}".encode(), key=f"L{r % 4}".encode(),
                                  partition=p, timestamp=BASE_MS + r * 1000 + 300)
                plain.flush()
            tx.begin_transaction()
            for p in range(PARTITIONS):
                tx.produce("t", f"c-{p}-{r}".encode() * 6, key=f"k{r % KEYS}".encode(), partition=p,
                           timestamp=BASE_MS + r * 1000 + 500)
                tx.produce("t", f"c9-{p}-{r}".encode() * 6, key=b"k9", partition=p, timestamp=BASE_MS + r * 1000 + 500)
            tx.commit_transaction()
            tx.begin_transaction()
            for p in range(PARTITIONS):
                for j in range(2):  # aborted: would win its key, and answer its time, if a reader saw it
                    tx.produce("t", f"a-{p}-{r}-{j}".encode() * 6, key=f"k{(r + 1) % KEYS}".encode(), partition=p,
                               timestamp=BASE_MS + r * 1000 + 600)
            tx.flush()
            tx.abort_transaction()


def _committed(cluster_path: str) -> list[tuple[int, int, bytes, bytes | None, int]]:
    """(partition, offset, key, value, timestamp ms) of every record a read_committed consumer reads."""
    consumer = Consumer({"cluster": cluster_path, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition("t", p, 0) for p in range(PARTITIONS)])
    out = []
    try:
        while (m := consumer.poll(0.3)) is not None:
            out.append((m.partition(), m.offset(), m.key(), m.value(), m.timestamp()[1]))
    finally:
        consumer.close()
    return sorted(out)


@pytest.fixture
def scene(cluster_path, tmp_path):
    """The tiered topic, its local segments below the lake end deleted; (oracle records, lake
    ends, log starts)."""
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("t", PARTITIONS, 1, config={
            "segment.bytes": SEGMENT_BYTES, "tier.delta.path": str(tmp_path / "lake")})])["t"].result()
    _rounds(cluster_path, 0, TIERED_ROUNDS)
    cluster = Cluster.open(cluster_path)
    try:
        Tierer(cluster).run(["t"], force=True)
    finally:
        cluster.close()
    _rounds(cluster_path, TIERED_ROUNDS, LOG_ROUNDS)
    want = _committed(cluster_path)
    assert [1 for p, offset, *_ in want if offset == 0] == [1] * PARTITIONS
    ends = recorded_ends(cluster_path, "t")
    starts = retention_everywhere(cluster_path, "t", PARTITIONS)
    for p in range(PARTITIONS):
        assert 0 < starts[p] == ends[p] < max(o for q, o, *_ in want if q == p)  # a lake and a log part
    return want, ends, starts


def _first_at(want, p: int, timestamp_ms: int) -> int | None:
    """The oracle: the first committed offset of partition p stamped at or after the time."""
    return next((o for q, o, _k, _v, ts in want if q == p and ts >= timestamp_ms), None)


def _served_by_jvm(spark, cluster_path, **options) -> bool:
    frame = load(spark, cluster_path, "auto", subscribe="t", **options)
    return "kstream JVM reader" in frame._jdf.queryExecution().executedPlan().toString()


def _by_partition(stamps: dict[int, int]) -> str:
    return json.dumps({"t": {str(p): ts for p, ts in stamps.items()}})


def test_offsets_for_times_over_lake_and_log(spark, cluster_path, scene):
    want, ends, _starts = scene
    both = ReadBoth(spark, cluster_path)
    # the lake end's neighbourhood: times of the last tiered round and the first log round
    probes = [BASE_MS - 10_000, BASE_MS, BASE_MS + 2_050, BASE_MS + 2_600, BASE_MS + 5_500,
              BASE_MS + (TIERED_ROUNDS - 1) * 1000 + 150, BASE_MS + (TIERED_ROUNDS - 1) * 1000 + 550,
              BASE_MS + TIERED_ROUNDS * 1000 - 1400, BASE_MS + TIERED_ROUNDS * 1000 + 10,
              BASE_MS + (TIERED_ROUNDS + 1) * 1000 + 250]
    answered_in_lake = answered_in_log = 0
    for ts in probes:
        _, got = both(subscribe="t", startingTimestamp=str(ts))
        for p in range(PARTITIONS):
            first = _first_at(want, p, ts)
            assert first is not None, ts
            assert min(r[4] for r in got if r[3] == p) == first, (ts, p)
            answered_in_lake += first < ends[p]
            answered_in_log += first >= ends[p]
    assert answered_in_lake and answered_in_log  # the probes span the lake end
    assert _served_by_jvm(spark, cluster_path, startingTimestamp=str(probes[3]))
    # an end by time inside the lake, and ends on both sides of the lake end
    for start_ms, end_ms in [(BASE_MS - 10_000, BASE_MS + 3_550),
                             (BASE_MS + 2_550, BASE_MS + (TIERED_ROUNDS + 1) * 1000),
                             (BASE_MS + (TIERED_ROUNDS - 1) * 1000, BASE_MS + TIERED_ROUNDS * 1000 + 250)]:
        _, got = both(subscribe="t", startingTimestamp=str(start_ms), endingTimestamp=str(end_ms))
        for p in range(PARTITIONS):
            start, end = _first_at(want, p, start_ms), _first_at(want, p, end_ms)
            assert sorted(r[4] for r in got if r[3] == p) == [o for q, o, *_ in want if q == p and start <= o < end]
    # per partition; an end with nothing that late is the end (latest), a start so takes the strategy
    late = BASE_MS + 1_000_000
    lake_ts = {0: BASE_MS + 3_050, 1: BASE_MS + TIERED_ROUNDS * 1000 + 50}
    _, got = both(subscribe="t", startingOffsetsByTimestamp=_by_partition(lake_ts),
                  endingOffsetsByTimestamp=_by_partition({0: BASE_MS + 6_000, 1: late}))
    assert min(r[4] for r in got if r[3] == 0) == _first_at(want, 0, lake_ts[0])
    assert max(r[4] for r in got if r[3] == 0) < _first_at(want, 0, BASE_MS + 6_000)
    assert max(r[4] for r in got if r[3] == 1) == max(o for q, o, *_ in want if q == 1)  # 'latest': to the end
    _, got = both(subscribe="t", startingOffsetsByTimestamp=_by_partition({0: late, 1: lake_ts[1]}),
                  startingOffsetsByTimestampStrategy="latest")
    assert {r[3] for r in got} == {1}
    both.error(r"OffsetOutOfRangeError: t-\d has no record at or after timestamp", subscribe="t",
               startingTimestamp=str(late))
    # read_uncommitted: the lake (committed records only) answers first, as the Python reader says
    uncommitted = {"isolation__level": "read_uncommitted"}
    for ts in (BASE_MS + 2_600, BASE_MS + TIERED_ROUNDS * 1000 + 600):
        both(subscribe="t", startingTimestamp=str(ts), **uncommitted)
    # bad options fail alike, tiered or not
    both.error(r"ConfigError: option 'startingTimestamp': 'soon' is not milliseconds", subscribe="t",
               startingTimestamp="soon")
    both.error(r"ConfigError: option 'startingOffsetsByTimestamp': .* is not JSON like", subscribe="t",
               startingOffsetsByTimestamp=_by_partition({0: -1, 1: BASE_MS}))


def test_a_lake_row_with_a_null_offset_or_timestamp_fails_both_lookups_alike(spark, cluster_path, scene, tmp_path):
    """A tier table row kstream never writes (a null timestamp, a null offset: the table was
    damaged or written by another writer) fails an offset-for-time lookup in both readers with
    the same words (table, version, file, what is wrong, what to do), not a row skipped."""
    want, _ends, _ = scene
    lake = str(tmp_path / "lake")
    first = {p: min(o for q, o, *_ in want if q == p) for p in range(PARTITIONS)}
    both = ReadBoth(spark, cluster_path)
    early = str(BASE_MS - 10_000)  # every record is at or after it: the answer is the lake's first row
    for p, column in ((0, "timestamp"), (1, "offset")):
        damaged = null_lake_cell(lake, p, first[p], column)
        both.error(rf"t-{p}: the tier table .*{re.escape(lake)} \(Delta version \d+\): its data file "
                   rf".*{re.escape(os.path.basename(damaged))} has 1 row\(s\) with a null {column}; kstream never "
                   r"writes such a row, so the table is damaged or was written by another writer: restore the "
                   r"table from a backup", assign=json.dumps({"t": [p]}), startingTimestamp=early)


def test_a_lake_row_with_a_null_offset_fails_reads_and_latest_per_key_alike(spark, cluster_path, scene, tmp_path):
    """A tier table row with a null offset fails a read of the lake in both readers with the
    words of a lookup by time: from earliest, from inside the damaged file (the Python reader's
    offset filter dropped the row) and latestPerKey (the JVM reader's first pass read it as
    offset 0), not a row dropped, read without an offset or counted at 0."""
    want, _ends, _ = scene
    lake = str(tmp_path / "lake")
    first = min(o for q, o, *_ in want if q == 1)
    damaged = null_lake_cell(lake, 1, first, "offset")
    words = (rf"t-1: the tier table .*{re.escape(lake)} \(Delta version \d+\): its data file "
             rf".*{re.escape(os.path.basename(damaged))} has 1 row\(s\) with a null offset; kstream never "
             r"writes such a row, so the table is damaged or was written by another writer: restore the "
             r"table from a backup")
    both = ReadBoth(spark, cluster_path)
    assign = json.dumps({"t": [1]})
    both.error(words, assign=assign)
    both.error(words, assign=assign, startingOffsets=_offsets({1: first + 1}))
    both.error(words, assign=assign, latestPerKey="true")
    both(assign=json.dumps({"t": [0]}), latestPerKey="true")  # partition 0's lake is whole


def test_a_stream_from_a_time_in_the_lake(spark, cluster_path, scene, tmp_path):
    """readStream resolves startingTimestamp over lake + log too, and crosses into the log."""
    want, ends, _ = scene
    ts = BASE_MS + 2_550
    name = f"lookups_{int(time.time() * 1000)}"
    query = (spark.readStream.format("kstream").option("cluster", cluster_path).option("reader", "jvm")
             .option("subscribe", "t").option("startingTimestamp", str(ts)).option("maxOffsetsPerTrigger", "9")
             .load().writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    assert query.awaitTermination(180)
    got = sorted((r.partition, r.offset) for r in spark.sql(f"SELECT partition, offset FROM {name}").collect())
    first = {p: _first_at(want, p, ts) for p in range(PARTITIONS)}
    assert all(first[p] < ends[p] for p in range(PARTITIONS))
    assert got == [(p, o) for p, o, *_ in want if o >= first[p]]  # each offset once


def _latest_oracle(want, ranges: dict[int, tuple[int, int]], tombstones: bool) -> list[tuple]:
    latest: dict[tuple[int, bytes], tuple] = {}
    for p, o, k, v, _ts in want:
        if ranges[p][0] <= o < ranges[p][1]:
            latest[(p, k)] = (p, o, k, v)
    return sorted(r for r in latest.values() if tombstones or r[3] is not None)


def _offsets(spec: dict[int, int]) -> str:
    return json.dumps({"t": {str(p): o for p, o in spec.items()}})


def test_latest_per_key_over_lake_and_log(spark, cluster_path, scene):
    want, ends, _starts = scene
    both = ReadBoth(spark, cluster_path)
    latest = {p: max(o for q, o, *_ in want if q == p) + 1 for p in range(PARTITIONS)}
    cases = {
        "earliest to latest": None,
        "inside the lake to the log": {p: (7, latest[p]) for p in range(PARTITIONS)},
        "the lake only": {p: (0, ends[p] - 4) for p in range(PARTITIONS)},
        "straddling the lake end": {p: (ends[p] - 9, ends[p] + 6) for p in range(PARTITIONS)},
        "the log only": {p: (ends[p], latest[p]) for p in range(PARTITIONS)},
    }
    for name, ranges in cases.items():
        for tombstones in ("false", "true"):
            options = {"subscribe": "t", "latestPerKey": "true", "includeTombstones": tombstones}
            if ranges is not None:
                options["startingOffsets"] = _offsets({p: r[0] for p, r in ranges.items()})
                options["endingOffsets"] = _offsets({p: r[1] for p, r in ranges.items()})
            _, got = both(**options)
            whole = ranges or {p: (0, latest[p]) for p in range(PARTITIONS)}
            expected = _latest_oracle(want, whole, tombstones == "true")
            assert sorted((r[3], r[4], r[0], r[1]) for r in got) == expected, (name, tombstones)
            assert expected, name
    # some keys' latest records are in the lake, some in the log
    won = _latest_oracle(want, {p: (0, latest[p]) for p in range(PARTITIONS)}, True)
    assert any(o < ends[p] for p, o, *_ in won) and any(o >= ends[p] for p, o, *_ in won)
    assert _served_by_jvm(spark, cluster_path, latestPerKey="true")
    # columns pruned away: the tombstone rule still reads the values
    frame = load(spark, cluster_path, "jvm", subscribe="t", latestPerKey="true").select("partition", "offset")
    assert sorted((r.partition, r.offset) for r in frame.collect()) == [
        (p, o) for p, o, *_ in _latest_oracle(want, {p: (0, latest[p]) for p in range(PARTITIONS)}, False)]


def test_latest_per_key_refuses_a_keyless_record_in_the_lake_alike(spark, cluster_path, tmp_path):
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("t", 1, 1, config={
            "segment.bytes": SEGMENT_BYTES, "tier.delta.path": str(tmp_path / "lake"),
            "retention.bytes": "1"})])["t"].result()
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for i in range(60):
            producer.produce("t", f"value-{i}".encode() * 8, key=None if i == 17 else f"k{i % 3}".encode(),
                             partition=0)
            producer.flush()
    cluster = Cluster.open(cluster_path)
    try:
        end = Tierer(cluster).run(["t"], force=True)[0].end_offset
        handle = cluster.partition("t", 0)
        try:
            handle.leader_log.apply_retention()
        finally:
            handle.close()
        assert bounds(cluster, "t", 0).log_start_offset == end > 17
    finally:
        cluster.close()
    ReadBoth(spark, cluster_path).error(r"InvalidRecordError: t-0: the record at offset 17 has no key",
                                        subscribe="t", latestPerKey="true")

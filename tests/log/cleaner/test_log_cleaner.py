"""The log cleaner of compacted topics: latest record per key kept, offsets preserved, gaps
read as gaps (never as data loss), tombstones, transactions, replicas, a reader during a swap."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest
from cleaner_helpers import batches, frames, make_compacted, polled, produce, replica_dirs

from kstream import Consumer, Producer, TopicPartition
from kstream.errors import ConfigError
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import format as fmt
from kstream.log.storage.log_reader import LogReader


def clean(cluster_path, topic="t", **kwargs):
    return Cluster.open(cluster_path).clean_topic(topic, **kwargs)[0]


def latest(records):
    found = {}
    for offset, (key, value) in enumerate(records):
        found[key] = (offset, value)
    return found


def test_the_cleaner_keeps_the_latest_record_of_each_key_at_its_offset(cluster_path):
    make_compacted(cluster_path)
    records = [(f"k{i % 5}".encode(), f"v{i}".encode()) for i in range(60)]
    produce(cluster_path, records)
    produce(cluster_path, [(b"tail", b"x")])  # so every keyed record above is in a sealed segment
    done = clean(cluster_path)
    assert done.cleaned and done.records_removed == 55 and done.segments_rewritten > 0
    expected = sorted((offset, key, value) for key, (offset, value) in latest(records).items())
    expected.append((60, b"tail", b"x"))
    assert polled(cluster_path) == expected
    assert batches(cluster_path) == expected
    frames(replica_dirs(cluster_path)[0])  # offsets still tile the log
    assert not clean(cluster_path).cleaned  # nothing dirty: not due


def test_a_consumer_position_and_seek_land_on_the_next_record_after_a_gap(cluster_path):
    make_compacted(cluster_path)
    produce(cluster_path, [(b"a", b"1"), (b"b", b"2"), (b"a", b"3"), (b"b", b"4"), (b"c", b"5"), (b"z", b"6")])
    clean(cluster_path)
    with Consumer({"cluster": cluster_path}) as consumer:
        consumer.assign([TopicPartition("t", 0, 1)])  # offset 1 was removed (b's older value)
        first = consumer.poll(5)
        assert (first.offset(), first.value()) == (2, b"3")
        assert consumer.position([TopicPartition("t", 0)])[0].offset == 3
        consumer.seek(TopicPartition("t", 0, 0))
        values = [consumer.poll(5).offset() for _ in range(4)]
        assert values == [2, 3, 4, 5]
        assert [m.offset() for m in consumer.consume(10, timeout=0.2)] == []
        low, high = consumer.get_watermark_offsets(TopicPartition("t", 0))
        assert (low, high) == (0, 6)


def test_tombstones_stay_for_delete_retention_ms_then_go(cluster_path):
    make_compacted(cluster_path, config={"delete.retention.ms": "60000"})
    produce(cluster_path, [(b"a", b"1"), (b"b", b"2"), (b"a", None), (b"z", b"end")])
    now = int(time.time() * 1000)
    clean(cluster_path, now_ms=now)
    assert polled(cluster_path) == [(1, b"b", b"2"), (2, b"a", None), (3, b"z", b"end")]
    assert not clean(cluster_path, now_ms=now + 59_000, force=True).records_removed  # horizon not reached
    assert polled(cluster_path)[1] == (2, b"a", None)
    assert clean(cluster_path, now_ms=now + 60_000, force=True).records_removed == 1
    assert polled(cluster_path) == [(1, b"b", b"2"), (3, b"z", b"end")]  # 'a' is gone, not back at 1


def test_min_compaction_lag_keeps_young_records(cluster_path):
    make_compacted(cluster_path, config={"min.compaction.lag.ms": str(3_600_000)})
    produce(cluster_path, [(b"a", b"1"), (b"a", b"2"), (b"z", b"x")])
    assert not clean(cluster_path, force=True).cleaned
    assert len(polled(cluster_path)) == 3
    done = clean(cluster_path, force=True, now_ms=int(time.time() * 1000) + 3_600_001)
    assert done.cleaned and [v for _, _, v in polled(cluster_path)] == [b"2", b"x"]


def test_the_dirty_ratio_decides_unless_forced(cluster_path):
    make_compacted(cluster_path, config={"min.cleanable.dirty.ratio": "0.9"})
    produce(cluster_path, [(f"k{i}".encode(), b"v") for i in range(10)])
    clean(cluster_path, force=True)
    produce(cluster_path, [(b"k0", b"w")])
    produce(cluster_path, [(b"z", b"end")])
    done = clean(cluster_path)
    assert not done.cleaned and "below min.cleanable.dirty.ratio 0.9" in done.reason
    assert clean(cluster_path, force=True).records_removed == 1


def test_a_delete_topic_is_not_cleaned(cluster_path, make_topic):
    make_topic("d")
    with pytest.raises(ConfigError, match="only a compacted topic is cleaned"):
        clean(cluster_path, "d")


def frame_kinds(cluster_path):
    """(base offset, control, filler) of each frame of the leader's replica."""
    return [(h.base_offset, bool(h.attributes & fmt.CONTROL), h.filler)
            for h, _ in frames(replica_dirs(cluster_path)[0])]


def transactional(cluster_path, tid, records, commit=True, topic="t"):
    producer = Producer({"cluster": cluster_path, "transactional.id": tid, "linger.ms": 0})
    producer.init_transactions()
    producer.begin_transaction()
    for key, value in records:
        producer.produce(topic, value, key=key)
        producer.flush()
    if commit is None:
        return producer  # left open
    (producer.commit_transaction if commit else producer.abort_transaction)()
    producer.close()
    return None


def test_aborted_records_go_and_markers_stay_while_their_transaction_has_records(cluster_path):
    make_compacted(cluster_path)
    produce(cluster_path, [(b"a", b"plain")])
    transactional(cluster_path, "x", [(b"a", b"aborted"), (b"b", b"aborted")], commit=False)
    transactional(cluster_path, "y", [(b"c", b"committed")])
    produce(cluster_path, [(b"z", b"end")])
    clean(cluster_path)
    assert polled(cluster_path) == [(0, b"a", b"plain"), (4, b"c", b"committed"), (6, b"z", b"end")]
    assert polled(cluster_path, isolation="read_uncommitted") == polled(cluster_path)  # aborted ones removed
    kinds = frame_kinds(cluster_path)
    assert (3, False, True) in kinds  # the aborted transaction's marker: no record left, a filler
    assert (5, True, False) in kinds  # the committed one's: its record is left, the marker stays
    produce(cluster_path, [(b"c", b"newer"), (b"z", b"end2")])
    clean(cluster_path, force=True)
    kinds = frame_kinds(cluster_path)
    assert (5, False, True) in kinds  # now nothing of it is left: the marker goes too


def test_an_open_transaction_holds_the_cleaner_at_the_lso(cluster_path):
    make_compacted(cluster_path)
    produce(cluster_path, [(b"a", b"1")])
    open_producer = transactional(cluster_path, "x", [(b"b", b"open")], commit=None)
    try:
        produce(cluster_path, [(b"a", b"2"), (b"a", b"3"), (b"z", b"end")])
        done = clean(cluster_path, force=True)
        assert done.end_offset == 1  # the LSO: the open transaction's first offset
        assert [v for _, k, v in polled(cluster_path, isolation="read_uncommitted") if k == b"a"] == [b"1", b"2", b"3"]
        open_producer.commit_transaction()
    finally:
        open_producer.close()
    clean(cluster_path, force=True)
    assert [v for _, k, v in polled(cluster_path) if k == b"a"] == [b"3"]


def test_every_in_sync_replica_cleans_to_the_same_frames(cluster_path):
    make_compacted(cluster_path, replicas=2)
    produce(cluster_path, [(f"k{i % 4}".encode(), f"v{i}".encode()) for i in range(40)] + [(b"a", None)])
    produce(cluster_path, [(b"z", b"end")])
    assert clean(cluster_path).records_removed > 0
    first, second = (frames(d) for d in replica_dirs(cluster_path))
    assert [raw for _, raw in first] == [raw for _, raw in second]
    assert any(h.sparse for h, _ in first) or any(h.filler for h, _ in first)


def test_a_reader_inside_a_segment_during_the_swap_reads_on_without_error(cluster_path):
    make_compacted(cluster_path, config={"segment.bytes": "65536"})
    records = [(f"k{i % 3}".encode(), f"v{i}".encode()) for i in range(30)]
    produce(cluster_path, records)
    with Producer({"cluster": cluster_path}) as producer:  # roll: the big segment becomes sealed
        producer.produce("t", b"x" * 70_000, key=b"big")
        producer.produce("t", b"end", key=b"z")
    directory = replica_dirs(cluster_path)[0]
    reader = LogReader(directory)
    try:
        before = reader.read(0, 200)  # the reader has the segment open and mapped, mid-way
        assert before[0].header.base_offset == 0
        clean(cluster_path)
        after = reader.read(before[-1].header.next_offset, 1 << 20)  # the old file, read on
        assert after and after[0].header.base_offset == before[-1].header.next_offset
        assert not any(h.header.sparse or h.header.filler for h in before + after[:5])
    finally:
        reader.close()
    fresh = LogReader(directory)
    try:
        assert fresh.read(0, 1 << 20)[0].header.filler  # a new reader sees the cleaned file
    finally:
        fresh.close()
    assert [v for _, k, v in polled(cluster_path) if k.startswith(b"k")] == [b"v27", b"v28", b"v29"]


def test_a_typed_topic_compacts_by_its_key_column(cluster_path):
    schema = pa.schema([pa.field("n", pa.int64())])
    make_compacted(cluster_path, schema=schema)
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for i in range(12):
            producer.produce("t", {"n": i}, key=f"k{i % 3}".encode())
            producer.flush()
        producer.produce("t", {"n": None}, key=b"k0")  # all value columns null: a tombstone
        producer.produce("t", {"n": 99}, key=b"z")
    clean(cluster_path, force=True, now_ms=int(time.time() * 1000))
    rows = []
    with Consumer({"cluster": cluster_path}) as consumer:
        consumer.assign([TopicPartition("t", 0, 0)])
        while (batch := consumer.poll_batch(max_records=100, timeout=0.5)) is not None and batch.num_rows:
            rows += zip(batch.column("offset").to_pylist(), batch.column("key").to_pylist(),
                        batch.column("n").to_pylist(), strict=True)
    assert rows == [
        (10, b"k1", 10), (11, b"k2", 11), (12, b"k0", None), (13, b"z", 99)]


def test_list_offsets_and_offsets_for_times_skip_the_gaps(cluster_path):
    make_compacted(cluster_path)
    produce(cluster_path, [(b"a", b"1"), (b"a", b"2"), (b"b", b"3"), (b"z", b"4")])
    clean(cluster_path)
    with Consumer({"cluster": cluster_path}) as consumer:
        found = consumer.offsets_for_times([TopicPartition("t", 0, 0)])[0]
        assert found.offset == 1  # the first record at or after time 0: offset 0 was cleaned
    assert os.path.exists(os.path.join(replica_dirs(cluster_path)[0], fmt.CLEANER_CHECKPOINT_FILE))


def test_appends_run_the_cleaner_when_due_as_they_run_retention(cluster_path):
    from kstream import Admin
    from kstream.admin import NewTopic

    with Admin({"cluster": cluster_path, "log.retention.check.interval.ms": "0"}) as admin:
        admin.create_topics([NewTopic("t", 1, 1, config={"cleanup.policy": "compact", "segment.bytes": "1024",
                                                         "min.cleanable.dirty.ratio": "0.5"})])["t"].result()
    produce(cluster_path, [(b"a", f"v{i}".encode()) for i in range(30)])
    seen = polled(cluster_path)
    assert len(seen) < 10 and seen[-1] == (29, b"a", b"v29")  # cleaned along the way, latest kept
    assert [v for _, _, v in seen][-1] == b"v29"


def test_a_delete_topic_gets_no_cleaner(cluster_path, make_topic):
    make_topic("d")
    handle = Cluster.open(cluster_path).partition("d", 0)
    try:
        assert handle.cleaner is None
    finally:
        handle.close()


def test_a_follower_back_in_the_isr_copies_cleaned_frames_and_the_next_clean_makes_it_agree(cluster_path):
    from click.testing import CliRunner

    from kstream import Admin
    from kstream.tools.cli.main import cli

    make_compacted(cluster_path, replicas=2)
    produce(cluster_path, [(f"k{i % 3}".encode(), f"a{i}".encode()) for i in range(10)])
    follower = Cluster.open(cluster_path).topic("t").partitions[0].replicas[1]
    with Admin({"cluster": cluster_path}) as admin:
        admin.take_log_dir_offline(follower)
    produce(cluster_path, [(f"k{i % 3}".encode(), f"b{i}".encode()) for i in range(10)] + [(b"z", b"end")])
    assert clean(cluster_path).cleaned  # the leader alone: the follower is out of the ISR
    with Admin({"cluster": cluster_path}) as admin:
        admin.set_log_dir_online(follower)
    replicated = CliRunner().invoke(cli, ["--cluster", cluster_path, "replicator", "--once"], catch_exceptions=False)
    assert "back in the ISR" in replicated.output, replicated.output
    expected = polled(cluster_path)
    clean(cluster_path, force=True)
    assert polled(cluster_path) == expected
    first, second = (frames(d) for d in replica_dirs(cluster_path))
    assert [raw for _, raw in first] == [raw for _, raw in second]


def test_max_compaction_lag_cleans_a_partition_below_the_dirty_ratio(cluster_path):
    make_compacted(cluster_path, config={"min.cleanable.dirty.ratio": "1.0", "max.compaction.lag.ms": "60000"})
    produce(cluster_path, [(f"k{i}".encode(), b"v") for i in range(10)])
    clean(cluster_path, force=True)
    produce(cluster_path, [(b"k0", b"w"), (b"z", b"end")])
    now = int(time.time() * 1000)
    assert not clean(cluster_path, now_ms=now).cleaned  # dirty ratio below 1.0, and young
    done = clean(cluster_path, now_ms=now + 61_000)
    assert done.cleaned and done.reason == "max.compaction.lag.ms" and done.records_removed == 1


def test_compact_delete_applies_retention_and_cleaning_together(cluster_path):
    make_compacted(cluster_path, config={"cleanup.policy": "compact,delete", "retention.bytes": "500"})
    produce(cluster_path, [(f"k{i % 2}".encode(), f"v{i}".encode()) for i in range(12)])
    clean(cluster_path, force=True)
    handle = Cluster.open(cluster_path).partition("t", 0)
    try:
        assert handle.leader_log.apply_retention() > 0  # compact,delete: retention still deletes
    finally:
        handle.close()
    produce(cluster_path, [(b"k0", b"last"), (b"z", b"end")])
    assert clean(cluster_path, force=True).cleaned  # the checkpoint below the new log start is fine
    seen = polled(cluster_path)
    assert [v for _, k, v in seen if k == b"k0"] == [b"last"] and seen[0][0] > 0


def test_list_offsets_max_timestamp_answers_with_a_record_the_cleaner_kept(cluster_path):
    from kstream.admin import AdminClient, OffsetSpec

    make_compacted(cluster_path)
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for key, value, timestamp in [(b"a", b"1", 1000), (b"b", b"2", 9000), (b"b", b"3", 5000),
                                      (b"c", b"4", 7000), (b"z", b"5", 2000)]:
            producer.produce("t", value, key=key, timestamp=timestamp)
            producer.flush()
    clean(cluster_path, force=True, now_ms=int(time.time() * 1000))  # b's 9000 record goes
    tp = TopicPartition("t", 0)
    with AdminClient({"cluster": cluster_path}) as admin:
        newest = admin.list_offsets({tp: OffsetSpec.max_timestamp()})[tp].result()
        assert (newest.offset, newest.timestamp) == (3, 7000)
        found = admin.list_offsets({tp: OffsetSpec.for_timestamp(8000)})[tp].result()
        assert (found.offset, found.timestamp) == (-1, -1)  # the only record that late was cleaned

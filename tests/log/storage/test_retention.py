"""Retention by size and by time deletes whole sealed segments, oldest first."""

from __future__ import annotations

import time

from helpers import encoded, open_log, read_all
from kstream import Consumer, OffsetOutOfRangeError, Producer, TopicPartition
from kstream.log.storage.log_reader import LogReader
from kstream.log.storage.retention import list_segment_bases


def test_retention_by_size_keeps_the_newest_segments(tmp_path):
    directory = str(tmp_path / "t-0")
    log = open_log(directory, segment_bytes=1024, retention_bytes=3000,
                   retention_check_interval_ms=10**9)
    for i in range(60):
        log.append(encoded([f"{i}".encode() * 40]))
    before = list_segment_bases(directory)
    deleted = log.apply_retention()
    after = list_segment_bases(directory)
    assert deleted == len(before) - len(after) > 0
    assert after == before[deleted:]  # a prefix went, the active segment stayed
    sizes = sum((tmp_path / "t-0" / f"{b:020d}.log").stat().st_size for b in after)
    assert sizes <= 3000 + 1024
    records = read_all(directory, after[0])
    assert records[0][0] == after[0] and records[-1][0] == 59
    reader = LogReader(directory)
    assert reader.log_start_offset() == after[0]
    try:
        reader.read(0, 100)
    except OffsetOutOfRangeError as err:
        assert "before the log start offset" in str(err)
    else:
        raise AssertionError("reading a deleted offset must fail")
    log.close()


def test_retention_by_time_uses_the_newest_record_of_a_segment(tmp_path):
    directory = str(tmp_path / "t-0")
    log = open_log(directory, segment_bytes=600, retention_ms=60_000,
                   retention_check_interval_ms=10**9)
    old = int(time.time() * 1000) - 3_600_000
    for _i in range(10):
        log.append(encoded([b"old" * 60], timestamp_ms=old))
    first_new = log.log_end_offset()
    for _i in range(10):
        log.append(encoded([b"new" * 60]))
    assert log.apply_retention() > 0
    assert list_segment_bases(directory)[0] == first_new
    assert [v for _, v in read_all(directory, first_new)] == [b"new" * 60] * 10
    log.close()


def test_consumer_with_auto_offset_reset_skips_to_log_start(cluster_path, make_topic):
    make_topic("t", 1, config={"segment.bytes": "1024", "retention.bytes": "2048"})
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for _i in range(100):
            producer.produce("t", b"x" * 50)
            producer.flush()  # one frame each (acks=all batches records while an fsync runs)
        producer.cluster.partition("t", 0).leader_log.apply_retention()
    consumer = Consumer({"cluster": cluster_path, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition("t", 0, -1001)])
    first = consumer.poll(1)
    assert first.offset() > 0
    consumer.close()


def test_retention_leaves_a_compact_only_topic_alone_and_applies_with_compact_delete(tmp_path):
    # Kafka: retention.ms / retention.bytes delete segments only when cleanup.policy has delete
    for policy, kept in (("compact", True), ("compact,delete", False)):
        directory = str(tmp_path / policy / "t-0")
        log = open_log(directory, segment_bytes=1024, retention_bytes=0, cleanup_policy=policy,
                       retention_check_interval_ms=10**9)
        for i in range(30):
            log.append(encoded([f"{i}".encode() * 40]))
        before = list_segment_bases(directory)
        assert len(before) > 2
        assert (log.apply_retention() == 0) is kept
        assert (list_segment_bases(directory) == before) is kept
        log.close()

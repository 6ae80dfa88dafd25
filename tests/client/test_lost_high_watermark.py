"""The client's readers after a power cut took a partition's published HW (issue 27): the
Consumer (its fetcher and its watermarks) and the AdminClient (list_offsets, describe) show
and read up to the figures of the engine's bounds(), the lost HW rebuilt from the replicas."""

from __future__ import annotations

from helpers import consume_values
from kstream import Consumer, TopicPartition
from kstream.admin import AdminClient, IsolationLevel, OffsetSpec


def test_the_consumer_reads_and_reports_the_engine_s_bounds(lost_hw):
    path, expected = lost_hw
    tp = TopicPartition("t", 0)
    assert len(consume_values(path, "t", [0], "read_uncommitted")) == expected.high_watermark
    assert len(consume_values(path, "t", [0], "read_committed")) == expected.last_stable_offset
    consumer = Consumer({"cluster": path, "group.id": "g", "isolation.level": "read_uncommitted"})
    try:
        assert consumer.get_watermark_offsets(tp) == (expected.log_start_offset, expected.high_watermark)
        consumer.assign([TopicPartition("t", 0, 0)])
        assert consumer.get_watermark_offsets(tp) == (expected.log_start_offset, expected.high_watermark)
    finally:
        consumer.close()


def test_the_admin_client_lists_and_describes_the_engine_s_bounds(lost_hw):
    path, expected = lost_hw
    tp = TopicPartition("t", 0)
    with AdminClient({"cluster": path}) as admin:
        def offset(spec, level=IsolationLevel.READ_UNCOMMITTED):
            return admin.list_offsets({tp: spec}, isolation_level=level)[tp].result().offset

        assert offset(OffsetSpec.earliest()) == expected.log_start_offset
        assert offset(OffsetSpec.latest()) == expected.high_watermark
        assert offset(OffsetSpec.latest(), IsolationLevel.READ_COMMITTED) == expected.last_stable_offset
        [described] = admin.describe_topic("t").partitions
    assert (described.log_start_offset, described.log_end_offset, described.high_watermark,
            described.last_stable_offset, described.open_transaction) == (
        expected.log_start_offset, expected.log_end_offset, expected.high_watermark,
        expected.last_stable_offset, expected.open_transaction)


def test_a_consumer_of_a_partition_no_writer_opened_makes_the_lock_file_it_watches(cluster_path, make_topic):
    """Reading a HW makes no lock file now; the Consumer still watches the file (inotify) for
    the HW to move, so it makes it: without it every wait would fall back to sleeping polls."""
    import os

    from kstream.log.cluster.cluster import Cluster

    make_topic("t")
    cluster = Cluster.open(cluster_path)
    try:
        lock_path = cluster.lock_path(cluster.topic("t"), 0)
    finally:
        cluster.close()
    assert not os.path.exists(lock_path)
    consumer = Consumer({"cluster": cluster_path})
    try:
        consumer.assign([TopicPartition("t", 0, 0)])
        assert os.path.exists(lock_path)
        assert consumer.poll(0.05) is None
    finally:
        consumer.close()

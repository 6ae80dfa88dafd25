"""The engine's face: one partition's bounds (log start, LEO, HW, LSO and the transaction holding
it), including the rule for a published HW a power cut lost (issue 27)."""

from __future__ import annotations

import os

import pytest

from helpers import file_tree, lose_high_watermark, open_transaction, produce_range, write_committed_and_aborted
from kstream import Admin, NewTopic, Producer, TopicPartition
from kstream.log import PartitionBounds, bounds
from kstream.log.cluster.cluster import Cluster
from kstream.log.transactions.store import TransactionStore


def bounds_of(cluster_path: str, topic: str, partition: int = 0) -> PartitionBounds:
    cluster = Cluster.open(cluster_path)
    try:
        return bounds(cluster, topic, partition)
    finally:
        cluster.close()


def lock_files(cluster_path: str) -> list[str] | None:
    """The lock files (None: not even their dir), which file_tree leaves out."""
    directory = os.path.join(cluster_path, "locks")
    return sorted(os.listdir(directory)) if os.path.isdir(directory) else None


def test_an_empty_partition_is_all_zero_and_reading_it_creates_no_file(cluster_path, make_topic):
    make_topic("t", 2)
    before = file_tree(cluster_path)
    locks = lock_files(cluster_path)
    assert bounds_of(cluster_path, "t", 1) == PartitionBounds("t", 1, 0, 0, 0, 0, None)
    assert file_tree(cluster_path) == before
    assert lock_files(cluster_path) == locks


def test_records_acknowledged_by_all_are_below_the_high_watermark(cluster_path, make_topic):
    make_topic("t")
    produce_range(cluster_path, "t", 0, 5)
    assert bounds_of(cluster_path, "t") == PartitionBounds("t", 0, 0, 5, 5, 5, None)


def test_an_open_transaction_holds_the_last_stable_offset(cluster_path, make_topic):
    make_topic("t")
    produce_range(cluster_path, "t", 0, 2)
    producer = open_transaction(cluster_path, "tx", "t", b"open")
    try:
        cluster = Cluster.open(cluster_path)
        try:
            [holder] = TransactionStore.for_cluster(cluster).holders("t", 0)
            found = bounds(cluster, "t", 0)
        finally:
            cluster.close()
        assert found == PartitionBounds("t", 0, 0, 3, 3, 2, holder.producer_id)
    finally:
        producer.abort_transaction()
        producer.close()
    # aborted: the marker is at 3, nothing holds the LSO any more
    assert bounds_of(cluster_path, "t") == PartitionBounds("t", 0, 0, 4, 4, 4, None)


def test_committed_and_aborted_transactions_hold_nothing(cluster_path, make_topic):
    make_topic("txn")
    write_committed_and_aborted(cluster_path, "tx")
    assert bounds_of(cluster_path, "txn") == PartitionBounds("txn", 0, 0, 11, 11, 11, None)


def test_deleted_records_move_the_log_start(cluster_path, admin, make_topic):
    make_topic("t", config={"segment.bytes": "1024"})
    with Producer({"cluster": cluster_path}) as producer:
        for _ in range(6):
            producer.produce("t", bytes(600), partition=0)
            producer.flush()  # one batch, so about one segment, per record
    low = admin.delete_records([TopicPartition("t", 0, 3)])[TopicPartition("t", 0, 3)].result().low_watermark
    assert 0 < low <= 3
    assert bounds_of(cluster_path, "t") == PartitionBounds("t", 0, low, 6, 6, 6, None)


@pytest.mark.parametrize("how", ["missing", "zeroed", "torn"])
def test_a_lost_high_watermark_is_rebuilt_from_the_replicas_and_nothing_is_written(
        cluster_path, how):
    with Admin({"cluster": cluster_path, "log.dirs": "d0,d1"}) as admin:  # two replicas
        admin.create_topics([NewTopic("t", 1, 2)])["t"].result()
    produce_range(cluster_path, "t", 0, 7)
    producer = open_transaction(cluster_path, "tx", "t", b"open")
    try:
        expected = bounds_of(cluster_path, "t")
        assert (expected.high_watermark, expected.last_stable_offset) == (8, 7)
        assert expected.open_transaction is not None
        lose_high_watermark(cluster_path, "t", 0, how)
        before = file_tree(cluster_path)
        locks = lock_files(cluster_path)
        assert bounds_of(cluster_path, "t") == expected
        assert file_tree(cluster_path) == before
        assert lock_files(cluster_path) == locks
    finally:
        producer.abort_transaction()
        producer.close()


def test_a_caller_s_open_handle_is_reused_and_left_open(cluster_path, make_topic):
    make_topic("t")
    produce_range(cluster_path, "t", 0, 3)
    cluster = Cluster.open(cluster_path)
    handle = cluster.partition("t", 0)
    try:
        assert bounds(cluster, "t", 0, handle=handle) == PartitionBounds("t", 0, 0, 3, 3, 3, None)
        assert handle.high_watermark() == 3  # still usable
    finally:
        handle.close()
        cluster.close()

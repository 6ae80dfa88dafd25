"""startingOffsets=group with a committed offset out of the log's range, planned without Spark
(kstream.source.planning): as the Python Consumer does (tests/client/test_offset_reset.py), an
offset past the log end offset takes the source's auto.offset.reset, while one up to the log
end (the end itself, or between the LSO/HW and the LEO) is kept. An offset below the log start
(retention) is data loss: failOnDataLoss=true (the default) fails with what to do, false takes
auto.offset.reset (tests/spark/test_groups.py runs the same through Spark)."""

from __future__ import annotations

import pytest

from kstream import Producer
from kstream.errors import OffsetOutOfRangeError
from kstream.groups import CommittedOffset, ConsumerGroups
from kstream.log.cluster.cluster import Cluster
from kstream.source.planning import resolve
from kstream.source.read_options import EARLIEST, LATEST, GroupPosition


def commit(cluster_path, offset):
    """g's committed offset of t-0, written to the table directly: commit() refuses an offset
    past the log end, but the log can end before it later (an unclean election truncated it,
    acks=0 records were lost)."""
    service = ConsumerGroups(Cluster.open(cluster_path))
    try:
        service.table.ensure_created()
        service.table.write("g", [CommittedOffset("t", 0, offset, topic_id=service.cluster.topic("t").topic_id)])
    finally:
        service.close()


def plan(cluster_path, reset, isolation_level="read_committed", fail_on_data_loss=True):
    cluster = Cluster.open(cluster_path)
    try:
        return resolve(cluster, GroupPosition(), [("t", 0)], LATEST, isolation_level, group="g",
                       group_fallback=EARLIEST if reset == "earliest" else LATEST,
                       fail_on_data_loss=fail_on_data_loss)["t"]["0"]
    finally:
        cluster.close()


def produce(cluster_path, n):
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for i in range(n):
            producer.produce("t", str(i).encode())
            producer.flush()


@pytest.fixture
def ten(cluster_path, make_topic):
    make_topic("t", 1)
    produce(cluster_path, 10)


@pytest.mark.parametrize(("reset", "expected"), [("earliest", 0), ("latest", 10)])
def test_committed_past_the_log_end_takes_auto_offset_reset(cluster_path, ten, reset, expected):
    commit(cluster_path, 10**6)
    assert plan(cluster_path, reset) == expected


def test_committed_at_the_log_end_is_kept(cluster_path, ten):
    commit(cluster_path, 10)
    assert plan(cluster_path, "earliest") == 10


def test_committed_between_the_lso_and_the_log_end_is_kept(cluster_path, ten):
    """An open transaction holds the LSO at 10 under read_committed; 12 is in the log (as a
    Consumer position it is valid and waits), so it is not reset."""
    producer = Producer({"cluster": cluster_path, "transactional.id": "tx", "linger.ms": 0})
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(5):
        producer.produce("t", str(i).encode())
    producer.flush()
    commit(cluster_path, 12)
    try:
        assert plan(cluster_path, "earliest") == 12
        assert plan(cluster_path, "earliest", isolation_level="read_uncommitted") == 12
    finally:
        producer.abort_transaction()
        producer.close()


@pytest.fixture
def trimmed(cluster_path, make_topic):
    """t: 100 one-record frames in small segments; retention deleted the first ones. Returns
    the log start offset."""
    make_topic("t", 1, config={"segment.bytes": "1024", "retention.bytes": "2048"})
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for i in range(100):
            producer.produce("t", str(i).encode())
            producer.flush()
        producer.cluster.partition("t", 0).leader_log.apply_retention()
    cluster = Cluster.open(cluster_path)
    reader = cluster.partition("t", 0).reader(check_crcs=False)
    start = reader.log_start_offset()
    reader.close()
    cluster.close()
    assert 3 < start < 100
    return start


def test_committed_below_the_log_start_fails_on_data_loss(cluster_path, trimmed):
    commit(cluster_path, 1)
    with pytest.raises(OffsetOutOfRangeError, match=r"(?s)group 'g'.*t-0.*below the log start.*failOnDataLoss"):
        plan(cluster_path, "earliest")


@pytest.mark.parametrize(("reset", "expected"), [("earliest", "start"), ("latest", 100)])
def test_committed_below_the_log_start_without_fail_on_data_loss_takes_the_reset(cluster_path, trimmed, reset,
                                                                                 expected):
    commit(cluster_path, 1)
    wanted = trimmed if expected == "start" else expected
    assert plan(cluster_path, reset, fail_on_data_loss=False) == wanted

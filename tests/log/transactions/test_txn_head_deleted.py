"""An expired transaction whose first frames retention deleted still reads as aborted.

Found by the tierer's chaos class tier_lake_unwritable (issue 24): a killed writer's
transaction past its deadline reads as aborted (readers apply the outcome without writing it),
so the LSO moves past it, the tierer copies past it, and retention deletes the segments that
hold its first frames. The files then show the transaction open from a later frame while the
metadata's row names its first offset: the outcome was not applied, and the LSO stuck at that
frame for good, hiding every acknowledged record after it from read_committed readers.
"""

from __future__ import annotations

import time

from kstream import Admin, Consumer, NewTopic, Producer, TopicPartition
from kstream.log.cluster.cluster import Cluster
from kstream.log.partition_bounds import bounds


def _read_committed(path: str) -> list[bytes]:
    consumer = Consumer({"cluster": path, "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition("t", 0, 0)])
    values = []
    try:
        while (m := consumer.poll(0.5)) is not None:
            if m.error() is None:
                values.append(m.value())
    finally:
        consumer.close()
    return values


def test_expired_transaction_with_its_head_deleted_does_not_hold_the_lso(tmp_path):
    path = str(tmp_path / "c")
    with Admin({"cluster": path, "transaction.max.timeout.ms": 1000}) as admin:
        admin.create_topics([NewTopic("t", 1, config={"segment.bytes": "1024", "retention.bytes": "1"})])["t"].result()
    plain = Producer({"cluster": path, "linger.ms": 0})
    txn = Producer({"cluster": path, "transactional.id": "dies", "linger.ms": 0, "transaction.timeout.ms": 1000})
    txn.init_transactions()
    txn.begin_transaction()
    txn.produce("t", b"txn-first", partition=0)
    txn.flush()
    for i in range(60):  # seal segments past the transaction's first frame
        plain.produce("t", f"plain-{i}".encode() * 4, partition=0)
        plain.flush()
    txn.produce("t", b"txn-later", partition=0)
    txn.flush()  # the writer dies here: no commit, no abort, no marker
    time.sleep(1.3)  # past its transaction.timeout.ms: it reads as aborted
    cluster = Cluster.open(path)
    try:
        before = bounds(cluster, "t", 0)
        assert before.last_stable_offset == before.high_watermark  # the outcome is applied
        handle = cluster.partition("t", 0)
        try:
            assert handle.leader_log.apply_retention() > 0  # the transaction's first frame goes
        finally:
            handle.close()
        after = bounds(cluster, "t", 0)
    finally:
        cluster.close()
    assert after.log_start_offset > 0
    assert after.last_stable_offset == after.high_watermark, (
        f"the LSO stuck at {after.last_stable_offset} (HW {after.high_watermark}) behind an expired transaction")
    assert b"txn-later" not in _read_committed(path)

"""Idempotent producers (issue 10, defect 7): a batch written on the survivors but reported
NotEnoughReplicas is retried with the same producer id, epoch and sequence, and the log keeps
one copy; the delivery report gives the original offset."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest

from helpers import consume_values, encoded
from kstream import Admin, NewTopic, NotEnoughReplicasError, Producer
from kstream.errors import ConfigError, FencedError, OutOfOrderSequenceError
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.replica_ops import sync_all
from kstream.log.storage import faults


@pytest.fixture(autouse=True)
def fault_injection(monkeypatch):
    monkeypatch.setattr(faults, "ENABLED", True)
    monkeypatch.setenv("KSTREAM_FAULT_INJECTION", "1")


@pytest.fixture
def replicated(tmp_path):
    """(cluster path, {log dir id: path}, (leader, follower, follower)) of topic t: RF=3, min ISR 2."""
    path = str(tmp_path / "cluster")
    dirs = [str(tmp_path / f"disk{i}") for i in range(3)]
    with Admin({"cluster": path, "log.dirs": ",".join(dirs), "min.insync.replicas": 2,
                "default.replication.factor": 3}) as admin:
        admin.create_topics([NewTopic("t", 1, 3)])["t"].result()
        replicas = admin.cluster.topic("t").partitions[0].replicas
        return path, admin.cluster.log_dir_paths(), replicas


def _restore(path, log_dirs, replicas):
    """Repair the followers' dirs: online again, caught up, back in the ISR."""
    with Admin({"cluster": path}) as admin:
        for replica in replicas:
            faults.clear(log_dirs[replica])
            admin.set_log_dir_online(replica)
        sync_all(admin.cluster)
        assert set(admin.cluster.topic("t").partitions[0].isr) == set(log_dirs)


def test_retry_of_a_batch_reported_not_enough_replicas_is_not_written_twice(replicated):
    path, log_dirs, (_leader, *followers) = replicated
    cluster = Cluster.open(path)
    producer_id = cluster.metadata.next_counter("producer_id")
    batch = dataclasses.replace(encoded([b"once"]), producer_id=producer_id, producer_epoch=0,
                                base_sequence=0)
    handle = cluster.partition("t", 0)
    first = handle.append(batch, "all", defer_fsync=True)
    for replica in followers:  # their fsyncs fail: written on the leader, not acknowledged
        faults.inject(log_dirs[replica])
    with pytest.raises(NotEnoughReplicasError, match="are written"):
        handle.flush_acked()
    _restore(path, log_dirs, followers)

    again = handle.append(batch, "all")  # the producer's retry: same id, epoch, sequence
    assert again.base_offset == first.base_offset == 0
    other_process = cluster.partition("t", 0)  # a fresh handle rebuilds the state from the log
    assert other_process.append(batch, "all").base_offset == 0
    assert other_process.log_end_offset_locked() == 1
    assert consume_values(path, "t", [0], "read_uncommitted") == [b"once"]

    following = dataclasses.replace(batch, base_sequence=1)
    assert handle.append(following, "all").base_offset == 1
    with pytest.raises(OutOfOrderSequenceError, match="expected 2"):
        handle.append(dataclasses.replace(batch, base_sequence=7), "all")
    assert other_process.append(dataclasses.replace(batch, producer_epoch=1), "all").base_offset == 2
    with pytest.raises(FencedError):
        handle.append(dataclasses.replace(batch, base_sequence=2), "all")  # epoch 0 is fenced now
    assert consume_values(path, "t", [0], "read_uncommitted") == [b"once"] * 3
    for h in (handle, other_process):
        h.close()
    cluster.close()


def test_producer_retries_with_the_same_sequence_and_reports_the_original_offset(replicated):
    path, log_dirs, (_leader, *followers) = replicated
    reports = []
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0, "retries": 1000,
                   "retry.backoff.ms": 20, "delivery.timeout.ms": 60_000}) as producer:
        producer.produce("t", b"first", partition=0, on_delivery=lambda e, m: reports.append((e, m.offset())))
        producer.flush()
        for replica in followers:
            faults.inject(log_dirs[replica])

        def repair():
            with Admin({"cluster": path}) as admin:  # wait until the failed fsyncs took the dirs offline
                deadline = time.monotonic() + 30
                while any(online for i, _, online in admin.cluster.metadata.log_dirs() if i in followers):
                    assert time.monotonic() < deadline
                    time.sleep(0.01)
            _restore(path, log_dirs, followers)

        repairer = threading.Thread(target=repair)
        repairer.start()
        producer.produce("t", b"second", partition=0, on_delivery=lambda e, m: reports.append((e, m.offset())))
        producer.flush()
        repairer.join()
        producer.produce("t", b"third", partition=0, on_delivery=lambda e, m: reports.append((e, m.offset())))
        producer.flush()
    assert reports == [(None, 0), (None, 1), (None, 2)]
    assert consume_values(path, "t", [0], "read_uncommitted") == [b"first", b"second", b"third"]


@pytest.mark.parametrize("extra, refused", [
    ({"acks": "1"}, "`acks` must be set to `all` when `enable.idempotence` is true"),
    ({"acks": 0}, "`acks` must be set to `all` when `enable.idempotence` is true"),
    ({"max.in.flight.requests.per.connection": 6}, "`max.in.flight.requests.per.connection` must be set <= 5"),
    ({"request.required.acks": 1}, "`acks` must be set to `all` when `enable.idempotence` is true"),  # aliases
    ({"max.in.flight": 6}, "`max.in.flight.requests.per.connection` must be set <= 5"),
])
def test_explicit_idempotence_refuses_what_librdkafka_refuses(cluster_path, make_topic, extra, refused):
    """Found by the dual-run harness (tests/dual, idempotence): confluent-kafka refuses these at
    construction with _INVALID_ARG; kstream's default idempotence (any acks) stays accepted."""
    make_topic("t")
    with pytest.raises(ConfigError, match=refused) as caught:
        Producer({"cluster": cluster_path, "enable.idempotence": True, **extra})
    assert caught.value.args[0].name() == "_INVALID_ARG"
    for accepted in ({**extra, "enable.idempotence": False}, extra,
                     {"enable.idempotence": "true", "acks": "all", "max.in.flight.requests.per.connection": 5}):
        Producer({"cluster": cluster_path, **accepted}).close()

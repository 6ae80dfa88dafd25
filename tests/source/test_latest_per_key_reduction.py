"""The Python reader's latestPerKey reduction without Spark: random puts and deletes against a dict
oracle, reduced in many small rounds (REDUCE_ROWS lowered) as a large partition is; an open
transaction holds the end (the LSO) under read_committed; keyless records are refused."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from kstream import Admin, NewTopic, Producer
from kstream.errors import InvalidRecordError
from kstream.log.storage.output import output_schema
from kstream.source import latest_per_key
from kstream.source.latest_per_key import read_latest
from kstream.source.planning import PartitionRange
from kstream.source.read_options import EARLIEST, LATEST

SCHEMA = pa.schema([f for f in output_schema(None) if f.name != "headers"])


def _latest(cluster_path: str, topic: str, start: int = EARLIEST, end: int = LATEST, tombstones: bool = False,
            isolation: str = "read_committed") -> list[tuple]:
    split = PartitionRange(cluster_path, topic, 0, start, end, True, isolation, latest_per_key=True,
                           include_tombstones=tombstones)
    return [(r["offset"], r["key"], r["value"]) for b in read_latest(split, SCHEMA) for r in b.to_pylist()]


@pytest.mark.parametrize("seed", range(4))
def test_random_puts_and_deletes_reduce_to_the_dict_oracle_in_many_rounds(cluster_path, monkeypatch, seed):
    monkeypatch.setattr(latest_per_key, "REDUCE_ROWS", 5)
    rng = random.Random(seed)
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("t", 1)])["t"].result()
    written = []
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for i in range(120):
            key = f"k{rng.randrange(15)}".encode()
            value = None if rng.random() < 0.2 else f"v{i}".encode()
            producer.produce("t", value, key=key)
            written.append((i, key, value))
            if rng.random() < 0.3:
                producer.flush()  # frames of one and of several records
        producer.flush()
    for end in (1, 17, 64, 120):
        for tombstones in (False, True):
            want = _oracle(written[:end], tombstones)
            assert _latest(cluster_path, "t", end=end, tombstones=tombstones) == want, (end, tombstones)
    assert _latest(cluster_path, "t", start=60) == _oracle(written[60:], False)


def _oracle(written: list[tuple], tombstones: bool) -> list[tuple]:
    """(offset, key, value) of each key's last record in ``written``; tombstones removing it."""
    latest: dict[bytes, tuple] = {}
    for offset, key, value in written:
        latest[key] = (offset, key, value)
    return sorted(r for r in latest.values() if tombstones or r[2] is not None)


def test_an_open_transaction_holds_the_end_at_the_last_stable_offset(cluster_path):
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("t", 1)])["t"].result()
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        producer.produce("t", b"a1", key=b"a")
        producer.flush()
    tx = Producer({"cluster": cluster_path, "transactional.id": "open", "linger.ms": 0})
    try:
        tx.init_transactions()
        tx.begin_transaction()
        tx.produce("t", b"a-open", key=b"a", partition=0)
        tx.flush()
        with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
            producer.produce("t", b"b1", key=b"b")  # after the open transaction: above the LSO
            producer.flush()
        assert _latest(cluster_path, "t") == [(0, b"a", b"a1")]
        got = _latest(cluster_path, "t", isolation="read_uncommitted")
        assert [(k, v) for _, k, v in got] == [(b"a", b"a-open"), (b"b", b"b1")]
        tx.abort_transaction()
        assert [(k, v) for _, k, v in _latest(cluster_path, "t")] == [(b"a", b"a1"), (b"b", b"b1")]
    finally:
        tx.close()


def test_a_keyless_record_is_refused_naming_its_offset(cluster_path):
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("t", 1)])["t"].result()
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        producer.produce("t", b"x", key=b"k", partition=0)
        producer.produce("t", b"y", partition=0)
        producer.flush()
    with pytest.raises(InvalidRecordError, match="t-0: the record at offset 1 has no key"):
        _latest(cluster_path, "t")


@pytest.mark.parametrize("seed", range(4))
def test_a_cleaned_partition_is_read_in_two_passes_and_agrees_with_the_plain_read_folded(cluster_path, seed):
    """Below the cleaner's end (its checkpoint) each key has one record: the reader keeps such a row
    unless its key has a record in the dirty part above, which it reduces. Random puts and deletes,
    cleaned at a random point, then more; every start and end around the cleaner's end (inside a
    frame of several records too) against the plain read of the same range, folded by a dict."""
    from kstream.log.cluster.cluster import Cluster
    from kstream.log.storage.cleaner_checkpoint import read_checkpoint
    from kstream.source.partition_reader import read_range
    from kstream.source.planning import bounds

    rng = random.Random(seed)
    config = {"cleanup.policy": "compact", "segment.bytes": "2048", "min.cleanable.dirty.ratio": "0.01"}
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("t", 1, config=config)])["t"].result()

    def write(count: int) -> None:
        with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
            for i in range(count):
                producer.produce("t", None if rng.random() < 0.15 else f"v{seed}-{i}".encode(),
                                 key=f"k{rng.randrange(12)}".encode())
                if rng.random() < 0.4:
                    producer.flush()  # frames of one and of several records
            producer.flush()

    write(rng.randrange(60, 120))
    cluster = Cluster.open(cluster_path)
    try:
        assert cluster.clean_topic("t", force=True)[0].cleaned
        cleaned_to = read_checkpoint(cluster.partition("t", 0).leader_dir)
        write(rng.randrange(10, 40))
        end = bounds(cluster, "t", 0, "read_committed")[1]
    finally:
        cluster.close()
    assert cleaned_to and cleaned_to > 0
    plain = [(r["offset"], r["key"], r["value"]) for b in read_range(
        PartitionRange(cluster_path, "t", 0, 0, end, True), SCHEMA) for r in b.to_pylist()]
    for start, stop in [(0, end), (0, cleaned_to), (0, cleaned_to - 1), (0, cleaned_to + 1), (cleaned_to - 2, end),
                        (cleaned_to + 1, end), (rng.randrange(cleaned_to), rng.randrange(cleaned_to, end + 1))]:
        for tombstones in (False, True):
            want = _oracle([r for r in plain if start <= r[0] < stop], tombstones)
            got = _latest(cluster_path, "t", start=start, end=stop, tombstones=tombstones)
            assert got == want, (start, stop, tombstones, cleaned_to)


@pytest.mark.parametrize("damage", ["garbage", "empty", "too long", "a directory"])
def test_a_damaged_cleaner_checkpoint_fails_the_read_naming_it_and_a_missing_one_is_never_cleaned(cluster_path,
                                                                                                    damage):
    """A missing cleaner-offset-checkpoint is "never cleaned" (all dirty); one that exists but holds
    no offset or cannot be read was damaged or edited: the read fails naming it (the JVM reader's
    CleanerCheckpoint says the same), not read as never cleaned without a word. The cleaner and a
    truncation still count it as none (tests/log/cleaner/test_cleaner_truncation.py)."""
    import os
    import shutil

    from kstream.errors import KStreamError
    from kstream.log.cluster.cluster import Cluster
    from kstream.log.storage import format as fmt
    from kstream.log.storage.cleaner_checkpoint import read_checkpoint

    config = {"cleanup.policy": "compact", "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01"}
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("t", 1, config=config)])["t"].result()
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for i in range(60):
            producer.produce("t", f"v{i}".encode() * 4, key=f"k{i % 7}".encode())
            producer.flush()
    cluster = Cluster.open(cluster_path)
    try:
        assert cluster.clean_topic("t", force=True)[0].cleaned
        directory = cluster.partition("t", 0).leader_dir
    finally:
        cluster.close()
    want = _latest(cluster_path, "t")
    assert sorted(key for _, key, _ in want) == sorted(f"k{i}".encode() for i in range(7))
    path = os.path.join(directory, fmt.CLEANER_CHECKPOINT_FILE)
    os.remove(path)
    if damage == "a directory":
        os.mkdir(path)
        words = r"cannot be read \(.*\)"
    else:
        with open(path, "w") as f:
            f.write({"garbage": "garbage\n", "empty": "", "too long": "1" * 19 + "\n"}[damage])
        words = "holds '(garbage|1{19})?', not an offset"
    with pytest.raises(KStreamError, match=f"the log cleaner's checkpoint {path} {words}: kstream writes it whole, so "
                                           "it was damaged or edited, .* delete it .* and run the read again"):
        _latest(cluster_path, "t")
    if damage != "a directory":
        assert read_checkpoint(directory) is None  # the cleaner's view: none, all dirty
        os.remove(path)
    else:
        shutil.rmtree(path)
    assert _latest(cluster_path, "t") == want  # missing: never cleaned, every record dirty

"""Spark reads write nothing on a cluster with expired and half-finished transactions (issue 26).

The cluster of tests/stuck_transactions.py (an expired Ongoing transaction, a PrepareCommit
without markers, a Committing sink batch without markers, an undecided sink write, all past
their deadline). A batch read_committed read through the Python reader (planner and partition
readers, one read-only Isolation each) sees the fixed outcomes: what a reader sees after the
expiry ran. The JVM reader reads files only: it sees no more than that (the held LSO stops
it before the open transactions) and never an aborted record. Neither writes anything.
"""

from __future__ import annotations

import os

import pytest
from tests.spark.jvm_support import load

from stuck_transactions import COMMITTED_VIEW, snapshot, stuck_cluster

pytestmark = pytest.mark.spark

NEVER = {b"expired", b"sink-undecided"}


@pytest.fixture
def stuck(tmp_path):
    yield from stuck_cluster(tmp_path, with_group=False)


def _values(spark, cluster, reader, **options) -> dict[int, list[bytes]]:
    rows = load(spark, cluster, reader, subscribe="txn", **options).collect()
    out: dict[int, list[tuple[int, bytes]]] = {0: [], 1: []}
    for row in rows:
        out[row["partition"]].append((row["offset"], bytes(row["value"])))
    return {p: [v for _, v in sorted(records)] for p, records in out.items()}


def test_the_python_reader_sees_the_fixed_outcomes_and_writes_nothing(spark, stuck):
    before = snapshot(stuck)
    seen = _values(spark, stuck, "python")
    assert [seen[0], seen[1]] == COMMITTED_VIEW
    assert snapshot(stuck) == before
    assert not os.path.exists(os.path.join(stuck, "__consumer_offsets"))


def test_the_jvm_reader_writes_nothing_and_shows_no_more(spark, stuck):
    from kstream.jars import jar_path

    if not jar_path():
        pytest.skip("no kstream JVM jar (make install builds it with javac)")
    before = snapshot(stuck)
    seen = _values(spark, stuck, "jvm")
    for partition in (0, 1):  # a prefix of the committed view: held back, never ahead
        assert seen[partition] == COMMITTED_VIEW[partition][:len(seen[partition])]
        assert not NEVER & set(seen[partition])
    assert snapshot(stuck) == before


@pytest.mark.parametrize("reader", ["python", "jvm"])
def test_a_streaming_read_writes_nothing(spark, stuck, tmp_path, reader):
    """The Python stream reader sees the fixed outcomes; the JVM one (format("kstream")'s default
    when the jar is on the session) sees a prefix of them: the LSO its files show."""
    from kstream.jars import jar_path

    if reader == "jvm" and not jar_path():
        pytest.skip("no kstream JVM jar (make install builds it with javac)")
    before = snapshot(stuck)
    query = (spark.readStream.format("kstream").option("cluster", stuck).option("subscribe", "txn")
             .option("startingOffsets", "earliest").option("reader", reader).load()
             .writeStream.format("memory").queryName(f"read_only_stream_{reader}")
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination(120)
    rows = spark.sql(f"SELECT partition, offset, value FROM read_only_stream_{reader}").collect()
    seen = {p: [bytes(r["value"]) for r in sorted(rows, key=lambda r: r["offset"]) if r["partition"] == p]
            for p in (0, 1)}
    for partition in (0, 1):
        if reader == "python":
            assert seen[partition] == COMMITTED_VIEW[partition]
        else:
            assert seen[partition] == COMMITTED_VIEW[partition][:len(seen[partition])]
            assert not NEVER & set(seen[partition])
    assert snapshot(stuck) == before

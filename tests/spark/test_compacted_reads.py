"""Spark reads of a compacted topic after the cleaner ran: both readers read the gaps as gaps
(failOnDataLoss keeps its meaning: data below the log start), and the JVM reader (the default
with the jar on the session) returns exactly the rows and offsets the Python reader returns, in
batch reads and in micro-batches whose ranges start and end inside gaps."""

from __future__ import annotations

import os
import sys
import time

import pytest
from tests.jvm import cleaned_vectors

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "log", "cleaner"))
from cleaner_helpers import make_compacted, produce
from jvm_support import JAR, NO_JAR_REASON, READERS, load, rows

from kstream.log.cluster.cluster import Cluster

pytestmark = pytest.mark.spark


@pytest.fixture
def cleaned(cluster_path):
    make_compacted(cluster_path)
    produce(cluster_path, [(f"k{i % 3}".encode(), f"v{i}".encode()) for i in range(12)] + [(b"z", b"end")])
    assert Cluster.open(cluster_path).clean_topic("t", force=True)[0].records_removed == 9
    return cluster_path


def test_the_python_reader_reads_a_cleaned_partition_with_its_gaps(spark, cleaned):
    frame = load(spark, cleaned, "python", subscribe="t", failOnDataLoss="true")
    rows = sorted((r.offset, r.key, r.value) for r in frame.select("offset", "key", "value").collect())
    assert rows == [(9, b"k0", b"v9"), (10, b"k1", b"v10"), (11, b"k2", b"v11"), (12, b"z", b"end")]
    inside_a_gap = load(spark, cleaned, "python", subscribe="t", failOnDataLoss="true",
                        startingOffsets='{"t": {"0": 4}}', endingOffsets='{"t": {"0": 11}}')
    assert sorted(r.offset for r in inside_a_gap.collect()) == [9, 10]


@pytest.fixture
def every_kind(cluster_path):
    """Topic ``cleaned`` after a clean: version 1 frames, sparse lz4/zstd frames, a cleaned
    committed transaction, tombstones, fillers, an aborted transaction after the clean's end
    (tests/jvm/cleaned_vectors.py), and what each isolation level must read of it."""
    return cluster_path, cleaned_vectors.write_cleaned(cluster_path)


def _records(frame) -> list[tuple]:
    return sorted((r.offset, r.key, r.value) for r in frame.select("offset", "key", "value").collect())


def _oracle(manifest: dict, isolation: str, start: int = 0, end: int | None = None) -> list[tuple]:
    return [(o, k.encode(), None if v is None else v.encode()) for o, k, v, _ in manifest["rows"][isolation]
            if o >= start and (end is None or o < end)]


@pytest.mark.skipif(JAR is None, reason=NO_JAR_REASON)
def test_the_jvm_reader_reads_a_cleaned_partition_as_the_python_reader(spark, cleaned):
    for options in ({}, {"startingOffsets": '{"t": {"0": 4}}', "endingOffsets": '{"t": {"0": 11}}'}):
        frames = {reader: load(spark, cleaned, reader, subscribe="t", failOnDataLoss="true", **options)
                  for reader in READERS}
        assert rows(frames["jvm"]) == rows(frames["python"]), options
    default = load(spark, cleaned, "auto", subscribe="t", failOnDataLoss="true")
    assert "kstream JVM reader" in default._jdf.queryExecution().executedPlan().toString()
    assert [r.offset for r in default.select("offset").collect()] == [9, 10, 11, 12]


@pytest.mark.skipif(JAR is None, reason=NO_JAR_REASON)
def test_both_readers_read_every_kind_of_cleaned_frame_as_the_oracle(spark, every_kind):
    """Starts and ends inside gaps, inside sparse frames and at fillers, both isolation levels."""
    cluster_path, manifest = every_kind
    end = manifest["written"][-1]["offset"] + 1
    kept = {row[0] for row in manifest["rows"]["read_uncommitted"]}
    gaps = [o for o in range(end) if o not in kept]
    assert len(gaps) > 10
    for isolation in ("read_committed", "read_uncommitted"):
        full = {reader: load(spark, cluster_path, reader, subscribe="cleaned", failOnDataLoss="true",
                             isolation__level=isolation) for reader in READERS}
        assert rows(full["jvm"]) == rows(full["python"]), isolation
        assert _records(full["jvm"]) == _oracle(manifest, isolation), isolation
    for start, stop in ((gaps[0], gaps[5]), (gaps[3], end), (1, 15), (15, 17), (gaps[-1], end)):
        got = {reader: _records(load(spark, cluster_path, reader, subscribe="cleaned", failOnDataLoss="true",
                                     startingOffsets=f'{{"cleaned": {{"0": {start}}}}}',
                                     endingOffsets=f'{{"cleaned": {{"0": {stop}}}}}'))
               for reader in READERS}
        assert got["jvm"] == got["python"] == _oracle(manifest, "read_committed", start, stop), (start, stop)
    # no stored column asked for: a dense frame's rows are counted, a sparse one's deltas decoded
    for reader in READERS:
        offsets = load(spark, cluster_path, reader, subscribe="cleaned", columns="offset",
                       startingOffsets=f'{{"cleaned": {{"0": {gaps[1]}}}}}').collect()
        assert sorted(r.offset for r in offsets) == [row[0] for row in _oracle(manifest, "read_committed", gaps[1])]


@pytest.mark.skipif(JAR is None, reason=NO_JAR_REASON)
def test_micro_batches_split_inside_gaps_read_what_a_batch_read_reads(spark, every_kind, tmp_path):
    """Trigger.AvailableNow with maxOffsetsPerTrigger=3 from an offset inside a gap: batches end
    inside gaps and cleaned frames, some hold no record; both readers give the oracle's rows."""
    cluster_path, manifest = every_kind
    start = next(o for o in range(100) if o not in {row[0] for row in manifest["rows"]["read_committed"]})
    for reader in READERS:
        name = f"compacted_{reader}_{int(time.time() * 1000)}"
        query = (spark.readStream.format("kstream").option("cluster", cluster_path).option("reader", reader)
                 .option("subscribe", "cleaned").option("failOnDataLoss", "true")
                 .option("startingOffsets", f'{{"cleaned": {{"0": {start}}}}}').option("maxOffsetsPerTrigger", "3")
                 .load().writeStream.format("memory").queryName(name)
                 .option("checkpointLocation", str(tmp_path / f"ckpt-{reader}")).trigger(availableNow=True).start())
        assert query.awaitTermination(180)
        got = sorted((r.offset, r.key, r.value) for r in spark.sql(f"SELECT offset, key, value FROM {name}").collect())
        assert got == _oracle(manifest, "read_committed", start), reader
        counts = [p["numInputRows"] for p in query.recentProgress]
        assert max(counts) <= 3 and sum(counts) == len(got), (reader, counts)
        if reader == "jvm":
            assert "kstream JVM reader" in str(query.lastProgress["sources"][0]["description"])

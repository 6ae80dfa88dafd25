"""The streaming sink knows a query by the id in its checkpoint, never by the checkpoint's path."""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pytest

from helpers import consume_values, spark_checkpoint
from kstream import CheckpointError
from kstream.log.cluster.cluster import Cluster
from kstream.log.transactions.sink import SinkStore
from kstream.sink.query_identity import query_sink_id, read_query_id
from kstream.sink.writer import KStreamStreamWriter, SinkOptions, write_task


def test_the_query_id_is_read_from_the_checkpoints_metadata_under_every_spelling(tmp_path, monkeypatch):
    checkpoint = tmp_path / "ck"
    query_id = spark_checkpoint(checkpoint)
    monkeypatch.chdir(tmp_path)
    spellings = [str(checkpoint), f"file://{checkpoint}", f"file:{checkpoint}", f"{checkpoint}/",
                 f"{tmp_path}/./x/../ck", "ck", f"file://localhost{checkpoint}"]
    assert {read_query_id(s) for s in spellings} == {query_id}
    assert query_sink_id(str(checkpoint)) == f"query:{query_id}"


@pytest.mark.parametrize("content, expected", [
    (None, "has no metadata file"),
    ("", "is not a Spark query's metadata"),
    ('{"id": "not-a-uuid"}', "is not a Spark query's metadata"),
    ('{"name": "q"}', "is not a Spark query's metadata"),
    ("[1, 2]", "is not a Spark query's metadata"),
    ("x" * (65 << 10), "over 65536 bytes"),
])
def test_a_checkpoint_without_a_query_id_is_a_fault_not_a_default(tmp_path, content, expected):
    checkpoint = tmp_path / "ck"
    checkpoint.mkdir()
    if content is not None:
        (checkpoint / "metadata").write_text(content)
    with pytest.raises(CheckpointError, match=expected):
        read_query_id(str(checkpoint))
    assert os.listdir(checkpoint) == ([] if content is None else ["metadata"])  # nothing created


@pytest.mark.parametrize("location, expected", [
    ("hdfs://namenode/ck", "on hdfs:, which the kstream sink cannot read"),
    ("file://otherhost/ck", "names host 'otherhost'"),
    ("  ", "is empty"),
])
def test_checkpoints_the_sink_cannot_read_are_refused_with_what_to_do(location, expected):
    with pytest.raises(CheckpointError, match=expected):
        read_query_id(location)


def _task(options, writer, values):
    return write_task(SinkOptions.from_options(options), writer.sink_id,
                      iter([pa.record_batch({"value": values})]))


def test_a_fresh_checkpoint_at_a_reused_path_is_a_new_query_whose_batches_are_written(cluster_path, make_topic,
                                                                                      tmp_path):
    """The issue's repro without Spark: query 1 commits batch 0, its checkpoint is removed, a new
    query starts on the same path and commits its own batch 0: both are written."""
    make_topic("out", 1)
    checkpoint = tmp_path / "ck"
    spark_checkpoint(checkpoint)
    options = {"cluster": cluster_path, "topic": "out", "checkpointLocation": str(checkpoint)}
    first = KStreamStreamWriter(options)
    first.commit([_task(options, first, [b"q1-a", b"q1-b"])], 0)
    shutil.rmtree(checkpoint)
    spark_checkpoint(checkpoint)  # Spark starts the new query: a new id in a new metadata file
    second = KStreamStreamWriter(options)
    assert second.sink_id != first.sink_id
    second.commit([_task(options, second, [b"q2-a"])], 0)
    assert sorted(consume_values(cluster_path, "out", 1)) == [b"q1-a", b"q1-b", b"q2-a"]


def test_one_checkpoint_spelled_two_ways_commits_a_replayed_batch_once(cluster_path, make_topic, tmp_path):
    make_topic("out", 1)
    checkpoint = tmp_path / "ck"
    spark_checkpoint(checkpoint)
    plain = {"cluster": cluster_path, "topic": "out", "checkpointLocation": str(checkpoint)}
    uri = {**plain, "checkpointLocation": f"file://{checkpoint}"}
    before, after = KStreamStreamWriter(plain), KStreamStreamWriter(uri)
    before.commit([_task(plain, before, [b"r"] * 50)], 3)
    after.commit([_task(uri, after, [b"r"] * 50)], 3)  # the replay after a crash, under the other spelling
    assert consume_values(cluster_path, "out", 1) == [b"r"] * 50
    store = SinkStore(Cluster.open(cluster_path))
    assert all(store.transactions.first_open_offset("out", p) is None for p in range(1))


def test_a_batch_older_than_the_last_committed_is_a_rolled_back_checkpoint(cluster_path, make_topic, tmp_path):
    """Spark replays only its newest batch: an older one means the checkpoint went back, and
    the commit says so instead of passing rows it did not write as written."""
    make_topic("out", 1)
    checkpoint = tmp_path / "ck"
    spark_checkpoint(checkpoint)
    options = {"cluster": cluster_path, "topic": "out", "checkpointLocation": str(checkpoint)}
    writer = KStreamStreamWriter(options)
    for batch in range(3):
        writer.commit([_task(options, writer, [f"b{batch}".encode()])], batch)
    with pytest.raises(CheckpointError, match="committed batch 2 of this query already.*fresh checkpoint"):
        writer.commit([_task(options, writer, [b"again"])], 1)
    assert consume_values(cluster_path, "out", 1) == [b"b0", b"b1", b"b2"]
    store = SinkStore(Cluster.open(cluster_path))
    assert store.transactions.first_open_offset("out", 0) is None  # the refused batch's rows were aborted


def test_only_the_newest_committed_batch_of_a_sink_is_kept(cluster_path, make_topic, tmp_path):
    make_topic("out", 1)
    spark_checkpoint(tmp_path / "ck")
    options = {"cluster": cluster_path, "topic": "out", "checkpointLocation": str(tmp_path / "ck")}
    writer = KStreamStreamWriter(options)
    for batch in range(5):
        writer.commit([_task(options, writer, [b"v"])], batch)
    cluster = Cluster.open(cluster_path)
    rows = cluster.metadata.connection.execute("SELECT batch_id, state FROM sink_batches").fetchall()
    assert rows == [(4, "Committed")]

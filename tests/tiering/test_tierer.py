"""The tierer: the Delta table holds exactly the committed records of the sealed segments."""

from __future__ import annotations

import os
import subprocess
import sys

import duckdb
import pyarrow as pa
import pytest
from deltalake import DeltaTable
from tier_helpers import SEGMENT_BYTES, fill, lake_rows, oracle, recorded_ends, sealed_ends

from kstream import NewTopic, Producer
from kstream.errors import ConfigError
from kstream.log.cluster.cluster import Cluster
from kstream.tiering import Tierer, TierError
from kstream.tiering.lake_table import app_id, lake_schema

PARTITIONS = 2


@pytest.fixture
def tiered(cluster_path, make_topic, tmp_path):
    lake = str(tmp_path / "lake" / "t")
    make_topic("t", PARTITIONS, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": lake})
    fill(cluster_path, "t", PARTITIONS)
    return lake


def tier(cluster_path, **kwargs):
    cluster = Cluster.open(cluster_path)
    try:
        return Tierer(cluster).run(**kwargs)
    finally:
        cluster.close()


def expected(cluster_path, topic="t"):
    """The oracle's rows below each partition's lake end (the sealed end: no transaction is open)."""
    ends = sealed_ends(cluster_path, topic)
    return [row for row in oracle(cluster_path, topic, PARTITIONS) if row[1] < ends[row[0]]], ends


def test_lake_holds_the_committed_records_of_sealed_segments(cluster_path, tiered):
    want, ends = expected(cluster_path)
    assert all(end > 0 for end in ends.values()), "the topic must have sealed segments"
    done = tier(cluster_path, force=True)
    assert {d.partition: d.end_offset for d in done} == ends
    got = lake_rows(tiered)
    assert got == want  # same offsets, keys, values, headers, timestamps; nothing else
    values = [row[3] for row in got]
    assert not any(v.startswith(b"aborted") for v in values)
    assert any(v.startswith(b"committed") for v in values)
    # Control frames hold offsets but no row: the lake's offsets have the markers' gaps.
    offsets = [row[1] for row in got if row[0] == 0]
    assert len(offsets) < ends[0] and offsets == sorted(set(offsets))
    assert recorded_ends(cluster_path, "t") == ends
    table = DeltaTable(tiered)
    assert {table.transaction_version(app_id(Cluster.open(cluster_path).topic("t").topic_id, p))
            for p in range(PARTITIONS)} == set(ends.values())
    assert table.metadata().partition_columns == ["partition"]


def test_a_second_run_copies_nothing(cluster_path, tiered):
    tier(cluster_path, force=True)
    version = DeltaTable(tiered).version()
    rows = lake_rows(tiered)
    again = tier(cluster_path, force=True)
    assert all(d.commits == 0 and d.waiting == "nothing sealed to copy" for d in again)
    assert DeltaTable(tiered).version() == version and lake_rows(tiered) == rows


def test_new_sealed_segments_are_appended_after_the_lake_end(cluster_path, tiered):
    tier(cluster_path, force=True)
    fill(cluster_path, "t", PARTITIONS, rounds=4)
    tier(cluster_path, force=True)
    want, _ = expected(cluster_path)
    assert lake_rows(tiered) == want


def test_not_due_waits_for_the_lag_bounds(cluster_path, tiered, admin):
    done = tier(cluster_path)  # tier.lag.ms 10 min, tier.lag.bytes 256 MiB: nothing is due
    assert all(d.commits == 0 and d.waiting.startswith("not due") for d in done)
    assert not os.path.exists(tiered)
    admin.cluster.alter_topic_config("t", {"tier.lag.bytes": "1"})
    done = tier(cluster_path)
    assert all(d.commits == 1 for d in done)


def test_lso_bounds_the_copy(cluster_path, tiered):
    """An open transaction holds the LSO inside sealed segments: the lake stops at it."""
    tx = Producer({"cluster": cluster_path, "transactional.id": "holder", "linger.ms": 0})
    tx.init_transactions()
    tx.begin_transaction()
    tx.produce("t", b"open", partition=0)
    tx.flush()
    first_open = sealed_ends(cluster_path, "t")[0]  # not exact: the open record may share a segment
    fill(cluster_path, "t", 1, rounds=4)
    try:
        done = {d.partition: d for d in tier(cluster_path, force=True)}
        lso = _lso(cluster_path)
        assert done[0].end_offset == lso and lso >= first_open
        assert all(row[1] < lso for row in lake_rows(tiered) if row[0] == 0)
        assert b"open" not in [row[3] for row in lake_rows(tiered)]
    finally:
        tx.abort_transaction()
        tx.close()
    tier(cluster_path, force=True)
    want, _ = expected(cluster_path)
    assert lake_rows(tiered) == want


def _lso(cluster_path):
    from kstream.log.partition_bounds import bounds

    cluster = Cluster.open(cluster_path)
    try:
        return bounds(cluster, "t", 0).last_stable_offset
    finally:
        cluster.close()


def test_the_table_is_a_plain_delta_table(cluster_path, tiered):
    """Read with another engine: duckdb over the Parquet files the Delta log lists."""
    tier(cluster_path, force=True)
    table = DeltaTable(tiered)
    files = table.file_uris()
    assert files and all(f.endswith(".parquet") for f in files)
    got = duckdb.sql(f"SELECT count(*), count(DISTINCT (\"offset\", \"partition\")) FROM read_parquet({files!r}, "
                     "hive_partitioning = true)").fetchall()[0]
    assert got[0] == got[1] == len(lake_rows(tiered))
    assert table.protocol().min_reader_version == 1  # any Delta reader reads it


def test_typed_topic_tiers_its_own_columns(cluster_path, admin, tmp_path):
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
    lake = str(tmp_path / "typed")
    admin.create_topics([NewTopic("typed", 1, 1, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": lake},
                                  schema=schema)])["typed"].result()
    with Producer({"cluster": cluster_path}) as producer:
        for start in range(0, 400, 20):
            producer.produce_batch("typed", pa.table({"id": list(range(start, start + 20)),
                                                      "name": [f"n{i}" for i in range(start, start + 20)]}))
    tier(cluster_path, force=True)
    table = DeltaTable(lake).to_pyarrow_table()
    assert table.schema.names == lake_schema(schema).names
    assert table.schema.names[:3] == ["key", "id", "name"]
    end = sealed_ends(cluster_path, "typed")[0]
    assert sorted(table.column("id").to_pylist()) == list(range(end))


def test_a_table_of_another_topic_is_refused(cluster_path, tiered, make_topic):
    tier(cluster_path, force=True)
    make_topic("other", 1, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": tiered})
    fill(cluster_path, "other", 1)
    cluster = Cluster.open(cluster_path)
    try:
        with pytest.raises(TierError, match="Delta table kstream did not make for this topic"):
            Tierer(cluster).run_topic("other", force=True)
    finally:
        cluster.close()


def test_a_directory_with_other_files_is_refused(cluster_path, tiered):
    os.makedirs(tiered)
    with open(os.path.join(tiered, "notes.txt"), "w") as f:
        f.write("mine")
    with pytest.raises(ConfigError, match="holds files but no Delta table"):
        tier(cluster_path, force=True)
    assert os.listdir(tiered) == ["notes.txt"]


def test_an_untiered_topic_is_refused(cluster_path, make_topic):
    make_topic("plain")
    cluster = Cluster.open(cluster_path)
    try:
        with pytest.raises(TierError, match="is not tiered"):
            Tierer(cluster).run_topic("plain")
        assert Tierer(cluster).tiered_topics() == []
    finally:
        cluster.close()


def _crash_run(cluster_path, point, commit_max_bytes=None):
    env = dict(os.environ, KSTREAM_CRASH_AT=point, PYTHONPATH=os.pathsep.join(sys.path))
    code = ("import sys; from kstream.log.cluster.cluster import Cluster; from kstream.tiering import tierer; "
            f"tierer.COMMIT_MAX_BYTES = {commit_max_bytes or 1 << 30}; "
            "tierer.Tierer(Cluster.open(sys.argv[1])).run(force=True)")
    return subprocess.run([sys.executable, "-c", code, cluster_path], env=env, timeout=120)


@pytest.mark.parametrize("point,commit_max_bytes", [
    ("tier.delta-committed", None),  # the first commit: the table is new, no row written
    ("tier.metadata-recorded", None),
    ("tier.delta-committed:3", 1),  # a commit per segment: the third one lands, its row does not
    ("tier.metadata-recorded:2", 1),
])
def test_killed_between_commit_and_metadata_then_restarted(cluster_path, tiered, point, commit_max_bytes):
    """SIGKILL after a Delta commit, before (or after) its metadata rows: the restarted tierer
    copies nothing twice, loses nothing, and the rows are reconciled from the Delta log."""
    want, ends = expected(cluster_path)
    assert _crash_run(cluster_path, point, commit_max_bytes).returncode == -9
    committed = DeltaTable(tiered)
    in_lake = lake_rows(tiered)
    assert len(in_lake) == len(set(in_lake)) and set(in_lake) <= set(want)
    recorded = recorded_ends(cluster_path, "t")
    topic_id = Cluster.open(cluster_path).topic("t").topic_id
    lake_ends = {p: committed.transaction_version(app_id(topic_id, p)) or 0 for p in range(PARTITIONS)}
    for p, end in recorded.items():  # the cache is never ahead of Delta
        assert end <= lake_ends[p]
    # The lake holds exactly the oracle's rows below each partition's Delta end: no torn commit.
    assert in_lake == [row for row in want if row[1] < lake_ends[row[0]]]
    if point.startswith("tier.delta-committed"):
        assert recorded != lake_ends  # the kill came before the rows of the last commit
    tier(cluster_path, force=True)
    assert lake_rows(tiered) == want
    assert recorded_ends(cluster_path, "t") == ends


def test_many_commits_when_segments_exceed_the_commit_bound(cluster_path, tiered, monkeypatch):
    from kstream.tiering import tierer

    monkeypatch.setattr(tierer, "COMMIT_MAX_BYTES", 1)
    done = tier(cluster_path, force=True)
    assert all(d.commits > 2 for d in done)
    want, _ = expected(cluster_path)
    assert lake_rows(tiered) == want
    assert DeltaTable(tiered).version() + 1 == sum(d.commits for d in done)  # one partition per commit here


def test_metadata_ahead_of_delta_is_reconciled_down(cluster_path, tiered):
    """A row above the table (the table restored from an older copy): Delta wins; the log still
    has the offsets, so they are copied again."""
    from kstream.log.cluster.lake_offsets import LakeOffsets

    tier(cluster_path, force=True)
    want = lake_rows(tiered)
    cluster = Cluster.open(cluster_path)
    try:
        info = cluster.topic("t")
        LakeOffsets(cluster.metadata).record("t", info.topic_id, {0: 10_000}, 99)
        Tierer(cluster).run(force=True)
    finally:
        cluster.close()
    assert recorded_ends(cluster_path, "t") == sealed_ends(cluster_path, "t")
    assert lake_rows(tiered) == want


def test_lake_lost_below_the_log_start_is_an_error(cluster_path, make_topic, tmp_path):
    lake = str(tmp_path / "gone")
    make_topic("g", 1, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": lake,
                               "retention.bytes": "1"})
    fill(cluster_path, "g", 1)
    tier(cluster_path, force=True)
    cluster = Cluster.open(cluster_path)
    try:
        handle = cluster.partition("g", 0)
        assert handle.leader_log.apply_retention() > 0  # the lake holds them: retention deletes
        handle.close()
        os.rename(lake, lake + ".old")  # the table is lost
        with pytest.raises(TierError, match="are in neither"):
            Tierer(cluster).run_topic("g", force=True)
    finally:
        cluster.close()


def test_partitions_share_one_commit(cluster_path, tiered):
    done = tier(cluster_path, force=True)
    assert [d.commits for d in done] == [1] * PARTITIONS and DeltaTable(tiered).version() == 0


def test_typed_topic_added_column_evolves_the_table(cluster_path, admin, tmp_path):
    schema = pa.schema([pa.field("id", pa.int64())])
    lake = str(tmp_path / "evolving")
    admin.create_topics([NewTopic("ev", 1, 1, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": lake},
                                  schema=schema)])["ev"].result()

    def produce(start, columns):
        with Producer({"cluster": cluster_path}) as producer:
            for first in range(start, start + 200, 20):
                producer.produce_batch("ev", pa.table({name: make(first) for name, make in columns.items()}))

    produce(0, {"id": lambda f: list(range(f, f + 20))})
    tier(cluster_path, force=True)
    admin.evolve_schema("ev", schema.append(pa.field("note", pa.string())))
    produce(200, {"id": lambda f: list(range(f, f + 20)), "note": lambda f: [f"n{i}" for i in range(f, f + 20)]})
    tier(cluster_path, force=True)
    table = DeltaTable(lake).to_pyarrow_table().sort_by("offset")
    assert "note" in table.schema.names
    end = sealed_ends(cluster_path, "ev")[0]
    ids, notes = table.column("id").to_pylist(), table.column("note").to_pylist()
    assert ids == list(range(end))
    assert all(note is None for i, note in zip(ids, notes, strict=True) if i < 200)
    assert all(note == f"n{i}" for i, note in zip(ids, notes, strict=True) if i >= 200)


def test_a_deleted_topic_forgets_its_lake_ends(cluster_path, tiered, admin, make_topic, tmp_path):
    tier(cluster_path, force=True)
    assert recorded_ends(cluster_path, "t")
    admin.delete_topics(["t"])["t"].result()
    make_topic("t", PARTITIONS, config={"segment.bytes": SEGMENT_BYTES,
                                        "tier.delta.path": str(tmp_path / "lake2")})
    assert recorded_ends(cluster_path, "t") == {}
    # The old table is another incarnation's: pointing the new topic at it is refused.
    admin.cluster.alter_topic_config("t", {"tier.delta.path": tiered, "segment.bytes": SEGMENT_BYTES})
    fill(cluster_path, "t", PARTITIONS, rounds=2)
    with pytest.raises(TierError, match="created again under this name"):
        tier(cluster_path, force=True)


def test_a_corrupt_sealed_segment_fails_the_pass_and_records_nothing(cluster_path, tiered):
    """A bad frame in a sealed segment: the pass raises the engine's CorruptBatchError (naming
    the file), nothing is committed or recorded, and the log is left as it was."""
    from kstream.errors import CorruptBatchError
    from kstream.log.storage import format as fmt
    from kstream.log.storage.retention import list_segment_bases

    cluster = Cluster.open(cluster_path)
    handle = cluster.partition("t", 0)
    path = os.path.join(handle.leader_dir, fmt.segment_file_name(list_segment_bases(handle.leader_dir)[1]))
    handle.close()
    cluster.close()
    with open(path, "r+b") as f:
        f.seek(fmt.HEADER_SIZE + 40)
        byte = f.read(1)
        f.seek(fmt.HEADER_SIZE + 40)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(CorruptBatchError, match=os.path.basename(path)):
        tier(cluster_path, force=True)
    assert recorded_ends(cluster_path, "t") == {}
    assert not DeltaTable.is_deltatable(tiered)

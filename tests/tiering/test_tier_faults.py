"""The tierer on a failing lake disk: a commit whose fsync failed is made durable before its
lake end is recorded (retention trusts that row)."""

from __future__ import annotations

import json
import os
import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from tier_helpers import SEGMENT_BYTES, fill, lake_rows, oracle, recorded_ends

from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import faults
from kstream.tiering import Tierer, TierError
from kstream.tiering.lake_table import LakeTable

PARTITIONS = 2


@pytest.fixture
def tiered(cluster_path, make_topic, tmp_path):
    lake = str(tmp_path / "lake" / "t")
    make_topic("t", PARTITIONS, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": lake})
    fill(cluster_path, "t", PARTITIONS, rounds=2)
    return lake


@pytest.fixture
def journal(tmp_path, monkeypatch):
    path = str(tmp_path / "journal")
    # monkeypatch first, so it restores the journal as it was before (start_journal sets the
    # module's JOURNAL: taken after it, the "original" would be this test's journal, left on
    # for every later test of the process)
    monkeypatch.setattr(faults, "ENABLED", True)
    monkeypatch.setattr(faults, "JOURNAL", None)
    faults.start_journal(path)
    return path


def tier(cluster_path):
    cluster = Cluster.open(cluster_path)
    try:
        return Tierer(cluster).run(force=True)
    finally:
        cluster.close()


def _durable(journal: str, path: str) -> bool:
    """Whether the power-cut journal saw an fsync of ``path`` (its content is then durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        key = faults.inode_key(fd)
    finally:
        os.close(fd)
    return os.path.exists(os.path.join(journal, "files", key))


def test_a_failed_fsync_of_a_data_file_fails_the_pass_before_anything_is_committed(cluster_path, tiered, journal):
    tier(cluster_path)  # the table exists; later segments wait
    fill(cluster_path, "t", PARTITIONS, rounds=2)
    before = recorded_ends(cluster_path, "t")
    faults.inject(tiered, "ENOSPC", only_fsync=True)  # the disk fills: the data files' fsyncs fail
    with pytest.raises(TierError, match=r"nothing was recorded.*|No space left on device.*nothing was recorded"):
        tier(cluster_path)
    assert not os.path.exists(os.path.join(tiered, "_delta_log", f"{1:020d}.json"))  # no commit names them
    assert recorded_ends(cluster_path, "t") == before
    faults.clear(tiered)
    tier(cluster_path)
    assert recorded_ends(cluster_path, "t") != before


def test_a_failed_fsync_of_the_commit_is_a_tier_error_and_the_next_pass_makes_it_durable(cluster_path, tiered,
                                                                                        journal):
    tier(cluster_path)  # the table exists; later segments wait
    fill(cluster_path, "t", PARTITIONS, rounds=2)
    before = recorded_ends(cluster_path, "t")
    log_dir = os.path.join(tiered, "_delta_log")
    faults.inject(log_dir, "ENOSPC", only_fsync=True)  # the data files are durable; the commit's fsync fails
    with pytest.raises(TierError, match=r"landed but could not be made durable: .*No space left on device"):
        tier(cluster_path)
    commit = os.path.join(log_dir, f"{1:020d}.json")
    assert os.path.exists(commit) and not _durable(journal, commit)
    assert recorded_ends(cluster_path, "t") == before  # retention may not trust the commit yet
    faults.clear(log_dir)
    tier(cluster_path)
    assert _durable(journal, commit)  # made durable before its lake end was recorded
    assert recorded_ends(cluster_path, "t") != before


def test_an_unwritable_lake_fails_the_pass_with_a_tier_error_naming_the_table(cluster_path, tiered, journal):
    tier(cluster_path)
    fill(cluster_path, "t", PARTITIONS, rounds=2)
    before = recorded_ends(cluster_path, "t")
    faults.inject(tiered, "EROFS")
    with pytest.raises(TierError, match=rf"{tiered}.*Read-only file system"):
        tier(cluster_path)
    assert recorded_ends(cluster_path, "t") == before
    faults.clear(tiered)
    tier(cluster_path)
    assert recorded_ends(cluster_path, "t") != before


def test_a_commit_whose_file_a_crash_tore_is_not_recorded(cluster_path, tiered, journal):
    """A table tiered by a kstream before issue 24's fix (delta-rs wrote the data files and
    the commit, the tierer fsynced them after): the machine crashed before those fsyncs, the
    commit file survived, a Parquet file it names did not whole. The next pass must not record
    the commit's lake end (retention would delete what the table lacks)."""

    from deltalake import DeltaTable

    tier(cluster_path)
    before = recorded_ends(cluster_path, "t")
    fill(cluster_path, "t", PARTITIONS, rounds=2)
    log_dir = os.path.join(tiered, "_delta_log")
    faults.inject(log_dir, "EIO", only_fsync=True)  # the commit lands; the pass dies before its fsyncs
    with pytest.raises(TierError):
        tier(cluster_path)
    faults.clear(log_dir)
    version = DeltaTable(tiered).version()
    with open(os.path.join(tiered, "_delta_log", f"{version:020d}.json"), encoding="utf-8") as f:
        added = [json.loads(line)["add"]["path"] for line in f if '"add"' in line]
    with open(os.path.join(tiered, added[0]), "r+b") as f:
        f.truncate(100)  # the page cache never reached the disk
    with pytest.raises(TierError, match=rf"commit {version} names .* but the file has 100\b"):
        tier(cluster_path)
    assert recorded_ends(cluster_path, "t") == before


class _MachineDiedError(Exception):
    """The power went out: nothing after this point of the pass ran."""


def test_a_power_cut_right_after_the_commit_keeps_every_file_it_names_whole(cluster_path, tiered, journal,
                                                                         monkeypatch, tmp_path):
    """The power goes out right after the Delta commit file is written, before the tierer's
    fsyncs after it: whatever a cut keeps, a commit that survived names only whole data files
    (they were fsynced before the commit was written), so the table reads."""
    from deltalake import DeltaTable

    from chaos.power_cut import CutReport, Journal, build

    tier(cluster_path)  # the table exists, durably
    fill(cluster_path, "t", PARTITIONS, rounds=2)

    def died(self, version):
        raise _MachineDiedError(version)

    want = oracle(cluster_path, "t", PARTITIONS)
    monkeypatch.setattr(LakeTable, "_durable", died)
    with pytest.raises(_MachineDiedError):
        tier(cluster_path)
    version = DeltaTable(tiered).version()
    topic_id = DeltaTable(tiered).metadata().description.rpartition("topic id ")[2].rstrip(")")
    root = os.path.dirname(tiered)
    kept = 0
    for seed in range(12):
        target = str(tmp_path / f"cut-{seed}")
        build(root, target, Journal(journal), random.Random(seed), CutReport(), is_root=True)
        lake = os.path.join(target, "t")
        owner = LakeTable(lake, "t", topic_id)
        owner.recover()  # a commit file the cut tore is set aside (never trusted: not fsynced)
        table = owner.open()
        kept += table.version() == version
        added = pc.sum(pa.table(table.get_add_actions()).column("num_records")).as_py()
        got = lake_rows(lake)  # every file the table names is whole
        assert len(got) == added
        ends = {p: owner.end_offset(table, p) for p in range(PARTITIONS)}
        assert got == [row for row in want if row[1] < ends[row[0]]]  # each record below the lake end, once
    assert kept  # some cut kept the commit (its entry reached the disk)


def test_a_checkpoint_a_power_cut_tore_is_set_aside_by_the_next_pass(cluster_path, tiered, journal):
    """delta-rs writes a checkpoint after every 100th commit and fsyncs it not: a cut can tear
    it (the tierer fsyncs it after the commit). The next pass sets it aside and goes on."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    tier(cluster_path)
    DeltaTable(tiered).create_checkpoint()
    log_dir = os.path.join(tiered, "_delta_log")
    checkpoint = next(name for name in os.listdir(log_dir) if name.endswith(".checkpoint.parquet"))
    with open(os.path.join(log_dir, checkpoint), "r+b") as f:
        f.truncate(100)  # its pages never reached the disk
    with pytest.raises(DeltaError):  # a precondition: delta-rs cannot read the table so
        DeltaTable(tiered).to_pyarrow_table()
    fill(cluster_path, "t", PARTITIONS, rounds=2)
    want = oracle(cluster_path, "t", PARTITIONS)
    tier(cluster_path)
    ends = recorded_ends(cluster_path, "t")
    assert lake_rows(tiered) == [row for row in want if row[1] < ends[row[0]]]
    assert os.path.exists(os.path.join(log_dir, checkpoint + ".torn"))


def test_a_first_commit_that_did_not_land_leaves_files_the_next_pass_writes_among(cluster_path, tiered, journal,
                                                                                   monkeypatch):
    """The tierer died after writing the first commit's data files, before the commit: the
    directory holds ``partition=N`` files and no table. The next pass makes the table there."""
    from kstream.tiering import lake_table

    def died(*args, **kwargs):
        raise _MachineDiedError("before the first commit")

    with monkeypatch.context() as patch:
        patch.setattr(lake_table, "create_table_with_add_actions", died)
        with pytest.raises(_MachineDiedError):
            tier(cluster_path)
    assert any(name.startswith("partition=") for name in os.listdir(tiered))
    want = oracle(cluster_path, "t", PARTITIONS)
    tier(cluster_path)
    ends = recorded_ends(cluster_path, "t")
    assert lake_rows(tiered) == [row for row in want if row[1] < ends[row[0]]]
    assert all(end > 0 for end in ends.values())


@pytest.mark.parametrize("tear", ["last add line lost", "cut mid-line", "empty"])
def test_a_commit_file_a_power_cut_tore_is_set_aside_and_its_range_copied_again(cluster_path, tiered, journal,
                                                                                 monkeypatch, tear):
    """The commit file's entry reached the disk, not all its pages (it was not fsynced yet, so
    nothing recorded its end): the next pass sets it aside and copies its range again."""
    tier(cluster_path)
    fill(cluster_path, "t", PARTITIONS, rounds=2)
    before = recorded_ends(cluster_path, "t")
    want = oracle(cluster_path, "t", PARTITIONS)

    def died(self, version):
        raise _MachineDiedError(version)

    with monkeypatch.context() as patch:
        patch.setattr(LakeTable, "_durable", died)
        with pytest.raises(_MachineDiedError):
            tier(cluster_path)
    commit = os.path.join(tiered, "_delta_log", f"{1:020d}.json")
    with open(commit, "rb") as f:
        lines = f.read().split(b"\n")
    assert sum(b'"add"' in line for line in lines) == 2  # a file per partition
    if tear == "last add line lost":  # torn at a page boundary that fell between two lines
        kept = b"\n".join(lines[:max(i for i, line in enumerate(lines) if b'"add"' in line)])
    elif tear == "cut mid-line":
        kept = b"\n".join(lines)[:len(b"\n".join(lines)) // 2]
    else:
        kept = b""
    with open(commit, "wb") as f:
        f.write(kept)
    assert recorded_ends(cluster_path, "t") == before
    tier(cluster_path)
    ends = recorded_ends(cluster_path, "t")
    assert ends != before
    assert lake_rows(tiered) == [row for row in want if row[1] < ends[row[0]]]
    assert os.path.exists(commit + ".torn")

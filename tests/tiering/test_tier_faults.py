"""The tierer on a failing lake disk: a commit whose fsync failed is made durable before its
lake end is recorded (retention trusts that row)."""

from __future__ import annotations

import os

import pytest
from tier_helpers import SEGMENT_BYTES, fill, recorded_ends

from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import faults
from kstream.tiering import Tierer, TierError

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


def test_a_failed_fsync_is_a_tier_error_and_the_next_pass_makes_the_commit_durable(cluster_path, tiered, journal):
    tier(cluster_path)  # the table exists; later segments wait
    fill(cluster_path, "t", PARTITIONS, rounds=2)
    before = recorded_ends(cluster_path, "t")
    faults.inject(tiered, "ENOSPC", only_fsync=True)  # the disk fills: delta-rs wrote, fsync fails
    with pytest.raises(TierError, match=r"landed but could not be made durable: .*No space left on device"):
        tier(cluster_path)
    commit = os.path.join(tiered, "_delta_log", f"{1:020d}.json")
    assert os.path.exists(commit) and not _durable(journal, commit)
    assert recorded_ends(cluster_path, "t") == before  # retention may not trust the commit yet
    faults.clear(tiered)
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
    """The machine crashed after delta-rs wrote a commit, before the tierer fsynced it: the
    commit file survived, a Parquet file it names did not whole. The next pass must not record
    the commit's lake end (retention would delete what the table lacks)."""
    import json

    from deltalake import DeltaTable

    tier(cluster_path)
    before = recorded_ends(cluster_path, "t")
    fill(cluster_path, "t", PARTITIONS, rounds=2)
    faults.inject(tiered, "EIO", only_fsync=True)  # the commit lands; the pass dies before its fsyncs
    with pytest.raises(TierError):
        tier(cluster_path)
    faults.clear(tiered)
    version = DeltaTable(tiered).version()
    with open(os.path.join(tiered, "_delta_log", f"{version:020d}.json"), encoding="utf-8") as f:
        added = [json.loads(line)["add"]["path"] for line in f if '"add"' in line]
    with open(os.path.join(tiered, added[0]), "r+b") as f:
        f.truncate(100)  # the page cache never reached the disk
    with pytest.raises(TierError, match=rf"commit {version} names .* but the file has 100\b"):
        tier(cluster_path)
    assert recorded_ends(cluster_path, "t") == before

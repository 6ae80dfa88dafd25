"""The recovery point file's promise: durable before it counts, also when another process wrote it."""

from __future__ import annotations

import os

from kstream.log.storage import disk, recovery_point
from kstream.log.storage.recovery_point import RecoveryPointFile


def test_a_point_already_passed_by_an_unsynced_one_is_synced_before_it_counts(tmp_path, monkeypatch):
    """Writer A stages a point under the partition lock and fdatasyncs it outside the lock; A
    can be killed between the two. Writer B, flushing a lower point, finds the file already
    past its own: that content may be in the page cache only, so B must fdatasync it before
    B acknowledges (else a power cut leaves a point below B's acknowledged records, and the
    HW rebuilt from it hides them until the next write: the chaos class power_cut_txn,
    seeds 2 and 45)."""
    directory = str(tmp_path)
    RecoveryPointFile(directory).write((0, 0, 0))  # the file exists (created durably)
    writer_a = RecoveryPointFile(directory)
    staged = writer_a.stage((0, 2000, 20), only_forward=True)
    assert staged is not None
    os.close(staged)  # A is killed before its fdatasync

    synced = []
    real = disk.fdatasync

    def record(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(disk, "fdatasync", record)
    monkeypatch.setattr(recovery_point.disk, "fdatasync", record)
    writer_b = RecoveryPointFile(directory)
    writer_b.advance((0, 1000, 10))  # behind A's staged point
    assert synced == [writer_b.path]
    assert writer_b.read() == (0, 2000, 20)  # and the point stays A's: it only moves forward


def test_a_point_at_the_synced_one_is_synced_again_cheaply_and_not_rewritten(tmp_path):
    directory = str(tmp_path)
    points = RecoveryPointFile(directory)
    points.write((0, 100, 5))
    before = os.stat(points.path).st_mtime_ns
    fd = points.stage((0, 100, 5), only_forward=True)
    assert fd is not None  # the caller fdatasyncs it (a no-op for the disk when nothing is dirty)
    os.close(fd)
    assert os.stat(points.path).st_mtime_ns == before  # nothing written
    assert points.read() == (0, 100, 5)

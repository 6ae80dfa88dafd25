"""The transaction index under power cuts: unsynced entries lost, torn or kept, frames kept or not.

A writer appends plain frames, transactional data of several producers and markers,
flushing now and then (acks=all: the recovery point moves only after the index is
fdatasynced). The power-cut journal (:mod:`kstream.log.storage.faults`) records what each
fsync made durable; :mod:`chaos.power_cut` builds states a power loss could leave.
In every state, a reader's view from the files equals the truth of the frames that
survived (below any high watermark a reader could be given): no uncommitted or aborted
record is ever shown as committed. A writer reopening the state recovers the index to
exactly one entry per transactional frame.
"""

from __future__ import annotations

import os
import random
import shutil

import pytest

from chaos.power_cut import CutReport, Journal, build, key_of, sync_all
from helpers import encoded, open_log
from kstream.log.storage import format as fmt
from kstream.log.storage.frames import FrameWalk, pread_from
from kstream.log.storage.retention import list_segment_bases
from kstream.log.storage.txn_index import txn_index_path
from kstream.log.storage.txn_index_reader import read_recovery_point
from txn_helpers import assert_files_match_frames, file_entries, frame_events, marker, oracle, txn_data

_CONFIG = dict(segment_bytes=2500, index_interval_bytes=400)


def _history(replica: str, rng: random.Random, steps: int) -> None:
    log = open_log(replica, **_CONFIG)
    try:
        for _ in range(steps):
            choice = rng.random()
            producer = rng.randrange(1, 4)
            if choice < 0.2:
                log.append(encoded([b"p" * 80]))
            elif choice < 0.6:
                log.append(txn_data([b"d" * 80] * rng.randrange(1, 3), producer))
            elif choice < 0.8:
                log.append(marker(producer, commit=rng.random() < 0.5))
            else:
                log.flush()
    finally:
        log.close()


def _readable_end(replica: str) -> int:
    """The end of the contiguous valid frames: the most any high watermark could cover."""
    end = 0
    for base in list_segment_bases(replica):
        path = os.path.join(replica, fmt.segment_file_name(base))
        fd = os.open(path, os.O_RDONLY)
        try:
            walk = FrameWalk(pread_from(fd), os.fstat(fd).st_size, 0, next_offset=base)
            for _, header in walk:
                end = header.next_offset
            if walk.problem is not None:
                return end
        finally:
            os.close(fd)
    return end


def _check_cut_state(replica: str) -> None:
    end = _readable_end(replica)
    point = read_recovery_point(replica)
    durable = 0 if point is None else min(point.next_offset, end)
    for high_watermark in sorted({durable, end, (durable + end) // 2}):
        assert_files_match_frames(replica, high_watermark)


@pytest.mark.parametrize("seed", range(12))
def test_after_a_power_cut_readers_see_the_surviving_frames_truth(tmp_path, journal, seed):
    root = str(tmp_path / "root")
    replica = os.path.join(root, "t-0")
    os.makedirs(replica)
    sync_all([root], journal)
    rng = random.Random(seed)
    _history(replica, rng, 60)
    for cut_seed in range(4):
        target = str(tmp_path / f"cut-{cut_seed}")
        shutil.rmtree(target, ignore_errors=True)
        build(root, target, Journal(journal), random.Random(seed * 100 + cut_seed), CutReport(), is_root=True)
        cut = os.path.join(target, "t-0")
        _check_cut_state(cut)
        # The next writer recovers: one entry per frame again, and readers still agree.
        log = open_log(cut, **_CONFIG)
        log.append(txn_data([b"after"], 2))
        log.append(marker(2, commit=False))
        log.flush()
        log.close()
        entries = [e for base in list_segment_bases(cut) for e in file_entries(cut, base)]
        assert entries == frame_events(cut)
        end = _readable_end(cut)
        assert_files_match_frames(cut, end)


def test_lost_unsynced_index_bytes_with_the_frames_kept_hide_nothing_they_should_not(tmp_path, journal):
    """The worst case on purpose: the index keeps only what was fsynced (or that plus half an
    entry), every frame survives. The aborted transaction past the recovery point stays hidden."""
    replica = str(tmp_path / "t-0")
    log = open_log(replica)
    log.append(txn_data([b"committed"], 1))   # 0
    log.append(marker(1, commit=True))       # 1
    log.flush()                              # the recovery point covers 0-1; the index is synced
    log.append(txn_data([b"aborted"], 2))     # 2
    log.append(txn_data([b"open"], 3))        # 3
    log.append(marker(2, commit=False))       # 4
    path = txn_index_path(replica, 0)
    durable = Journal(journal).content(key_of(path))
    assert durable is not None and len(durable) == 2 * fmt.TXN_INDEX_ENTRY_SIZE
    for kept in (durable, durable + fmt.pack_txn_entry(fmt.TXN_DATA, 2, 2)[:13], b""):
        with open(path, "wb") as f:
            f.write(kept)
        assert_files_match_frames(replica, 5)
        open_, aborted = oracle(frame_events(replica), 5)
        assert aborted == [(2, 2, 4)] and open_ == {3: 3}
    log.close()


def test_entries_past_the_log_end_after_a_cut_tail_are_not_trusted(tmp_path):
    """A power cut kept an index page but not the frame it names (both unsynced): the entry
    lies past the recovery point and the log end; readers ignore it, the next writer drops it."""
    replica = str(tmp_path / "t-0")
    log = open_log(replica)
    log.append(txn_data([b"a"], 1))
    log.append(marker(1, commit=True))
    log.flush()
    log.close()
    with open(txn_index_path(replica, 0), "ab") as f:
        f.write(fmt.pack_txn_entry(fmt.TXN_DATA, 9, 2))
    assert_files_match_frames(replica, 2)
    log = open_log(replica)
    log.append(encoded([b"plain"]))  # offset 2: not transactional
    log.flush()
    assert file_entries(replica, 0) == [(fmt.TXN_DATA, 1, 0), (fmt.TXN_COMMIT, 1, 1)]
    assert_files_match_frames(replica, 3)
    log.close()


def test_a_bit_flip_in_a_sealed_index_makes_readers_derive_that_segment(tmp_path):
    replica = str(tmp_path / "t-0")
    log = open_log(replica, segment_bytes=700)
    for i in range(10):
        log.append(txn_data([b"v" * 100], i % 2))
        log.append(marker(i % 2, commit=i % 3 == 0))
    log.flush()
    end = log.log_end_offset()
    log.close()
    first = list_segment_bases(replica)[0]
    path = txn_index_path(replica, first)
    with open(path, "r+b") as f:
        f.seek(5)
        f.write(b"\xff")
    assert_files_match_frames(replica, end)

"""The leader epoch checkpoint under power cuts.

A replica's first epoch entry is written without fsync (it has no file to
be stale); every later one is fsynced before its frame. In every state a
power loss could leave, loading the cache gives exactly the epochs of the
frames that survived: never fewer (a stale file hiding an epoch), never one
past the log end.
"""

from __future__ import annotations

import os
import random
import shutil

import pytest

from chaos.power_cut import CutReport, Journal, build, key_of, sync_all
from helpers import encoded, open_log
from kstream.log.storage.leader_epochs import FILE_NAME, LeaderEpochCache, scan_epochs


def test_the_first_entry_is_not_synced_and_later_ones_are(tmp_path, journal):
    replica = str(tmp_path / "t-0")
    log = open_log(replica)
    log.append(encoded([b"a"]), leader_epoch=0)
    epoch_file = os.path.join(replica, FILE_NAME)
    assert LeaderEpochCache.load(replica).entries == [(0, 0)]
    assert Journal(journal).content(key_of(epoch_file)) is None  # nothing fsynced it
    log.append(encoded([b"b"]), leader_epoch=3)
    with open(epoch_file, "rb") as f:
        assert Journal(journal).content(key_of(epoch_file)) == f.read()  # durable before frame 1
    log.close()


@pytest.mark.parametrize("seed", range(8))
def test_after_a_power_cut_the_cache_names_the_epochs_of_the_surviving_frames(tmp_path, journal, seed):
    root = str(tmp_path / "root")
    replica = os.path.join(root, "t-0")
    os.makedirs(replica)
    sync_all([root], journal)
    rng = random.Random(seed)
    log = open_log(replica)
    epoch = 0
    for _ in range(rng.randrange(1, 6)):
        if rng.random() < 0.4:
            epoch += rng.randrange(1, 3)
        log.append(encoded([b"x" * 50]), leader_epoch=epoch)
        if rng.random() < 0.5:
            log.flush()
    log.close()
    for cut_seed in range(4):
        target = str(tmp_path / f"cut-{cut_seed}")
        shutil.rmtree(target, ignore_errors=True)
        build(root, target, Journal(journal), random.Random(seed * 100 + cut_seed), CutReport(), is_root=True)
        cut = os.path.join(target, "t-0")
        truth = scan_epochs(cut)  # what the surviving frames say
        reopened = open_log(cut)
        end = reopened.log_end_offset()
        reopened.close()
        loaded = LeaderEpochCache.load(cut, end).entries
        assert loaded == [e for e in truth if e[1] < end], (seed, cut_seed)

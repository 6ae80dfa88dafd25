"""Replacing a replica's segments by their cleaned copies, atomically under the fault model.

One clean of a replica is one decision for all the segments it rewrote
(docs/FORMAT.md, "Cleaned segments")::

    1. build   <replica>/cleaner-staging/<base>.{log,index,timeindex,txnindex}
               for every rewritten segment; fsync each file, fsync cleaner-staging
    2. decide  rename cleaner-staging -> cleaner-swap; fsync the replica dir
    3. logs    rename cleaner-swap/<base>.log -> <base>.log (over the old one) for
               each segment; fsync the replica dir
    4. indexes rename cleaner-swap/<base>.{txnindex,index,timeindex} over the old
               ones; fsync the replica dir
    5. done    remove cleaner-swap; fsync the replica dir

Before step 2 is durable nothing changed: recovery removes ``cleaner-staging``.
After it, the swap is decided: recovery (:func:`finish_swap`, on every writer's
open of the replica, under the partition lock) redoes steps 3 to 5 with what is
left in ``cleaner-swap`` (renames are idempotent: a file already moved is gone
from it, or, after a power cut, moved again with the same inode). Logs move and
are made durable before their ``.txnindex``: a reader may meet a cleaned log with
its old ``.txnindex`` (which lists a superset of its transactional frames: still
right), never an old log with a cleaned ``.txnindex``. The offset and time
indexes are hints readers check, so their order does not matter.

A reader that has an old segment file open keeps reading it (the records before
cleaning); renaming over a file never changes what an open descriptor or a
memory map sees.
"""

from __future__ import annotations

import logging
import os
import shutil

from kstream.log.storage import format as fmt
from kstream.log.storage.disk import fsync_dir
from kstream.log.storage.faults import crash_point

log = logging.getLogger(__name__)

SWAP_DIR = "cleaner-swap"
_INDEX_SUFFIXES = (fmt.TXN_INDEX_SUFFIX, fmt.OFFSET_INDEX_SUFFIX, fmt.TIME_INDEX_SUFFIX)


def staging_dir(directory: str) -> str:
    """Where a clean builds its new segment files (emptied first)."""
    path = os.path.join(directory, fmt.CLEANER_STAGING_DIR)
    if os.path.exists(path):
        shutil.rmtree(path)
    os.mkdir(path)
    return path


def building_dir(directory: str) -> str:
    """Where a clean that does not hold the partition lock builds its files (a killed clean's
    leftover removed first; the caller holds the partition's cleaner lock, so no clean is
    building there)."""
    path = os.path.join(directory, fmt.CLEANER_BUILDING_DIR)
    if os.path.exists(path):
        shutil.rmtree(path)
    os.mkdir(path)
    return path


def swap_in(directory: str, staging: str) -> None:
    """Steps 2 to 5 for the fsynced files in ``staging`` (step 1 is the caller's)."""
    fsync_dir(staging)
    crash_point("clean.staged")
    os.rename(staging, os.path.join(directory, SWAP_DIR))
    fsync_dir(directory)
    crash_point("clean.swap-decided")
    finish_swap(directory)


def finish_swap(directory: str) -> bool:
    """Recovery (and the end of :func:`swap_in`): finish a decided swap, or drop an undecided
    one. True when a decided swap was finished. Caller holds the partition lock."""
    staging = os.path.join(directory, fmt.CLEANER_STAGING_DIR)
    if os.path.exists(staging):
        shutil.rmtree(staging)  # undecided: the old segments stand
        fsync_dir(directory)
        log.warning("%s: dropped an unfinished clean (nothing had changed)", directory)
    swap = os.path.join(directory, SWAP_DIR)
    if not os.path.isdir(swap):
        return False
    names = os.listdir(swap)
    for name in sorted(names):
        if name.endswith(fmt.LOG_SUFFIX):
            os.rename(os.path.join(swap, name), os.path.join(directory, name))
    fsync_dir(directory)
    crash_point("clean.log-replaced")
    for name in sorted(names):
        if name.endswith(_INDEX_SUFFIXES):
            os.rename(os.path.join(swap, name), os.path.join(directory, name))
    fsync_dir(directory)
    crash_point("clean.indexes-replaced")
    shutil.rmtree(swap)
    fsync_dir(directory)
    return True

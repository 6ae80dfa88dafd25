"""A replica's ``cleaner-offset-checkpoint``: the offset the last clean of the replica ended at.

Contract:

* Below it, every frame has been cleaned: at most one record per key, no aborted record (the
  cleaner writes it only once the cleaned segments are swapped in, fsynced). Readers trust
  that (the JVM reader's latestPerKey first pass reads only the part above it; a Table's
  snapshot refuses an ``as_of`` below it), so it must never cover a record the cleaner has not
  seen.
* A truncation (a follower cut back to where it agrees with the leader, an unclean leader
  election, a restart at the leader's log start) lowers it to the new log end *before* any
  frame is cut (:func:`lower_checkpoint`, written durably): the offsets past the cut are then
  written again with records no clean has seen. A crash between the two leaves it lower than
  it could be (more of the log counts as dirty: safe), never above the log end. Kafka lowers its
  checkpoint after the truncation, with the partition's cleaning paused
  (``LogCleanerManager.maybeTruncateCheckpoint``); lowering first makes the crash order safe
  without a pause.
* A checkpoint found above the log end when a writer opens the replica (written by a version
  without the rule above, or a log cut back by recovery) is lowered to the log end then, before
  anything is appended: everything below the log end was below it, so still cleaned.
* Written ``.tmp``, fsync, rename, fsync the directory. A missing or damaged file is "never
  cleaned" (all dirty): always safe, only slower.
"""

from __future__ import annotations

import logging
import os

from kstream.log.storage import format as fmt
from kstream.log.storage.durable_file import write_atomically

log = logging.getLogger(__name__)


def read_checkpoint(directory: str) -> int | None:
    """The first dirty offset the last clean of this replica recorded (None: never cleaned)."""
    try:
        with open(os.path.join(directory, fmt.CLEANER_CHECKPOINT_FILE), encoding="ascii") as f:
            text = f.read().strip()
    except FileNotFoundError:
        return None
    return int(text) if text.isdigit() else None  # a damaged hint counts as none


def write_checkpoint(directory: str, offset: int) -> None:
    """Record where the next clean's dirty part starts, durably."""
    write_atomically(os.path.join(directory, fmt.CLEANER_CHECKPOINT_FILE), f"{offset}\n".encode("ascii"))


def lower_checkpoint(directory: str, offset: int, why: str) -> bool:
    """Lower the checkpoint to ``offset`` if it is above it, durably (before the offsets from
    ``offset`` on are written again: see the module). Returns whether it moved. ``why`` goes
    into the log line. Caller holds the partition lock."""
    checkpoint = read_checkpoint(directory)
    if checkpoint is None or checkpoint <= offset:
        return False
    write_checkpoint(directory, offset)
    log.info("%s: cleaner-offset-checkpoint lowered from %d to %d (%s): the offsets from %d on are "
             "written again, uncleaned", directory, checkpoint, offset, why, offset)
    return True

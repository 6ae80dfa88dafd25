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
* Written ``.tmp``, fsync, rename, fsync the directory. A missing file is "never cleaned" (all
  dirty). A file that exists but cannot be read or holds no offset was damaged or edited: a
  latestPerKey read (:func:`read_trusted_checkpoint`, and the JVM reader's CleanerCheckpoint)
  and a Table (its key index's ``as_of`` check and its reads across a clean) fail naming it,
  since they cannot tell which part the cleaner reduced; the cleaner and a truncation
  (:func:`read_checkpoint`) count a damaged one as none (all dirty: safe, only slower), and
  the next clean writes it whole again.
"""

from __future__ import annotations

import logging
import os

from kstream.errors import KStreamError
from kstream.log.storage import format as fmt
from kstream.log.storage.durable_file import write_atomically

log = logging.getLogger(__name__)

MAX_OFFSET_DIGITS = 18  # the most digits an offset written there has (the JVM reader's long)
MAX_CHECKPOINT_BYTES = 64  # read no more of a file than an offset and its newline could take, with room
QUOTED_CHARS = 40  # the most of a damaged file's content an error quotes


LATEST_PER_KEY_REMEDY = ("delete it (the partition then counts as never cleaned, which is safe: the next clean "
                         "writes it again) and run the read again")
"""What a latestPerKey read's error asks (reading every record as dirty is safe there)."""


def read_trusted_checkpoint(directory: str, reader: str = "a latestPerKey read",
                            remedy: str = LATEST_PER_KEY_REMEDY) -> int | None:
    """The first dirty offset the last clean of this replica recorded, as a reader that trusts it
    needs it: None when the file is missing (never cleaned); a KStreamError naming the file when
    it exists but cannot be read or holds no offset (the JVM reader's CleanerCheckpoint.read,
    word for word, for the default ``reader`` and ``remedy``: who cannot go on, and what to do)."""
    path = os.path.join(directory, fmt.CLEANER_CHECKPOINT_FILE)
    try:
        text = _read_text(path)
    except OSError as err:
        raise KStreamError(_damaged(path, f"cannot be read ({err})", reader, remedy)) from err
    if text is None:
        return None
    offset = _offset_of(text)
    if offset is None:
        quoted = text if len(text) <= QUOTED_CHARS else text[:QUOTED_CHARS] + "..."
        raise KStreamError(_damaged(path, f"holds '{quoted}', not an offset", reader, remedy))
    return offset


def read_checkpoint(directory: str) -> int | None:
    """The first dirty offset the last clean of this replica recorded, as the cleaner and a
    truncation read it: None when never cleaned, or when the file holds no offset (damaged: all
    dirty, safe for them; the next clean writes it whole). An OSError when it cannot be read (the
    storage engine's disk-failure handling sees it as any other I/O error)."""
    text = _read_text(os.path.join(directory, fmt.CLEANER_CHECKPOINT_FILE))
    return None if text is None else _offset_of(text)


def _read_text(path: str) -> str | None:
    """The file's text, stripped; None when it is missing (OSError when it cannot be read)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_CHECKPOINT_BYTES + 1)
    except FileNotFoundError:
        return None
    return raw.decode("ascii", errors="replace").strip()


def _offset_of(text: str) -> int | None:
    """The offset ``text`` holds, or None when it is not one (what the writer writes: digits)."""
    return int(text) if 0 < len(text) <= MAX_OFFSET_DIGITS and text.isascii() and text.isdigit() else None


def _damaged(path: str, problem: str, reader: str, remedy: str) -> str:
    return (f"the log cleaner's checkpoint {path} {problem}: kstream writes it whole, so it was damaged or edited, "
            f"and {reader} cannot tell which part of the partition the cleaner reduced; {remedy}")


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

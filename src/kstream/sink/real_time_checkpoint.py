"""A Real-time Mode checkpoint left by a driver killed while Spark wrote the logs of the query's
first batch, made restartable again.

Spark 4.3 writes a Real-time Mode batch's offset log entry at the *end* of the batch, right
before its commit log entry (``MicroBatchExecution.markMicroBatchEnd``: ``offsetLog.add`` then
``commitLog.add``), each as a temp file renamed into place (``CheckpointFileManager.createAtomic``:
``.<batch>.<uuid>.tmp`` and, on a local file system, its checksum ``..<batch>.<uuid>.tmp.crc``).
A driver SIGKILLed between the creation of such a temp file and its rename leaves the temp file
behind. On restart, Real-time Mode drops offset log entries that have no commit
(``initializeExecution``: ``offsetLog.purgeAfter(lastCommittedBatchId)``); for the first batch
that leaves no offset log entry at all, so Spark takes the query for a new one and checks that
``offsets/``, ``state/`` and ``commits/`` are empty (``populateStartOffsets`` ->
``verifyNewCheckpointDirectory``, on by default: ``spark.sql.streaming.verifyCheckpointDirectoryEmptyOnStart``).
The temp file fails that check: the query stops at once with
``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY`` ("<checkpoint>/commits should be empty on batch 0").
After the first batch the same temp file is harmless (Spark resumes from the last committed
batch and writes its next entry under a new temp name).

:func:`sweep_unfinished_first_batch` removes those temp files when, and only when, the checkpoint
is exactly in that state: no committed batch, an offset log holding at most batch 0, no state,
and nothing in ``offsets/`` or ``commits/`` but batch 0's entry and temp files. A temp file is
a write that never completed: not a log entry (Spark's own ``cancel()`` deletes it). Spark then
starts batch 0 again from the source's starting offsets, and the Real-time sink drops the
source positions the output already holds (docs/JVM_WRITER.md, "A driver killed in the first
batch").
"""

from __future__ import annotations

import logging
import os
import re

from kstream.errors import CheckpointError
from kstream.log.storage.disk import fsync_dir
from kstream.sink.query_identity import metadata_path

OFFSETS_DIR = "offsets"  # Spark's StreamingCheckpointConstants.DIR_NAME_OFFSETS
COMMITS_DIR = "commits"  # DIR_NAME_COMMITS
STATE_DIR = "state"  # DIR_NAME_STATE
FIRST_BATCH = "0"
# CheckpointFileManager.createTempPath: ".<name>.<random UUID>[.TID<task attempt>].tmp"; Hadoop's
# ChecksumFileSystem keeps "." + file name + ".crc" beside each file of a local checkpoint.
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
FIRST_BATCH_TEMP = re.compile(rf"^\.{FIRST_BATCH}\.{_UUID}(\.TID\d+)?\.tmp$")
FIRST_BATCH_TEMP_CRC = re.compile(rf"^\.\.{FIRST_BATCH}\.{_UUID}(\.TID\d+)?\.tmp\.crc$")
FIRST_BATCH_ENTRY = (FIRST_BATCH, f".{FIRST_BATCH}.crc")  # a whole batch-0 offset log entry
MAX_DIR_ENTRIES = 64  # batch 0's entry, its checksum and a few kills' temp files; more is not this state

_log = logging.getLogger(__name__)


def _is_temp(name: str) -> bool:
    return bool(FIRST_BATCH_TEMP.match(name) or FIRST_BATCH_TEMP_CRC.match(name))


def _entries(path: str) -> list[str] | None:
    """The names in directory ``path`` (``[]`` when it does not exist), or None when there are
    more than this module's state could hold."""
    try:
        names = os.listdir(path)
    except FileNotFoundError:
        return []
    except OSError as err:
        raise CheckpointError(f"cannot list the streaming checkpoint's {path}: {err}") from err
    return names if len(names) <= MAX_DIR_ENTRIES else None


def unfinished_first_batch_files(checkpoint_location: str) -> list[str]:
    """The temp files a driver killed while writing batch 0's offset or commit log entry left in
    the checkpoint (absolute paths, sorted), when the checkpoint holds nothing else of a started
    query; ``[]`` otherwise (nothing committed yet and no temp files, or a query past batch 0:
    Spark restarts those itself)."""
    root = os.path.dirname(metadata_path(checkpoint_location))
    offsets = _entries(os.path.join(root, OFFSETS_DIR))
    commits = _entries(os.path.join(root, COMMITS_DIR))
    state = _entries(os.path.join(root, STATE_DIR))
    if offsets is None or commits is None or state is None or state:
        return []  # too many entries to be this state (None), or a state: a query that ran
    if any(not _is_temp(name) for name in commits):
        return []  # a committed batch (or a file that is not Spark's): Spark decides
    if any(not _is_temp(name) and name not in FIRST_BATCH_ENTRY for name in offsets):
        return []  # an offset log past batch 0
    temps = [os.path.join(root, OFFSETS_DIR, n) for n in offsets if _is_temp(n)]
    temps += [os.path.join(root, COMMITS_DIR, n) for n in commits]
    return sorted(temps)


def sweep_unfinished_first_batch(checkpoint_location: str) -> list[str]:
    """Remove what :func:`unfinished_first_batch_files` finds (each directory fsynced after);
    returns the removed paths. Call it before the query starts on the checkpoint, never while a
    query runs on it."""
    removed = unfinished_first_batch_files(checkpoint_location)
    for path in removed:
        try:
            os.remove(path)
        except FileNotFoundError:
            continue
        except OSError as err:
            raise CheckpointError(f"cannot remove {path}, an unfinished write of the streaming checkpoint's first "
                                  f"batch that stops Spark from restarting the query: {err}") from err
    for directory in sorted({os.path.dirname(p) for p in removed}):
        fsync_dir(directory)
    if removed:
        _log.warning("checkpoint %s: the driver was killed while Spark wrote batch 0's offset/commit log; removed "
                     "its unfinished temp files %s so that Real-time Mode can start batch 0 again (the sink drops "
                     "the source positions the output already holds)", checkpoint_location,
                     [os.path.basename(p) for p in removed])
    return removed

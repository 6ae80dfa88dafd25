"""The disk layer: the one way kstream makes data durable, and the check before a write.

Every fsync and fdatasync of a file, and every fsync of a directory's entries
(created, renamed, deleted files: STYLE 3, write ``.tmp``, fsync, rename, fsync
the directory), goes through :func:`fsync`, :func:`fdatasync` and
:func:`fsync_dir`; every write-side operation on a replica first calls
:func:`check_writable`. In production each is the plain system call (one
boolean test more). The test hooks of :mod:`kstream.log.storage.faults` (a log
dir failing as a dying disk would, the power-cut journal) are asked here, and
only when one is on; they are read from that module at each call, so a test that
switches one on or off is seen at once.
"""

from __future__ import annotations

import os

from kstream.log.storage import faults


def fsync(fd: int) -> None:
    """``os.fsync(fd)``, recorded in the power-cut journal and subject to injected faults."""
    if faults.ENABLED or faults.JOURNAL is not None:
        faults.before_sync(fd)
    os.fsync(fd)


def fdatasync(fd: int) -> None:
    """``os.fdatasync(fd)``, as :func:`fsync` (the journal records the same either way)."""
    if faults.ENABLED or faults.JOURNAL is not None:
        faults.before_sync(fd)
    os.fdatasync(fd)


def fsync_dir(directory: str) -> None:
    """Make a directory's entries (created, renamed, deleted files) durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        fsync(fd)
    finally:
        os.close(fd)


def check_writable(replica_dir: str) -> None:
    """Before a write-side operation on a replica: raise the OSError its log dir fails with
    (a failing disk; only ever injected by tests, :func:`kstream.log.storage.faults.check`)."""
    faults.check(replica_dir)

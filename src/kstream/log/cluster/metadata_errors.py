"""What a failing SQLite call on metadata.db means, said as a MetadataStorageError.

SQLite names a disk's failures in its own words: "database or disk is full"
(SQLITE_FULL), "disk I/O error" (SQLITE_IOERR and its extended codes),
"attempt to write a readonly database" (SQLITE_READONLY). A client that meets one
while reading or writing the cluster's metadata gets instead a
:class:`~kstream.errors.MetadataStorageError` naming the metadata.db path and
saying what to do, with SQLite's error as its cause. Other SQLite errors (busy,
corrupt, a constraint) are not the disk's and pass through unchanged.

A removed ``metadata.db-wal`` also reads as "disk I/O error": while any process
still has the database open, ``metadata.db-shm`` indexes the WAL's frames, and a
new connection finds a WAL file (which SQLite just re-created, empty) shorter than
that index says (SQLITE_IOERR_SHORT_READ). Commits not yet copied into metadata.db
were in the removed file. :func:`storage_error` recognises it (that short read, the
-shm file present, the -wal file missing or empty) and says so; nothing here ever
creates or repairs a database. A process that had the database open when its WAL
was removed would go on committing to the unlinked file, every commit lost:
:func:`check_wal`, run at the start of each write transaction, refuses that.

An I/O error on a file system with (nearly) no free space is taken for a full
disk: on one, even a reader fails (a new connection cannot size its -shm file).
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from kstream.errors import MetadataStorageError

SQLITE_READONLY = 8
SQLITE_IOERR = 10
SQLITE_FULL = 13
SQLITE_IOERR_SHORT_READ = SQLITE_IOERR | (2 << 8)
# Free space under which an I/O error is taken for a full disk: SQLite reports ENOSPC as
# SQLITE_FULL only on some writes; sizing the -shm file of a new connection on a full disk
# is SQLITE_IOERR_SHMSIZE, so even a reader fails then.
_NEARLY_FULL_BYTES = 1 << 20


def _wal_removed_error(path: str, how: str) -> MetadataStorageError:
    return MetadataStorageError(
        f"the WAL file of the cluster's metadata, {path}-wal, was removed (or emptied) {how}: metadata "
        "committed since the last checkpoint (topics, placement, producer and transaction state) was in "
        "that file and may be lost. Stop every process using this cluster; then restore metadata.db "
        "together with its -wal file from a backup, or, to accept the loss, move metadata.db-shm aside "
        "so SQLite reads metadata.db as of its last checkpoint (and check the topics with "
        "`kstream topics describe`)")


def wal_identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of the -wal file of the database at ``path``, or None if it has none."""
    try:
        stat = os.stat(path + "-wal")
    except FileNotFoundError:
        return None
    return stat.st_dev, stat.st_ino


def check_wal(path: str, opened: tuple[int, int] | None) -> None:
    """Raise MetadataStorageError if the -wal file is no longer the one a connection opened
    (``opened``, from :func:`wal_identity`; None: nothing to check). While any connection is
    open SQLite never removes or replaces the -wal file, so a different one was removed under it."""
    if opened is not None and wal_identity(path) != opened:
        raise _wal_removed_error(path, "while this process had it open")


def storage_error(path: str, err: sqlite3.Error) -> MetadataStorageError | None:
    """The MetadataStorageError that ``err`` (from a call on the database at ``path``) stands
    for, or None when it is not a storage failure. The caller raises it ``from err``."""
    code = getattr(err, "sqlite_errorcode", 0)
    primary = code & 0xFF  # extended codes keep the primary in the low byte
    name = getattr(err, "sqlite_errorname", "")
    if primary == SQLITE_FULL or (primary == SQLITE_IOERR and _disk_full(path)):
        return MetadataStorageError(
            f"the cluster's metadata {path} cannot be used: its file system is full ({err}"
            f"{', ' + name if name else ''}). Make free space there (`df {os.path.dirname(path) or '.'}`), "
            "then retry; the failed call changed nothing")
    if code == SQLITE_IOERR_SHORT_READ and wal_removed(path):
        return _wal_removed_error(path, f"while {path}-shm still indexes it ({err})")
    if primary == SQLITE_IOERR:
        return MetadataStorageError(
            f"the cluster's metadata {path} cannot be read or written: the disk reports an I/O error "
            f"({err}{', ' + name if name else ''}). Check the disk (dmesg, SMART) and that metadata.db "
            "and its -wal and -shm files are in place; restore them from a backup if the disk lost them")
    if primary == SQLITE_READONLY:
        return MetadataStorageError(
            f"the cluster's metadata {path} cannot be written: it is read-only ({err}). Give this process "
            "write permission on the cluster directory and its metadata files, or remount the file "
            "system read-write; read-only commands (docs/CLI.md) work as they are")
    return None


def _disk_full(path: str) -> bool:
    try:
        stat = os.statvfs(os.path.dirname(path) or ".")
    except OSError:
        return False
    return min(stat.f_bavail, stat.f_bfree) * stat.f_frsize < _NEARLY_FULL_BYTES


def wal_removed(path: str) -> bool:
    """True when ``path``'s -shm file exists but its -wal file is missing or empty: the sign of a
    WAL file removed under a live -shm (only ``stat``: opening a SQLite file outside SQLite
    would drop this process's locks on it)."""
    try:
        os.stat(path + "-shm")
    except FileNotFoundError:
        return False
    try:
        return os.stat(path + "-wal").st_size == 0
    except FileNotFoundError:
        return True


class MetadataConnection(sqlite3.Connection):
    """The connection :class:`kstream.log.cluster.metadata.Metadata` opens (``sqlite3.connect``'s
    ``factory``): its disk failures raise the MetadataStorageError of :func:`storage_error`,
    from SQLite's error; ``wal_identity`` is the -wal file it opened (:func:`check_wal`)."""

    database_path = ""
    wal_identity: tuple[int, int] | None = None

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        try:
            return super().execute(sql, parameters)
        except sqlite3.Error as err:
            mapped = storage_error(self.database_path, err)
            if mapped is None:
                raise
            raise mapped from err

    def executescript(self, sql_script: str, /) -> sqlite3.Cursor:
        try:
            return super().executescript(sql_script)
        except sqlite3.Error as err:
            mapped = storage_error(self.database_path, err)
            if mapped is None:
                raise
            raise mapped from err

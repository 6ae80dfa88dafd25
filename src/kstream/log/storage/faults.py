"""Test-only hooks: a log dir that fails as a dying disk would, and a power-cut journal.

Both are off by default; each then costs one boolean test. Both are read once,
at import, from the environment, so child processes inherit them. Production code
never calls them itself: the disk layer (:mod:`kstream.log.storage.disk`, every
fsync and the write-side check of a log dir) asks them, and only when one is on.

Failing disk (``KSTREAM_FAULT_INJECTION=1``): every write-side operation on a
replica first checks its log dir for a file ``.kstream-fault`` holding an
errno name (``EIO``, ``ENOSPC``, ``EROFS``) and fails with that error if present;
so does every fsync of a file or directory in it. Readers never check it, so
``EROFS`` is a file system remounted read-only: writes, creates and fsyncs fail,
reads work. With
a second word ``fsync`` (``EIO fsync``) only fsyncs fail, after the write
went through: the page cache holds data the disk refused. Permission tricks
cannot do this: tests run as root.

Power-cut journal (``KSTREAM_POWER_JOURNAL=/a/dir``): every fsync and
fdatasync kstream does goes through the disk layer's ``fsync`` / ``fdatasync``,
which first record (:func:`before_sync`) what the call makes durable: for a file, its content at
that moment; for a directory, its entries (name -> inode). Records are keyed
by (device, inode, inode generation), so a reused inode number is not taken
for the old file, and each is written as its own file (tmp, then rename)
under the journal's lock (:mod:`kstream.log.storage.file_lock`), so any
number of processes and threads can record into one journal and the last
record of an inode is the newest state.
``tests/chaos/power_cut.py`` then builds the tree a power loss could leave.
The record is made before the real fsync: a process killed during an fsync
counts it as done, which a power loss at that instant also allows.

Crash points (``KSTREAM_CRASH_AT=name[:n]``): :func:`crash_point` SIGKILLs the
process the n-th time (default the first) it passes the named point, so a test
can kill a child exactly between two steps of a protocol (the transaction's
steps: ``txn.offsets-sent``, ``txn.prepared``, ``txn.markers-written``,
``txn.offsets-applied``; the Spark sink's commit: ``sink.markers-fsynced``; see
docs/TRANSACTIONS.md).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import signal
import struct

from kstream.log.storage import file_lock

FAULT_FILE = ".kstream-fault"
ENABLED = os.environ.get("KSTREAM_FAULT_INJECTION") == "1"
JOURNAL_ENV = "KSTREAM_POWER_JOURNAL"
JOURNAL: str | None = os.environ.get(JOURNAL_ENV) or None

CRASH_ENV = "KSTREAM_CRASH_AT"
_CRASH_AT = (os.environ.get(CRASH_ENV) or "").partition(":")
_crash_countdown = {_CRASH_AT[0]: int(_CRASH_AT[2] or 1)} if _CRASH_AT[0] else {}

_FS_IOC_GETVERSION = 0x80087601  # the inode generation (ext4, xfs, btrfs, tmpfs)
_LONG = struct.Struct("l")


def _marker(log_dir: str) -> tuple[int, bool] | None:
    """(errno, fsync only) injected into ``log_dir``, or None."""
    try:
        with open(os.path.join(log_dir, FAULT_FILE), encoding="ascii") as f:
            words = f.read().split()
    except (FileNotFoundError, NotADirectoryError):
        return None
    name = words[0] if words else "EIO"
    return getattr(errno, name, errno.EIO), "fsync" in words[1:]


def crash_point(name: str) -> None:
    """SIGKILL this process here if ``KSTREAM_CRASH_AT`` names this point (tests only)."""
    if name in _crash_countdown:
        _crash_countdown[name] -= 1
        if _crash_countdown[name] <= 0:
            os.kill(os.getpid(), signal.SIGKILL)


def _raise(code: int, path: str) -> None:
    raise OSError(code, f"{os.strerror(code)} (injected)", path)


def check(replica_dir: str) -> None:
    """Raise the injected OSError for the log dir holding ``replica_dir``, if any (the disk
    layer's :func:`kstream.log.storage.disk.check_writable` asks it)."""
    if not ENABLED:
        return
    found = _marker(os.path.dirname(replica_dir.rstrip("/")))
    if found is not None and not found[1]:
        _raise(found[0], replica_dir)


def inject(log_dir: str, error: str = "EIO", only_fsync: bool = False) -> None:
    """Make ``log_dir`` fail every operation (or only fsyncs) with ``error`` (tests only)."""
    path = os.path.join(log_dir, FAULT_FILE)
    with open(path + ".tmp", "w", encoding="ascii") as f:
        f.write(error + (" fsync" if only_fsync else ""))
    os.rename(path + ".tmp", path)  # whole at once: a reader never sees it empty (read as EIO)


def clear(log_dir: str) -> None:
    try:
        os.unlink(os.path.join(log_dir, FAULT_FILE))
    except FileNotFoundError:
        pass


# -- what the disk layer (disk.py) asks before each fsync and write ---------------------------


def before_sync(fd: int) -> None:
    """Before an fsync of ``fd`` (called by :mod:`kstream.log.storage.disk` when a hook is on):
    raise the log dir's injected error, then record the file in the power-cut journal."""
    proc = f"/proc/self/fd/{fd}"
    if ENABLED:
        path = os.readlink(proc)
        for log_dir in (os.path.dirname(path), os.path.dirname(os.path.dirname(path))):
            found = _marker(log_dir)
            if found is not None:
                _raise(found[0], path)
    if JOURNAL is not None:
        record(JOURNAL, proc)


def inode_key(fd: int) -> str:
    """``dev-ino-generation`` of an open file: names the inode even if its number is reused."""
    st = os.fstat(fd)
    try:
        generation = _LONG.unpack(fcntl.ioctl(fd, _FS_IOC_GETVERSION, b"\0" * _LONG.size))[0]
    except OSError:
        generation = 0
    return f"{st.st_dev}-{st.st_ino}-{generation & 0xFFFFFFFF}"


def record(journal: str, path: str) -> None:
    """Record ``path`` (a file or directory, or /proc/self/fd/N) as durable as of now."""
    fd = os.open(path, os.O_RDONLY)
    try:
        key = inode_key(fd)
        is_dir = os.path.isdir(path)
        lock = os.open(os.path.join(journal, ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            # Read under the lock, so records of one inode land in the order of the reads.
            file_lock.lock_exclusive(lock)  # the lock kind a Java recorder takes too
            data = _listing(path) if is_dir else _content(fd)
            target = os.path.join(journal, "dirs" if is_dir else "files", key)
            tmp = f"{target}.{os.getpid()}.tmp"
            with open(tmp, "wb") as out:
                out.write(data)
            os.rename(tmp, target)
        finally:
            os.close(lock)
    finally:
        os.close(fd)


def _content(fd: int) -> bytes:
    data = b""
    while chunk := os.pread(fd, 1 << 20, len(data)):
        data += chunk
    return data


def _listing(path: str) -> bytes:
    """JSON: the directory's path and its entries, name -> [inode key, is a directory]."""
    entries = {}
    with os.scandir(path) as it:
        for entry in it:
            try:
                sub = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue  # gone meanwhile, or a symlink (kstream makes none)
            try:
                entries[entry.name] = [inode_key(sub), entry.is_dir(follow_symlinks=False)]
            finally:
                os.close(sub)
    real = os.readlink(path) if path.startswith("/proc/") else path
    return json.dumps({"path": real, "entries": entries}).encode()


def start_journal(journal: str) -> None:
    """Create ``journal`` and record into it from this process on (children: set the env)."""
    global JOURNAL
    for kind in ("files", "dirs"):
        os.makedirs(os.path.join(journal, kind), exist_ok=True)
    JOURNAL = journal

"""The one lock kind every kstream writer takes, in Python or in Java: flock and an OFD lock.

A lock file is locked twice, always in this order: ``flock(2)`` exclusive, then an
open-file-description (OFD) write lock (``fcntl(F_OFD_SETLKW)``) on the whole file (start 0,
length 0: to the end, however far it grows). Why both:

- Java's ``FileChannel.lock()`` (the Java writer, jvm/) takes a traditional POSIX record lock
  (``F_SETLK``) on the same range (``lock()`` is ``lock(0, Long.MAX_VALUE, false)``, which the
  JDK passes to the kernel as length 0). POSIX record locks and ``flock`` do not see each other
  on Linux, but POSIX record locks and OFD locks do: the OFD lock is what excludes Java.
- ``flock`` is what kstream took before (format version 1 as first released): a process of an
  older kstream takes only that, so keeping it excludes such a process during an upgrade.

One order everywhere (flock, then OFD) means two Python lockers never hold one half each and
wait for the other; Java takes only the POSIX lock, so it waits on no flock and cannot close a
cycle. Both are released by the kernel when the holder dies (even by SIGKILL), both belong to
the open file description (two ``open()`` s of one file in one process exclude each other, and a
forked child shares its parent's), and closing another descriptor of the same file releases
neither (unlike POSIX record locks, which is why the Java side keeps one channel per lock file;
docs/FORMAT.md, "The lock file").
"""

from __future__ import annotations

import fcntl
import os
import struct

# struct flock of 64-bit Linux (x86_64, aarch64): short l_type, short l_whence, off_t l_start,
# off_t l_len, pid_t l_pid, padded to 32 bytes. l_pid must be 0 when setting an OFD lock.
_FLOCK = struct.Struct("@hhqqi4x")
_OFD_SET = getattr(fcntl, "F_OFD_SETLK", None)  # Linux >= 3.15; elsewhere only flock is taken
_OFD_SET_WAIT = getattr(fcntl, "F_OFD_SETLKW", None)
_OFD_GET = getattr(fcntl, "F_OFD_GETLK", None)


def _whole_file(lock_type: int) -> bytes:
    return _FLOCK.pack(lock_type, os.SEEK_SET, 0, 0, 0)


def lock_exclusive(fd: int) -> None:
    """Take both locks on ``fd`` (opened for writing), waiting as long as another holds either."""
    fcntl.flock(fd, fcntl.LOCK_EX)
    if _OFD_SET_WAIT is None:
        return
    try:
        fcntl.fcntl(fd, _OFD_SET_WAIT, _whole_file(fcntl.F_WRLCK))
    except BaseException:
        fcntl.flock(fd, fcntl.LOCK_UN)
        raise


def try_lock_exclusive(fd: int) -> bool:
    """Take both locks on ``fd`` if nobody holds either now (True), else take neither (False)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    if _OFD_SET is None:
        return True
    try:
        fcntl.fcntl(fd, _OFD_SET, _whole_file(fcntl.F_WRLCK))
    except BlockingIOError:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except BaseException:
        fcntl.flock(fd, fcntl.LOCK_UN)
        raise
    return True


def unlock(fd: int) -> None:
    """Release both locks, in the reverse order of taking them."""
    try:
        if _OFD_SET is not None:
            fcntl.fcntl(fd, _OFD_SET, _whole_file(fcntl.F_UNLCK))
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def record_lock_holder(fd: int) -> int | None:
    """Who holds a record lock (OFD or POSIX) that conflicts with a write lock of the whole file:
    the pid of a POSIX holder (a Java writer), -1 for an OFD holder (the kernel does not say
    which process), None when nobody does. A diagnostic: the answer may be stale at once."""
    if _OFD_GET is None:
        return None
    raw = fcntl.fcntl(fd, _OFD_GET, _whole_file(fcntl.F_WRLCK))
    lock_type, _, _, _, pid = _FLOCK.unpack(raw)
    return None if lock_type == fcntl.F_UNLCK else pid

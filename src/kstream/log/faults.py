"""A test-only hook that makes a log dir fail, as a dying disk would.

With ``KSTREAM_FAULT_INJECTION=1`` in the environment (read once, at import;
tests set it, also for child processes), every write-side operation on a
replica first checks its log dir for a file ``.kstream-fault`` holding an
errno name (``EIO``, ``ENOSPC``) and fails with that error if present.
Permission tricks cannot do this: tests run as root. Off by default: then
the check is a single boolean test.
"""

from __future__ import annotations

import errno
import os

FAULT_FILE = ".kstream-fault"
ENABLED = os.environ.get("KSTREAM_FAULT_INJECTION") == "1"


def check(replica_dir: str) -> None:
    """Raise the injected OSError for the log dir holding ``replica_dir``, if any."""
    if not ENABLED:
        return
    marker = os.path.join(os.path.dirname(replica_dir.rstrip("/")), FAULT_FILE)
    try:
        with open(marker, encoding="ascii") as f:
            name = f.read().strip() or "EIO"
    except FileNotFoundError:
        return
    code = getattr(errno, name, errno.EIO)
    raise OSError(code, f"{os.strerror(code)} (injected)", replica_dir)


def inject(log_dir: str, error: str = "EIO") -> None:
    """Make ``log_dir`` fail every operation with ``error`` (tests only)."""
    with open(os.path.join(log_dir, FAULT_FILE), "w", encoding="ascii") as f:
        f.write(error)


def clear(log_dir: str) -> None:
    try:
        os.unlink(os.path.join(log_dir, FAULT_FILE))
    except FileNotFoundError:
        pass

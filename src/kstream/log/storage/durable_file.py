"""Small files replaced whole: written as ``.tmp``, fsynced, renamed, directory fsynced.

Used for the files a cluster keeps beside its logs (cluster.properties, a log
dir's meta.properties, metadata-snapshot.json). After a crash or power cut the
file is either the old one or the new one, never a mix (STYLE.md 3).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from kstream.log.storage import disk
from kstream.log.storage import format as fmt
from kstream.log.storage.disk import fsync_dir


def write_atomically(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data``, durably."""
    tmp = path + fmt.TMP_SUFFIX
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        disk.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, path)
    fsync_dir(os.path.dirname(path) or ".")


def read_properties(path: str) -> dict[str, str]:
    """``key=value`` lines of a properties file (``#`` starts a comment line)."""
    values: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                key, _, value = line.partition("=")
                values[key.strip()] = value.strip()
    return values


def write_properties_atomically(path: str, values: Mapping[str, str], comment: str) -> None:
    """Replace a properties file (a ``# comment`` line, then ``key=value`` lines), durably."""
    lines = [f"# {comment}\n"] + [f"{key}={value}\n" for key, value in values.items()]
    write_atomically(path, "".join(lines).encode("utf-8"))

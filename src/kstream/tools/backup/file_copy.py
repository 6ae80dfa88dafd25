"""Copying a live cluster's files into a backup: whole files, or the tail appended since.

:class:`FileCopier` copies a file as it is when opened (up to the size it has then, so a
writer appending meanwhile adds nothing half-way) and fsyncs the copy. It remembers what it
copied of each file (the source's identity and the bytes copied), so a second pass over
an append-only file (a segment ``.log``) copies only the bytes appended since, unless the
file was replaced (a new inode: a torn tail cut, a compacted segment) or shrank: then it
is copied again whole. A source file that vanishes between its listing and its copy
(retention, a topic deletion, Delta's log clean-up) is no error: the copy has none either.

Nothing here writes to the source: files are opened ``O_RDONLY``. Not thread-safe (one
per backup).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kstream.log.storage.disk import fsync, fsync_dir

CHUNK_BYTES = 1 << 20
"""Bytes read and written per call: the copy's only buffer."""


@dataclass(frozen=True)
class Copied:
    """What was copied of one source file: its identity (device, inode) and size then."""

    identity: tuple[int, int]
    size: int


class FileCopier:
    """Copies files into a backup, fsynced, and counts the bytes (see the module docstring)."""

    def __init__(self) -> None:
        self.bytes_copied = 0
        self._copied: dict[str, Copied] = {}  # destination path -> what it holds of its source
        self._dirs: set[str] = set()  # directories whose entries changed: fsynced by sync_dirs

    def copy(self, source: str, destination: str, append_only: bool = False) -> int | None:
        """Copy ``source`` to ``destination`` as it is now; the bytes it holds (None: the
        source is gone, and so is the copy). ``append_only``: the file only grows while its
        inode stays, so a copy made earlier gets just the new bytes."""
        try:
            fd = os.open(source, os.O_RDONLY)
        except FileNotFoundError:
            self.remove(destination)
            return None
        try:
            stat = os.fstat(fd)
            identity, size = (stat.st_dev, stat.st_ino), stat.st_size
            before = self._copied.get(destination)
            start = 0
            if (append_only and before is not None and before.identity == identity
                    and before.size <= size and os.path.exists(destination)):
                start = before.size
            flags = os.O_WRONLY | os.O_CREAT | (0 if start else os.O_TRUNC)
            if not os.path.exists(destination):
                self._dirs.add(os.path.dirname(destination))
            out = os.open(destination, flags, 0o644)
            try:
                if start:
                    os.ftruncate(out, start)  # (it holds exactly that already)
                position = start
                while position < size:
                    data = os.pread(fd, min(CHUNK_BYTES, size - position), position)
                    if not data:
                        break  # shrank under us (a .txnindex cut in place): what is there
                    os.pwrite(out, data, position)
                    position += len(data)
                fsync(out)
            finally:
                os.close(out)
        finally:
            os.close(fd)
        self.bytes_copied += position - start
        self._copied[destination] = Copied(identity, position)
        return position

    def remove(self, destination: str) -> None:
        """Drop a copied file whose source is gone."""
        try:
            os.remove(destination)
        except FileNotFoundError:
            return
        self._copied.pop(destination, None)
        self._dirs.add(os.path.dirname(destination))

    def make_dir(self, destination: str) -> None:
        if not os.path.isdir(destination):
            os.makedirs(destination)
            self._dirs.add(destination)
            self._dirs.add(os.path.dirname(destination.rstrip("/")))

    def note_changed(self, directory: str) -> None:
        """A directory whose entries changed outside this copier (fsynced by sync_dirs)."""
        self._dirs.add(directory)

    def sync_dirs(self) -> None:
        """fsync every directory whose entries changed, deepest first, so each new name is
        durable before the name of the directory holding it."""
        for directory in sorted(self._dirs, key=lambda d: d.count(os.sep), reverse=True):
            if os.path.isdir(directory):
                fsync_dir(directory)
        self._dirs.clear()

"""Build the on-disk state a power loss could leave, from the power-cut journal.

The journal (``kstream.log.storage.faults``, ``KSTREAM_POWER_JOURNAL``) holds, per
inode, what the last fsync made durable: a file's content, a directory's
entries. After the writers are killed (SIGKILL keeps the page cache, so the
tree on disk then holds everything written), :func:`build` makes a new tree
from the old one where, with a seeded random choice for each:

* a directory keeps its durable entries; an entry created or renamed in since
  its last fsync is kept or not; a durable entry unlinked since may come back
  with its durable content; a renamed file shows under its old or its new
  name, never both (renames are atomic in the file system's journal);
* a file's content is its durable content plus none, all, a prefix (torn at a
  512-byte or 4 KiB boundary) or a random subset of the pages written since
  (pages not chosen read as their durable bytes, or zeros past the durable end).

Assumed durable as they are at the cut, because their fsyncs happen in C
where the journal cannot see them: SQLite's ``metadata.db`` (with ``-wal``,
``-shm``, ``-journal``; WAL with synchronous=FULL commits durably) and the
Delta offsets table ``__consumer_offsets`` (written by delta-rs, which
fsyncs each commit file). The roots given (cluster dir, log dirs) are
assumed to exist: they are mount points or were made long before.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from dataclasses import dataclass, field

from kstream.log.storage import faults

DURABLE_AS_IS = ("metadata.db", "metadata.db-wal", "metadata.db-shm", "metadata.db-journal",
                 "__consumer_offsets")
BEFORE_CUT = ".before-cut"


@dataclass
class CutReport:
    """What the cut did, for a failing round's diagnosis (paths are the new ones)."""

    dropped: list[str] = field(default_factory=list)   # entries not made durable, left out
    revived: list[str] = field(default_factory=list)   # unlinked durable entries brought back
    reverted: list[str] = field(default_factory=list)  # renames undone
    torn: dict[str, str] = field(default_factory=dict)  # file -> what of its unsynced writes survived

    def to_json(self) -> str:
        return json.dumps(self.__dict__, indent=1, sort_keys=True)


class Journal:
    """Read side of a power-cut journal directory."""

    def __init__(self, path: str):
        self.path = path

    def content(self, key: str) -> bytes | None:
        try:
            with open(os.path.join(self.path, "files", key), "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def entries(self, key: str) -> dict[str, tuple[str, bool]] | None:
        try:
            with open(os.path.join(self.path, "dirs", key), "rb") as f:
                raw = json.loads(f.read())
        except FileNotFoundError:
            return None
        return {name: (k, is_dir) for name, (k, is_dir) in raw["entries"].items()}


def key_of(path: str) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        return faults.inode_key(fd)
    finally:
        os.close(fd)


def sync_all(roots: list[str], journal: str) -> None:
    """Record every file and directory under ``roots`` as durable (a `sync` before a round)."""
    for root in roots:
        for directory, _dirs, files in os.walk(root):
            for name in files:
                faults.record(journal, os.path.join(directory, name))
            faults.record(journal, directory)


def power_cut(cluster_path: str, log_dirs: list[str], journal: str, seed: int) -> CutReport:
    """Replace the cluster's trees in place by a power-cut state; the originals stay at
    ``<root>.before-cut``. Log dirs inside the cluster dir are part of its tree."""
    roots = [cluster_path]
    for log_dir in log_dirs:
        if not os.path.abspath(log_dir).startswith(os.path.abspath(cluster_path) + os.sep):
            roots.append(log_dir)
    rng = random.Random(seed)
    report = CutReport()
    for root in roots:
        saved = root + BEFORE_CUT
        shutil.rmtree(saved, ignore_errors=True)
        os.rename(root, saved)
        build(saved, root, Journal(journal), rng, report, is_root=True)
    return report


def build(source: str, target: str, journal: Journal, rng: random.Random, report: CutReport,
          is_root: bool = False) -> None:
    """Write at ``target`` what a power cut could leave of the directory ``source``."""
    _build_dir(target, source, key_of(source), journal, rng, report, is_root)


def _scan(path: str) -> dict[str, tuple[str, bool]]:
    entries = {}
    with os.scandir(path) as it:
        for entry in it:
            if not entry.is_symlink():
                entries[entry.name] = (key_of(entry.path), entry.is_dir(follow_symlinks=False))
    return entries


def _build_dir(target: str, source: str | None, key: str, journal: Journal, rng: random.Random,
               report: CutReport, is_root: bool = False) -> None:
    """``source`` None: the directory is gone now; rebuild it from the journal alone."""
    os.makedirs(target)
    current = _scan(source) if source is not None else {}
    durable = journal.entries(key) or {}
    chosen: dict[str, tuple[str, bool, bool]] = {}  # name -> (key, is_dir, still exists now)
    # Renames within this directory: an inode durable under an old name that is now
    # gone or replaced, present under a new, not durable name. One of the two survives.
    moved_from = {d[0]: name for name, d in durable.items() if current.get(name, (None,))[0] != d[0]}
    moved_to = {c[0]: name for name, c in current.items() if durable.get(name, (None,))[0] != c[0]}
    renamed = {k: (moved_from[k], moved_to[k]) for k in moved_from.keys() & moved_to.keys()}
    for k, (old, new) in sorted(renamed.items()):
        if rng.random() < 0.5:
            chosen[old] = (k, durable[old][1], True)
            if new in durable:  # what the rename replaced is back
                chosen[new] = (durable[new][0], durable[new][1], False)
            report.reverted.append(os.path.join(target, new) + " -> " + old)
        else:
            chosen[new] = (k, current[new][1], True)
    handled = {name for pair in renamed.values() for name in pair}
    for name in sorted(durable.keys() | current.keys()):
        if name in handled:
            continue
        d, c = durable.get(name), current.get(name)
        if is_root and name in DURABLE_AS_IS and c is not None:
            chosen[name] = (c[0], c[1], True)
        elif d is not None and c is not None and d[0] == c[0]:
            chosen[name] = (c[0], c[1], True)
        elif d is not None and c is not None:  # replaced (renamed over) since the dir's fsync
            if rng.random() < 0.5:
                chosen[name] = (c[0], c[1], True)
            else:
                chosen[name] = (d[0], d[1], False)
                report.reverted.append(os.path.join(target, name))
        elif d is not None:  # unlinked since the dir's fsync
            if rng.random() < 0.5:
                chosen[name] = (d[0], d[1], False)
                report.revived.append(os.path.join(target, name))
        elif c is not None:  # created since
            if rng.random() < 0.5:
                chosen[name] = (c[0], c[1], True)
            else:
                report.dropped.append(os.path.join(target, name))
    for name, (k, is_dir, exists) in sorted(chosen.items()):
        old = None
        if exists and source is not None and name in current and current[name][0] == k:
            old = os.path.join(source, name)
        elif exists and source is not None:  # a rename reverted: the inode lives on under its new name
            old = next(os.path.join(source, n) for n, c in current.items() if c[0] == k)
        new = os.path.join(target, name)
        if is_root and name in DURABLE_AS_IS and old is not None:
            (shutil.copytree if is_dir else shutil.copyfile)(old, new)
        elif is_dir:
            _build_dir(new, old, k, journal, rng, report)
        else:
            data = cut_content(journal.content(k), _read(old) if old else None, rng)
            report_torn(report, new, journal.content(k), _read(old) if old else None, data)
            with open(new, "wb") as f:
                f.write(data)


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def report_torn(report: CutReport, path: str, durable: bytes | None, current: bytes | None,
                data: bytes) -> None:
    if current is not None and data != current:
        report.torn[path] = (f"{len(data)} of {len(current)} bytes "
                             f"(durable {'none' if durable is None else len(durable)})")


def cut_content(durable: bytes | None, current: bytes | None, rng: random.Random) -> bytes:
    """What a power cut leaves of a file: ``durable`` (the last fsync's content, None when
    never fsynced) plus none, all or part of the writes since, which made it ``current``
    (None: the file is unlinked now, and only its durable content can come back)."""
    base = durable if durable is not None else b""
    if current is None or current == base:
        return base
    page = rng.choice((512, 4096))
    mode = rng.choice(("none", "all", "prefix", "pages"))
    if mode == "none":
        return base
    if mode == "all":
        return current
    if mode == "prefix" and current.startswith(base):
        cuts = [*range(_round_up(len(base) + 1, page), len(current), page), len(current)]
        return current[:rng.choice(cuts)]
    # Some pages reached the disk, others not: an in-place rewrite or a torn append.
    low, high = sorted((len(base), len(current)))
    length = rng.choice([low, high, *range(_round_up(low + 1, page), high, page)])
    out = bytearray()
    for start in range(0, length, page):
        end = min(start + page, length)
        source = current if rng.random() < 0.5 else base
        chunk = source[start:end]
        out += chunk + b"\0" * (end - start - len(chunk))
    return bytes(out)


def _round_up(n: int, page: int) -> int:
    return -(-n // page) * page

"""The power-cut builder on a toy tree: it keeps what was fsynced and may drop the rest."""

from __future__ import annotations

import os
import random
import shutil

from chaos.power_cut import CutReport, Journal, build, cut_content, power_cut, sync_all
from kstream.log.storage import disk


def _write(path, data, mode="wb"):
    with open(path, mode) as f:
        f.write(data)
        f.flush()
        return f


def _fsync_file(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        disk.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        disk.fsync(fd)
    finally:
        os.close(fd)


def _cut(tmp_path, root, journal, seed):
    target = str(tmp_path / f"cut-{seed}")
    shutil.rmtree(target, ignore_errors=True)
    build(root, target, Journal(journal), random.Random(seed), CutReport(), is_root=True)
    return target


def _tree(root):
    out = {}
    for directory, _dirs, files in os.walk(root):
        for name in files:
            with open(os.path.join(directory, name), "rb") as f:
                out[os.path.relpath(os.path.join(directory, name), root)] = f.read()
    return out


def test_fsynced_then_appended_file_is_never_shorter_than_its_fsynced_content(tmp_path, journal):
    root = str(tmp_path / "root")
    os.makedirs(root)
    path = os.path.join(root, "log")
    durable = os.urandom(3000)
    _write(path, durable)
    _fsync_file(path)
    _fsync_dir(root)
    _write(path, os.urandom(20000), "ab")
    lengths = set()
    for seed in range(40):
        data = _tree(_cut(tmp_path, root, journal, seed))["log"]
        assert data[:len(durable)] == durable
        lengths.add(len(data))
    assert min(lengths) == 3000 and max(lengths) == 23000 and len(lengths) > 3  # none, all, torn


def test_never_fsynced_file_may_be_empty_or_missing(tmp_path, journal):
    root = str(tmp_path / "root")
    os.makedirs(root)
    _fsync_dir(root)
    _write(os.path.join(root, "new"), b"x" * 5000)
    results = [_tree(_cut(tmp_path, root, journal, s)).get("new") for s in range(40)]
    assert None in results                      # the name was never made durable
    assert b"" in results                       # the name survived, the data did not
    assert b"x" * 5000 in results


def test_unsynced_rename_may_revert_but_never_shows_both_names(tmp_path, journal):
    root = str(tmp_path / "root")
    os.makedirs(root)
    _write(os.path.join(root, "a.tmp"), b"new")
    _fsync_file(os.path.join(root, "a.tmp"))
    _write(os.path.join(root, "a"), b"old")
    _fsync_file(os.path.join(root, "a"))
    _fsync_dir(root)
    os.rename(os.path.join(root, "a.tmp"), os.path.join(root, "a"))  # no fsync of the dir after
    states = set()
    for seed in range(30):
        tree = _tree(_cut(tmp_path, root, journal, seed))
        states.add(tuple(sorted(tree.items())))
    assert ((("a", b"new"),)) in states               # the rename survived
    assert (("a", b"old"), ("a.tmp", b"new")) in states  # or was undone
    assert all(len(s) in (1, 2) for s in states)


def test_fsynced_rename_is_durable_and_unlinked_durable_file_may_come_back(tmp_path, journal):
    root = str(tmp_path / "root")
    os.makedirs(root)
    _write(os.path.join(root, "keep"), b"k")
    _write(os.path.join(root, "gone"), b"g" * 700)
    _fsync_file(os.path.join(root, "gone"))
    _fsync_dir(root)
    _fsync_file(os.path.join(root, "keep"))
    os.unlink(os.path.join(root, "gone"))
    results = [_tree(_cut(tmp_path, root, journal, s)) for s in range(30)]
    assert all(r["keep"] == b"k" for r in results)
    assert {r.get("gone") for r in results} == {None, b"g" * 700}


def test_directory_never_fsynced_may_lose_its_new_subtree(tmp_path, journal):
    root = str(tmp_path / "root")
    os.makedirs(root)
    _fsync_dir(root)
    os.makedirs(os.path.join(root, "d"))
    _write(os.path.join(root, "d", "f"), b"data")
    _fsync_file(os.path.join(root, "d", "f"))
    _fsync_dir(os.path.join(root, "d"))
    results = [_tree(_cut(tmp_path, root, journal, s)) for s in range(30)]
    assert {r.get(os.path.join("d", "f")) for r in results} == {None, b"data"}


def test_same_seed_same_tree_and_in_place_cut_keeps_the_original(tmp_path, journal):
    root = str(tmp_path / "root")
    os.makedirs(root)
    sync_all([root], journal)
    for i in range(10):
        _write(os.path.join(root, f"f{i}"), os.urandom(9000))
        if i % 3 == 0:
            _fsync_file(os.path.join(root, f"f{i}"))
    assert _tree(_cut(tmp_path, root, journal, 7)) == _tree(_cut(tmp_path, root, journal, 7))
    before = _tree(root)
    power_cut(root, [], journal, seed=7)
    assert _tree(root + ".before-cut") == before
    assert _tree(root) == _tree(_cut(tmp_path, root + ".before-cut", journal, 7))


def test_rewrite_in_place_takes_pages_from_either_version():
    rng = random.Random(3)
    old, new = b"a" * 8192, b"b" * 8192
    seen = {cut_content(old, new, rng) for _ in range(60)}
    assert old in seen and new in seen
    assert any(old[:4096] + new[4096:] == s or new[:4096] + old[4096:] == s for s in seen)
    assert all(len(s) == 8192 for s in seen)
    assert cut_content(None, None, rng) == b""
    assert cut_content(b"d", None, rng) == b"d"  # unlinked: only the durable content is left

"""FileMemo: an answer is reused only while the file is the same file; bounded; a gone file
raises as without the memo."""

import os

import pytest

from kstream.tools.monitor.file_memo import FileMemo


def reader():
    calls = []

    def parse(path):
        calls.append(path)
        with open(path) as f:
            return f.read()

    return parse, calls


def test_same_file_is_parsed_once(tmp_path):
    path = tmp_path / "a.json"
    path.write_text("one")
    parse, calls = reader()
    memo = FileMemo(parse, 10)
    assert memo.get(str(path)) == memo.get(str(path)) == "one"
    assert len(calls) == 1 and (memo.hits, memo.misses) == (1, 1)


def test_a_replaced_file_is_read_again(tmp_path):
    path = tmp_path / "a.json"
    path.write_text("one")
    parse, calls = reader()
    memo = FileMemo(parse, 10)
    assert memo.get(str(path)) == "one"
    replacement = tmp_path / "a.tmp"
    replacement.write_text("two")  # same size, new inode: what a rename over it makes
    os.replace(replacement, path)
    assert memo.get(str(path)) == "two"
    path.write_text("three!")  # rewritten in place: a new size (and mtime)
    assert memo.get(str(path)) == "three!"
    assert len(calls) == 3


def test_a_gone_file_raises_and_is_not_answered_from_memory(tmp_path):
    path = tmp_path / "a.json"
    path.write_text("one")
    memo = FileMemo(reader()[0], 10)
    memo.get(str(path))
    path.unlink()
    with pytest.raises(FileNotFoundError):
        memo.get(str(path))


def test_bounded_least_recently_used_first(tmp_path):
    parse, calls = reader()
    memo = FileMemo(parse, 2)
    paths = []
    for name in "abc":
        (tmp_path / name).write_text(name)
        paths.append(str(tmp_path / name))
    memo.get(paths[0])
    memo.get(paths[1])
    memo.get(paths[0])  # a is now the most recent
    memo.get(paths[2])  # evicts b
    assert len(memo) == 2
    memo.get(paths[0])
    memo.get(paths[1])
    assert calls == [paths[0], paths[1], paths[2], paths[1]]


def test_bounded_by_weight_too(tmp_path):
    """With ``weigh`` (e.g. rows), the total kept stays within ``max_weight``: the least
    recently used go first, and an answer heavier than the whole budget is not kept."""
    parse, calls = reader()
    memo = FileMemo(parse, 10, weigh=len, max_weight=6)
    paths = {}
    for name, text in (("a", "aaa"), ("b", "bb"), ("c", "cccc"), ("big", "x" * 7)):
        (tmp_path / name).write_text(text)
        paths[name] = str(tmp_path / name)
    memo.get(paths["a"])
    memo.get(paths["b"])  # 5 kept
    memo.get(paths["c"])  # 9 > 6: a goes (b and c weigh 6)
    assert len(memo) == 2
    assert memo.get(paths["big"]) == "x" * 7 and len(memo) == 2  # answered, not kept
    memo.get(paths["c"])
    memo.get(paths["b"])
    assert calls == [paths["a"], paths["b"], paths["c"], paths["big"]]
    memo.clear()
    memo.get(paths["a"])
    memo.get(paths["b"])
    assert len(memo) == 2

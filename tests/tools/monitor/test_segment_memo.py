"""SegmentMemo: answers kept while the segment file is the same file with the same size, and
never kept when the file changed while it was read."""

import os

import pytest

from kstream.tools.monitor.segment_memo import SegmentMemo, identity


def write(path, data):
    with open(path, "ab") as f:
        f.write(data)


def test_an_answer_is_reused_until_the_file_grows_or_is_replaced(tmp_path):
    path = str(tmp_path / "00000000000000000000.log")
    write(path, b"abc")
    memo: SegmentMemo[int] = SegmentMemo(10)
    reads = []

    def size(before):
        assert before == identity(path)
        reads.append(1)
        return os.path.getsize(path)

    assert memo.get(path, 1, size) == 3 and memo.get(path, 1, size) == 3 and len(reads) == 1
    assert memo.get(path, 2, size) == 3 and len(reads) == 2  # another key: its own answer
    write(path, b"d")  # appended: a new size
    assert memo.get(path, 1, size) == 4 and len(reads) == 3
    replacement = str(tmp_path / "new.tmp")
    write(replacement, b"wxyz")  # same size, another file renamed over the path
    os.replace(replacement, path)
    assert memo.get(path, 1, lambda _: "new") == "new"
    assert (memo.hits, memo.misses) == (1, 4)


def test_an_answer_read_while_the_file_changed_is_not_kept(tmp_path):
    path = str(tmp_path / "00000000000000000000.log")
    write(path, b"abc")
    memo: SegmentMemo[int] = SegmentMemo(10)

    def grows(_):
        write(path, b"d")  # a writer appends while we read
        return 42

    assert memo.get(path, 0, grows) == 42 and len(memo) == 0  # answered once, not kept

    def deleted(_):
        os.remove(path)
        return 7

    assert memo.get(path, 0, deleted) == 7 and len(memo) == 0
    with pytest.raises(FileNotFoundError):
        memo.get(path, 0, lambda _: 1)  # gone: nothing computed


def test_bounded_least_recently_used_first(tmp_path):
    path = str(tmp_path / "00000000000000000000.log")
    write(path, b"abc")
    memo: SegmentMemo[int] = SegmentMemo(2)
    for key in (1, 2, 1, 3):  # 2 is the least recently used when 3 arrives
        memo.get(path, key, lambda _, k=key: k)
    assert len(memo) == 2
    assert memo.get(path, 1, lambda _: -1) == 1 and memo.get(path, 2, lambda _: -2) == -2


def test_an_identity_taken_earlier_answers_as_of_that_stat_and_stores_nothing_newer(tmp_path):
    """``before``: the caller's own earlier stat (the one its log end came from). A hit is
    the answer for that file; a miss after the file changed is answered and not kept."""
    path = str(tmp_path / "00000000000000000000.log")
    write(path, b"abc")
    memo: SegmentMemo[int] = SegmentMemo(10)
    earlier = identity(path)
    assert memo.get(path, 0, lambda _: 3, earlier) == 3 and len(memo) == 1
    write(path, b"d")
    assert memo.get(path, 0, lambda _: -1, earlier) == 3  # as of the earlier stat
    assert memo.get(path, 1, lambda before: len(before), earlier) == 6 and len(memo) == 1
    assert memo.get(path, 0, lambda _: 4) == 4 and len(memo) == 2  # a new stat: read again

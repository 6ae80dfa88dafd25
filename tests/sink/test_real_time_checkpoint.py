"""The Real-time sink's restart sweep removes only the temp files a driver killed while Spark wrote
batch 0's offset or commit log left, and only when the checkpoint holds nothing past batch 0
(kstream.sink.real_time_checkpoint; Spark's side: tests/spark/test_real_time_first_batch_kill.py)."""

from __future__ import annotations

import os
import uuid

import pytest

from helpers import spark_checkpoint
from kstream import CheckpointError
from kstream.sink.real_time_checkpoint import (
    MAX_DIR_ENTRIES,
    sweep_unfinished_first_batch,
    unfinished_first_batch_files,
)


def _temp(directory, batch: int) -> list[str]:
    """The two files Spark's createAtomic leaves for a log entry whose write never completed."""
    name = f".{batch}.{uuid.uuid4()}.tmp"
    os.makedirs(directory, exist_ok=True)
    for n in (name, f".{name}.crc"):
        open(os.path.join(directory, n), "wb").close()
    return sorted(os.path.join(directory, n) for n in (name, f".{name}.crc"))


def _entry(directory, batch: int) -> None:
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, str(batch)), "w") as f:
        f.write('v1\n{"batchWatermarkMs":0}\n')
    open(os.path.join(directory, f".{batch}.crc"), "wb").close()


def _files(root) -> set[str]:
    return {os.path.join(d, n) for d, _, names in os.walk(root) for n in names}


@pytest.fixture
def ck(tmp_path):
    root = tmp_path / "ck"
    spark_checkpoint(root)
    return root


def test_a_kill_while_writing_batch_0s_commit_leaves_temp_files_that_are_swept(ck):
    _entry(ck / "offsets", 0)  # written just before the commit log entry (Real-time Mode: at the batch's end)
    temps = _temp(ck / "commits", 0)
    before = _files(ck)
    assert unfinished_first_batch_files(str(ck)) == temps
    assert sweep_unfinished_first_batch(f"file://{ck}") == temps
    assert _files(ck) == before - set(temps)  # offsets/0 stays: Spark drops it itself (no commit)
    assert os.listdir(ck / "commits") == []
    assert sweep_unfinished_first_batch(str(ck)) == []


def test_a_kill_while_writing_batch_0s_offsets_leaves_temp_files_that_are_swept(ck):
    temps = _temp(ck / "offsets", 0) + _temp(ck / "offsets", 0)  # killed twice there
    assert sweep_unfinished_first_batch(str(ck)) == sorted(temps)
    assert os.listdir(ck / "offsets") == []


def test_a_checkpoint_without_temp_files_is_left_alone(ck):
    assert sweep_unfinished_first_batch(str(ck)) == []  # a fresh query's
    _entry(ck / "offsets", 0)  # killed between the two log writes: Spark drops the entry itself
    before = _files(ck)
    assert sweep_unfinished_first_batch(str(ck)) == []
    assert _files(ck) == before


@pytest.mark.parametrize("layout", ["past batch 0", "a foreign file in commits", "state", "offsets of batch 1",
                                    "a state dir of more entries than listed"])
def test_a_checkpoint_past_batch_0_or_not_spark_s_is_left_alone(ck, layout):
    if layout == "past batch 0":
        _entry(ck / "offsets", 0)
        _entry(ck / "commits", 0)
        _entry(ck / "offsets", 1)
        _temp(ck / "commits", 1)  # harmless to Spark: it resumes at batch 1
        _temp(ck / "commits", 0)
    elif layout == "a foreign file in commits":
        _temp(ck / "commits", 0)
        open(ck / "commits" / "notes.txt", "w").close()
    elif layout == "state":
        _temp(ck / "commits", 0)
        (ck / "state" / "0").mkdir(parents=True)
    elif layout == "a state dir of more entries than listed":  # a state too big to list is still a state
        _temp(ck / "commits", 0)
        for operator in range(MAX_DIR_ENTRIES + 1):
            (ck / "state" / str(operator)).mkdir(parents=True)
    else:
        _entry(ck / "offsets", 0)
        _entry(ck / "offsets", 1)
        _temp(ck / "commits", 0)
    before = _files(ck)
    assert sweep_unfinished_first_batch(str(ck)) == []
    assert _files(ck) == before


def test_a_checkpoint_kstream_cannot_read_is_a_checkpoint_error():
    with pytest.raises(CheckpointError, match="hdfs"):
        sweep_unfinished_first_batch("hdfs://namenode/ck")

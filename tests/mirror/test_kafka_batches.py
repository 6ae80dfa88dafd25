"""A consume() batch cut into per-partition runs of Arrow columns (no broker: messages faked with
confluent-kafka's accessors)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from kstream.mirror.errors import MirrorError
from kstream.mirror.kafka_batches import Chunk, split_batch

EOF_CODE = -191


@dataclass
class Error:
    code_: int

    def code(self) -> int:
        return self.code_

    def str(self) -> str:
        return "broker gone"

    def name(self) -> str:
        return "_TRANSPORT"


@dataclass
class Message:
    topic_: str
    partition_: int
    offset_: int
    key_: bytes | None = None
    value_: bytes | None = None
    ts: int = 1000
    headers_: Any = None
    error_: Error | None = None

    def topic(self) -> str:
        return self.topic_

    def partition(self) -> int:
        return self.partition_

    def offset(self) -> int:
        return self.offset_

    def key(self) -> bytes | None:
        return self.key_

    def value(self) -> bytes | None:
        return self.value_

    def timestamp(self) -> tuple[int, int]:
        return (1, self.ts)

    def headers(self) -> Any:
        return self.headers_

    def error(self) -> Error | None:
        return self.error_


def record(topic: str, partition: int, offset: int, **kw: Any) -> Message:
    return Message(topic, partition, offset, f"k{offset}".encode(), f"v{partition}-{offset}".encode(), **kw)


def test_runs_keep_each_partitions_order_and_every_field():
    messages = [record("a", 0, 5, headers_=[("h", b"1"), ("n", None)]), record("a", 0, 7),
                record("a", 1, 3, ts=-1), record("b", 0, 9), record("a", 0, 8)]
    runs, eofs = split_batch(messages, EOF_CODE)
    assert eofs == []
    assert [(tp, r.offsets.tolist()) for tp, r in runs] == [(("a", 0), [5, 7]), (("a", 1), [3]), (("b", 0), [9]),
                                                           (("a", 0), [8])]
    first = runs[0][1].table.to_pylist()
    assert first[0] == {"key": b"k5", "value": b"v0-5", "timestamp": 1000,
                        "headers": [{"key": "h", "value": b"1"}, {"key": "n", "value": None}]}
    assert first[1]["headers"] in (None, [])
    assert runs[1][1].table.column("timestamp").to_pylist() == [None]  # TIMESTAMP_NOT_AVAILABLE: no timestamp
    chunk = Chunk()
    for tp, run in runs:
        chunk.add(tp, run)
    table, offsets = chunk.partition(("a", 0))
    assert offsets.tolist() == [5, 7, 8] and table.column("value").to_pylist() == [b"v0-5", b"v0-7", b"v0-8"]
    assert chunk.count == 5
    assert chunk.nbytes == sum(run.table.nbytes for _, run in runs) > 0  # what --chunk-bytes bounds


def test_end_of_partition_events_are_apart_and_other_errors_raise():
    eof = Message("a", 1, 4, error_=Error(EOF_CODE))
    runs, eofs = split_batch([record("a", 1, 3), eof], EOF_CODE)
    assert eofs == [(("a", 1), 4)] and [r.offsets.tolist() for _, r in runs] == [[3]]
    assert split_batch([eof], EOF_CODE) == ([], [(("a", 1), 4)])
    with pytest.raises(MirrorError, match="broker gone"):
        split_batch([record("a", 1, 3), Message("a", 1, 4, error_=Error(-195))], EOF_CODE)


def test_a_run_cut_at_the_end_keeps_the_offsets_below_it():
    runs, _ = split_batch([record("a", 0, o) for o in (2, 3, 6, 7)], EOF_CODE)
    run = runs[0][1]
    assert run.cut(6).offsets.tolist() == [2, 3] and run.cut(6).table.num_rows == 2
    assert run.cut(100) is run and len(run.cut(0)) == 0

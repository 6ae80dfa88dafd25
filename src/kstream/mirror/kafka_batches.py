"""A confluent-kafka ``consume()`` batch as Arrow columns, cut into per-partition runs.

The copy into kstream touches every record in Python once: one list comprehension per
column over the whole batch (a C method call per record and field, no Python frame per
record), then Arrow and numpy work on whole columns. ``consume()`` hands out records in
runs of one partition (librdkafka's fetch responses), so a batch becomes a table of all its
records and each run is a zero-copy slice of it, with the runs' source offsets as a numpy
array (issue 23, docs/BENCHMARKS.md: the per-record loop was a third of the mirror's time).

End-of-partition events (``enable.partition.eof``) are returned apart; any other error in
the batch is a :class:`MirrorError` and nothing of the batch is used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kstream.log.storage.records import HEADER_TYPE
from kstream.mirror.errors import MirrorError

TopicPartitionKey = tuple[str, int]

SCHEMA = pa.schema([pa.field("key", pa.binary()), pa.field("value", pa.binary()),
                    pa.field("timestamp", pa.int64()), pa.field("headers", HEADER_TYPE)])
"""The kstream table the mirror appends: key, value, timestamp (ms, null when Kafka has none), headers."""


@dataclass(frozen=True)
class Run:
    """Consecutive records of one partition: their table and their source (Kafka) offsets."""

    table: pa.Table
    offsets: np.ndarray  # int64, increasing

    def __len__(self) -> int:
        return len(self.offsets)

    def cut(self, end: int) -> Run:
        """The records below source offset ``end``."""
        keep = int(np.searchsorted(self.offsets, end))
        return self if keep == len(self) else Run(self.table.slice(0, keep), self.offsets[:keep])


@dataclass
class Chunk:
    """Records gathered for one kstream transaction, per partition in source order."""

    runs: dict[TopicPartitionKey, list[Run]] = field(default_factory=dict)
    count: int = 0
    nbytes: int = 0
    """The records' Arrow bytes (their slices of the batches' buffers)."""
    eofs: list[tuple[TopicPartitionKey, int]] = field(default_factory=list)
    """End-of-partition events read with these records (partition, next offset): shown in the
    progress only once the records before them are committed."""
    targets: dict[TopicPartitionKey, int] = field(default_factory=dict)
    """Once committed: each partition's next kstream offset after the chunk (for the progress)."""

    def add(self, tp: TopicPartitionKey, run: Run) -> None:
        if len(run):
            self.runs.setdefault(tp, []).append(run)
            self.count += len(run)
            self.nbytes += run.table.nbytes

    def partition(self, tp: TopicPartitionKey) -> tuple[pa.Table, np.ndarray]:
        """One partition's records (a chunked table: no copy) and their source offsets."""
        runs = self.runs[tp]
        if len(runs) == 1:
            return runs[0].table, runs[0].offsets
        return pa.concat_tables([r.table for r in runs]), np.concatenate([r.offsets for r in runs])


def split_batch(messages: list[Any], partition_eof_code: int
                ) -> tuple[list[tuple[TopicPartitionKey, Run]], list[tuple[TopicPartitionKey, int]]]:
    """``messages`` (one consume()) as runs of one partition each, in order, and the
    end-of-partition events (partition, next offset). A MirrorError for any other error."""
    errors = [m.error() for m in messages]
    eofs: list[tuple[TopicPartitionKey, int]] = []
    if any(e is not None for e in errors):
        for message, error in zip(messages, errors, strict=True):
            if error is None:
                continue
            if error.code() != partition_eof_code:
                raise MirrorError(f"reading Apache Kafka failed: {error.str()} (code {error.name()})")
            eofs.append(((message.topic(), message.partition()), message.offset()))
        messages = [m for m, e in zip(messages, errors, strict=True) if e is None]
    if not messages:
        return [], eofs
    topics = [m.topic() for m in messages]
    partitions = np.array([m.partition() for m in messages], np.int64)
    names = list(dict.fromkeys(topics))
    if len(names) == 1:
        codes = partitions
    else:
        index = {name: i for i, name in enumerate(names)}
        codes = np.array([index[t] for t in topics], np.int64) * (1 << 32) + partitions
    offsets = np.array([m.offset() for m in messages], np.int64)
    table = _table(messages)
    starts = np.concatenate(([0], np.flatnonzero(codes[1:] != codes[:-1]) + 1, [len(messages)]))
    runs = []
    for start, stop in zip(starts[:-1].tolist(), starts[1:].tolist(), strict=True):
        runs.append(((topics[start], int(partitions[start])),
                     Run(table.slice(start, stop - start), offsets[start:stop])))
    return runs, eofs


def _table(messages: list[Any]) -> pa.Table:
    """Kafka records as a kstream table. One comprehension per column: this runs once per
    record copied."""
    stamps = pa.array([m.timestamp()[1] for m in messages], pa.int64())
    if pc.min(stamps).as_py() < 0:  # TIMESTAMP_NOT_AVAILABLE (-1): no timestamp
        stamps = pc.if_else(pc.less(stamps, 0), pa.scalar(None, pa.int64()), stamps)
    return pa.table([pa.array([m.key() for m in messages], pa.binary()),
                     pa.array([m.value() for m in messages], pa.binary()), stamps,
                     pa.array([m.headers() for m in messages], HEADER_TYPE)], schema=SCHEMA)

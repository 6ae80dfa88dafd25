"""Executor side of ``latestPerKey=true``: one split's latest record of each key, reduced in its task.

All of a key's records are in one partition (the producer's partitioner hashes the key), so
the latest record of each key is found inside the partition's own task, with no shuffle: the
planner never cuts such a partition into several splits (read_options refuses minPartitions and
maxRecordsPerPartition with latestPerKey). The split's records are the ones a plain read of
``[start, end)`` returns (:func:`kstream.source.partition_reader.read_range`: under
read_committed no aborted or open transaction's record), in offset order, each marked a
tombstone or not by the log cleaner's rule (a null value; a typed topic: every value column
null). Of each key the last one wins; a winning tombstone removes its key, unless
``includeTombstones`` keeps it (value null). Rows come out in offset order.

A record without a key has no latest value: :class:`InvalidRecordError` naming its offset
(compacted topics refuse keyless records; any other topic may hold them).

Two passes, as the JVM reader's (docs/JVM_READER.md): below the log cleaner's end (the leader's
``cleaner-offset-checkpoint``, :func:`_dirty_from`) a compacted partition holds at most one record
per key, so only the dirty part above it is reduced (first); the cleaned part is then streamed,
a row dropped only when its key has a record in the dirty part (an Arrow ``is_in``), with no
reduction and nothing held. A partition never cleaned is all dirty.

Memory: the dirty part's rows of its distinct keys plus at most ``max(REDUCE_ROWS, keys)`` rows
read since the last reduction (each reduction is an Arrow hash aggregation), and one batch of the
cleaned part at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kstream.errors import InvalidRecordError
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage.cleaner_checkpoint import read_trusted_checkpoint
from kstream.log.storage.output import output_schema
from kstream.source.partition_reader import read_range
from kstream.source.planning import Lakes, PartitionRange, bounds
from kstream.source.read_options import EARLIEST, LATEST

REDUCE_ROWS = 1 << 20
"""Rows read before the rows read so far are reduced to one per key (at least as many as kept)."""
OUTPUT_ROWS = 1 << 16
"""Rows per batch handed to Spark."""
_TOMBSTONE = "__kstream_tombstone"
_Rows = TypeVar("_Rows", pa.Table, pa.RecordBatch)
_ROW = "__kstream_row"


def keyless_message(topic: str, partition: int, offset: int) -> str:
    """The error for a keyless record (the JVM reader's LatestPerKey says the same words)."""
    return (f"{topic}-{partition}: the record at offset {offset} has no key, so latestPerKey=true cannot "
            "tell whose latest value it is; read the topic without latestPerKey (and filter keyless records "
            "out), or write keyed records (a compacted topic refuses keyless ones)")


def read_latest(split: PartitionRange, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The latest record of each key of ``split`` as batches of ``schema`` (Spark's Arrow types).
    A start of EARLIEST or an end of LATEST is the partition's log start or its end now (the HW,
    or the LSO under read_committed): the data source leaves them so (data_source._latest_splits)."""
    internal, split, dirty_from = _internal_schema(split, schema)
    if split.end <= split.start:
        return
    # First the dirty part, reduced; then the cleaned part, streamed: a row there is the only one
    # of its key there, kept unless its key has a record in the dirty part.
    dirty = _reduced(replace(split, start=dirty_from), internal) if dirty_from < split.end else None
    if dirty_from > split.start:
        dirty_keys = None if dirty is None or dirty.num_rows == 0 else dirty.column("key")
        for batch in read_range(replace(split, end=dirty_from), internal, tombstone_column=_TOMBSTONE):
            _check_keys(split, batch)
            if dirty_keys is not None:
                batch = _drop(batch, pc.is_in(batch.column("key"), value_set=dirty_keys))
            yield from _output(split, pa.Table.from_batches([batch]), schema)
    if dirty is not None:
        yield from _output(split, dirty, schema)


def _reduced(split: PartitionRange, internal: pa.Schema) -> pa.Table | None:
    """The last record of each key of ``split`` (with the tombstone column), in offset order."""
    kept: pa.Table | None = None
    pending: list[pa.RecordBatch] = []
    pending_rows = 0
    for batch in read_range(split, internal, tombstone_column=_TOMBSTONE):
        _check_keys(split, batch)
        pending.append(batch)
        pending_rows += batch.num_rows
        if pending_rows >= max(REDUCE_ROWS, 0 if kept is None else kept.num_rows):
            kept = _reduce(kept, pending)
            pending, pending_rows = [], 0
    if pending:
        kept = _reduce(kept, pending)
    return kept


def _output(split: PartitionRange, kept: pa.Table, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Kept rows as batches of ``schema``: tombstones left out unless includeTombstones."""
    if kept.num_rows and not split.include_tombstones:
        kept = _drop(kept, kept.column(_TOMBSTONE))
    if kept.num_rows == 0:
        return
    yield from kept.select(schema.names).cast(schema).to_batches(max_chunksize=OUTPUT_ROWS)


def _drop(rows: _Rows, mask: pa.Array | pa.ChunkedArray) -> _Rows:
    """``rows`` without those ``mask`` marks (no copy when it marks none, the usual case)."""
    return rows.filter(pc.invert(mask)) if pc.any(mask).as_py() else rows


def _dirty_from(cluster: Cluster, split: PartitionRange) -> int:
    """Where the dirty part of ``split`` starts: the log cleaner's end (the leader's
    cleaner-offset-checkpoint), moved back to the start of the frame holding it (the cleaner
    rewrites only frames wholly below its end), within [start, end]. Below it the cleaner left
    at most one record per key and no aborted record, and it never cleaned past the LSO; the
    storage engine lowers it before a truncation (kstream.log.storage.cleaner_checkpoint). The
    split's start when never cleaned (no checkpoint; a damaged one is a KStreamError naming it). The JVM reader's
    LatestOffsets.dirtyFrom, in Python."""
    handle = cluster.partition(split.topic, split.partition)
    try:
        cleaned = read_trusted_checkpoint(handle.leader_dir)  # a damaged one fails the read, naming it
        if cleaned is None or cleaned <= split.start:
            return split.start
        reader = handle.reader(check_crcs=False)
        try:
            frames = reader.read(cleaned, 1, verify=False)
        finally:
            reader.close()
    finally:
        handle.close()
    found = frames[0].header.base_offset if frames and frames[0].header.base_offset < cleaned else cleaned
    return max(split.start, min(found, split.end))


def _internal_schema(split: PartitionRange, schema: pa.Schema) -> tuple[pa.Schema, PartitionRange, int]:
    """(``schema`` plus what the reduction reads whatever the read's columns: key, offset and the
    value columns, which the tombstone rule reads (an Avro read's raw value); ``split`` with its
    start and end resolved: EARLIEST is a tiered topic's lake's first offset, and a start below
    the log start reads the lake at the version it has now (the union read); where its dirty
    part starts, :func:`_dirty_from`)."""
    cluster = Cluster.open(split.cluster)
    try:
        stored = output_schema(Cluster.topic_schema(cluster.topic(split.topic)))
        lakes = Lakes(cluster)
        if split.start < 0 or split.end < 0:
            start, end = bounds(cluster, split.topic, split.partition, split.isolation_level, lakes)
            split = replace(split, start=start if split.start == EARLIEST else split.start,
                            end=end if split.end == LATEST else split.end)
        lake = lakes.range_of(split.topic, split.partition)
        if split.lake is None and lake is not None and split.start < lake.end_offset:
            split = replace(split, lake=lake)
        dirty_from = _dirty_from(cluster, split) if split.end > split.start else split.start
    finally:
        cluster.close()
    meta = {"topic", "partition", "offset", "timestamp", "timestampType", "headers"}
    wanted = ["key", "offset", *(f.name for f in stored if f.name not in meta and f.name != "key")]
    extra = [stored.field(name) for name in wanted if name not in schema.names]
    return pa.schema([*schema, *extra]), split, dirty_from


def _check_keys(split: PartitionRange, batch: pa.RecordBatch) -> None:
    keys = batch.column("key")
    if keys.null_count:
        row = int(np.flatnonzero(keys.is_null().to_numpy(zero_copy_only=False))[0])
        raise InvalidRecordError(keyless_message(split.topic, split.partition, batch.column("offset")[row].as_py()))


def _reduce(kept: pa.Table | None, pending: list[pa.RecordBatch]) -> pa.Table:
    """The last row of each key of ``kept`` (older) then ``pending``, in offset order."""
    table = pa.Table.from_batches(pending)
    if kept is not None:
        table = pa.concat_tables([kept, table])
    rows = pa.array(np.arange(table.num_rows, dtype=np.int64))
    last = (pa.table({"key": table.column("key"), _ROW: rows})
            .group_by("key", use_threads=False).aggregate([(_ROW, "max")]))
    chosen = np.sort(last.column(f"{_ROW}_max").to_numpy())
    return table.take(pa.array(chosen))

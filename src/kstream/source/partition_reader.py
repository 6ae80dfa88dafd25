"""Executor side: read one split's records as Arrow batches straight from the log.

Runs in Spark's Python workers: opens the cluster from its path (nothing else
is pickled), reads frames of the partition's leader replica from the split's
start up to its end (never past the high watermark the driver planned with),
and yields batches of the reader's Spark schema.

A split of a tiered topic that begins below its partition's lake end ``e`` (the union read,
docs/TIERING.md) reads ``[start, min(end, e))`` from the Delta table at the version the driver
pinned, then the rest from the log: the same rows, offsets and columns a read of the whole log
gives. An offset in neither (below the lake's first offset, or between the lake end and the
log start) is data loss, as an offset retention deleted is.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace

import pyarrow as pa

from kstream.errors import OffsetOutOfRangeError
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage.cleaner.frame_rewrite import tombstones
from kstream.log.storage.output import TIMESTAMP_TYPE, OutputBuilder
from kstream.log.storage.records import HEADER_TYPE, PayloadCodec
from kstream.log.transactions.isolation import Isolation
from kstream.log.transactions.store import TransactionStore
from kstream.log.visible_reads import read_visible
from kstream.source import avro_values as avro
from kstream.source.planning import PartitionRange
from kstream.tiering.lake_reader import LakeRange, LakeSnapshot, cast_columns
from kstream.tiering.lake_table import TierError

log = logging.getLogger(__name__)
_FETCH_BYTES = 8 << 20


def read_range(split: PartitionRange, schema: pa.Schema, tombstone_column: str | None = None
               ) -> Iterator[pa.RecordBatch]:
    """The records of ``split`` as batches of ``schema`` (Spark's Arrow types). With
    ``tombstone_column``, each batch has one more (last) column of that name: whether the record
    is a tombstone (the log cleaner's rule, :func:`tombstones`; ``schema`` must then hold the
    topic's value columns, which the rule reads)."""
    cluster = Cluster.open(split.cluster)
    typed = Cluster.topic_schema(cluster.topic(split.topic)) is not None
    handle = cluster.partition(split.topic, split.partition)
    reader = handle.reader(check_crcs=split.check_crcs)
    codec = PayloadCodec()
    names = [f.name for f in schema]
    parsed, avro_columns = (None, pa.schema([])) if split.avro_schema is None else avro.parse(split.avro_schema)
    avro_wanted = pa.schema([f for f in avro_columns if f.name in names])
    built = [f for f in schema if f.name not in avro_columns.names]
    if len(avro_wanted) and "value" not in names:
        built.append(pa.field("value", pa.binary()))
    builder = OutputBuilder(split.topic, split.partition, _builder_schema(pa.schema(built)))
    where = f"{split.topic}-{split.partition}"
    # Stored columns this read needs (a "timestamp" output can come from the stored column).
    stored_columns = frozenset(f.name for f in built) | ({"timestamp"} if "timestamp" in names else set())
    try:
        offset = split.start
        if split.lake is not None and offset < split.lake.end_offset:
            yield from _read_lake(split, split.lake, schema, pa.schema(built), avro_wanted, parsed, typed,
                                  tombstone_column, where)
            offset = min(split.end, split.lake.end_offset)
            if offset >= split.end:
                return
        log_start = reader.log_start_offset()
        newer = _newer_lake(cluster, split, offset) if offset < log_start else None
        if newer is not None:  # deleted since the planning, tiered meanwhile: the table has it now
            yield from _read_lake(replace(split, start=offset), newer, schema, pa.schema(built), avro_wanted, parsed,
                                  typed, tombstone_column, where)
            offset = min(split.end, newer.end_offset)
            if offset >= split.end:
                return
            log_start = reader.log_start_offset()
        if offset < log_start:
            message = (f"{split.topic}-{split.partition}: offsets {offset}..{log_start - 1} were deleted by "
                       "retention before they were read")
            if split.lake is not None:
                message += f" (the tier table {split.lake.path} holds the partition below {split.lake.end_offset})"
            if split.fail_on_data_loss:
                raise OffsetOutOfRangeError(message + "; set failOnDataLoss=false to skip them")
            log.warning("%s; skipping them (failOnDataLoss=false)", message)
            offset = log_start
        # The store knows the cluster's timeouts (each transaction's own is recorded with it): the
        # split sees the outcomes the driver planned with (kstream.log.transactions.view), and
        # writes nothing.
        isolation = Isolation(split.isolation_level, TransactionStore.for_cluster(cluster), split.topic,
                              split.partition, handle.leader_dir)
        # Aborted ranges as of the HW now (at least the one the end was planned with).
        for stored in read_visible(reader, isolation, offset, split.end,
                                   max(split.end, handle.high_watermark() or 0), codec, stored_columns,
                                   _FETCH_BYTES, high_watermark_now=lambda: handle.high_watermark() or 0):
            batch = builder.build(stored)
            columns = {name: batch.column(name) for name in batch.schema.names}
            if len(avro_wanted):
                decoded = avro.decode(batch.column("value"), parsed, avro_wanted, where, stored.base_offset)
                columns.update(zip(decoded.schema.names, decoded.columns, strict=True))
            arrays = [columns[name].cast(field.type) for name, field in zip(names, schema, strict=True)]
            if tombstone_column is None:
                yield pa.RecordBatch.from_arrays(arrays, schema=schema)
            else:
                arrays.append(pa.array(tombstones(stored.batch, typed)))
                yield pa.RecordBatch.from_arrays(arrays, names=[*names, tombstone_column])
    finally:
        reader.close()
        handle.close()
        cluster.close()


def _newer_lake(cluster: Cluster, split: PartitionRange, offset: int) -> LakeRange | None:
    """The topic's table at its latest version when it holds ``offset`` (which the log no longer
    does): a split planned to read the log whose records retention deleted after a tier commit.
    The lake is append-only, so a newer version has the same rows as the planned one below its
    end."""
    info = cluster.topic(split.topic)
    table_dir = cluster.log_config(info).tier_table_dir
    if table_dir is None:
        return None
    snapshot = LakeSnapshot.open(table_dir, info.name, info.topic_id)
    if snapshot is None:
        return None
    found = snapshot.range_of(split.partition)
    return found if found.start_offset <= offset < found.end_offset else None


def _read_lake(split: PartitionRange, lake: LakeRange, schema: pa.Schema, built: pa.Schema,
               avro_wanted: pa.Schema, parsed: object, typed: bool, tombstone_column: str | None, where: str
               ) -> Iterator[pa.RecordBatch]:
    """The lake part of a split, ``[start, min(end, lake end))``, from the table at the pinned
    version, as batches of ``schema`` (the log part's columns, cast the same way)."""
    start = split.start
    if start < lake.start_offset:
        message = (f"{where}: offsets {start}..{lake.start_offset - 1} are in neither the tier table "
                   f"{lake.path} (it holds the partition from {lake.start_offset}) nor the log (deleted "
                   "before the topic tiered)")
        if split.fail_on_data_loss:
            raise OffsetOutOfRangeError(message + "; set failOnDataLoss=false to skip them")
        log.warning("%s; skipping them (failOnDataLoss=false)", message)
        start = lake.start_offset
    snapshot = LakeSnapshot.open(lake.path, split.topic, lake.topic_id, lake.version)
    if snapshot is None:
        raise TierError(f"{where}: the tier table {lake.path} is gone (the read was planned with its version "
                        f"{lake.version}); restore it, or read from its lake end {lake.end_offset} on")
    names = [f.name for f in schema]
    read_columns = list(built.names)
    value_names = [n for n in read_columns if n not in _META_AND_KEY] if typed else ["value"]
    if tombstone_column is not None:
        read_columns += [n for n in value_names if n not in read_columns]
    for table in snapshot.read(split.partition, start, split.end, read_columns):
        for lake_batch in table.to_batches():
            columns = dict(zip(read_columns, cast_columns(lake_batch, pa.schema(
                [built.field(n) if n in built.names else lake_batch.schema.field(n) for n in read_columns])),
                               strict=True))
            if len(avro_wanted):
                first = int(lake_batch.column("offset")[0].as_py())
                decoded = avro.decode(columns["value"], parsed, avro_wanted, where, first)
                columns.update(zip(decoded.schema.names, decoded.columns, strict=True))
            arrays = [columns[name].cast(field.type) for name, field in zip(names, schema, strict=True)]
            if tombstone_column is None:
                yield pa.RecordBatch.from_arrays(arrays, schema=schema)
            else:
                values = pa.RecordBatch.from_arrays([columns[n] for n in value_names], names=value_names)
                arrays.append(pa.array(tombstones(values, typed)))
                yield pa.RecordBatch.from_arrays(arrays, names=[*names, tombstone_column])


_META_AND_KEY = frozenset({"key", "topic", "partition", "offset", "timestamp", "timestampType", "headers"})


def _builder_schema(spark_schema: pa.Schema) -> pa.Schema:
    """The output columns to build before casting to Spark's types."""
    fields = []
    for field in spark_schema:
        if field.name == "timestamp":
            fields.append(pa.field("timestamp", TIMESTAMP_TYPE))
        elif field.name == "headers":
            fields.append(pa.field("headers", HEADER_TYPE))
        else:
            fields.append(field)
    return pa.schema(fields)

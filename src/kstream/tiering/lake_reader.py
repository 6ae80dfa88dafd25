"""Reading a tiered topic's Delta table back by offset: the lake half of the union read.

The union read (docs/TIERING.md "Union read") plans a read of partition *p* over ``[a, b)`` as
``[a, min(b, e_p))`` from the lake and ``[max(a, e_p), b)`` from the log, where ``e_p`` is the
lake end of *p* at one pinned table version ``V``: the version of the Delta app transaction
``kstream.tier/<topic id>/<p>`` (:func:`kstream.tiering.lake_table.app_id`; absent: 0, nothing
tiered). :class:`LakeSnapshot` is that pinned view: the table at ``V``, each partition's lake
end and first offset, and its data files ordered by offset (from the files' ``offset``
statistics), so a range reads only the files that overlap it, in offset order, one at a time.

The lake is append-only and contiguous per partition (each commit appends ``[old end, new
end)``), so any version at or after ``V`` holds the same rows below ``e_p``: a reader may pin
the version it finds at its own planning.

Rows come back as the table stores them (``timestamp`` in microseconds, Delta's type);
:func:`cast_columns` turns them into a reader's schema. Safe to use from one thread; Spark
pickles only the path and version (:class:`LakeRange`) and opens the table where it reads.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError

from kstream.log.storage.output import LOG_APPEND_TIME, StoredBatch
from kstream.log.storage.records import HEADER_TYPE
from kstream.tiering.lake_table import PARTITION_COLUMN, LakeTable, TierError, app_id

if TYPE_CHECKING:
    from kstream.log.cluster.cluster import Cluster
    from kstream.log.cluster.metadata import TopicInfo

OFFSET_COLUMN = "offset"


@dataclass(frozen=True)
class LakeFile:
    """One data file of one partition: its absolute path and the offsets it holds."""

    path: str
    min_offset: int
    max_offset: int
    size_bytes: int
    max_timestamp_us: int | None = None  # from the statistics (None: not kept)


@dataclass(frozen=True)
class LakePartition:
    """One partition at the pinned version: the lake holds its committed records below
    ``end_offset``, the first at ``start_offset`` (``end_offset`` when it holds none)."""

    end_offset: int
    start_offset: int
    files: tuple[LakeFile, ...]


@dataclass(frozen=True)
class LakeRange:
    """What an executor needs to read the lake part of a split (picklable: configuration only)."""

    path: str
    topic_id: str
    version: int
    end_offset: int  # the partition's lake end at ``version``
    start_offset: int  # the partition's first offset in the lake


class LakeSnapshot:
    """A tiered topic's Delta table pinned at one version (see the module docstring)."""

    def __init__(self, path: str, version: int, table: DeltaTable, topic_id: str, topic: str | None = None):
        self.path = path
        self.version = version
        self._table = table
        self._topic_id = topic_id
        self._topic = topic  # for errors (None: the topic id names it)
        self._partitions: dict[int, LakePartition] | None = None

    @classmethod
    def open(cls, path: str, topic: str, topic_id: str, version: int | None = None) -> LakeSnapshot | None:
        """The topic's table at ``version`` (None: its latest); None when the path holds no
        table yet (nothing tiered). TierError when it is unreadable or another topic's."""
        owner = LakeTable(path, topic, topic_id)
        table = owner.open()
        if table is None:
            return None
        if version is not None and version != table.version():
            try:
                table = DeltaTable(path, version=version)
            except (DeltaError, OSError) as err:
                raise TierError(f"version {version} of the tier table of topic {topic!r} at {path} cannot be "
                                f"read: {str(err).splitlines()[0]} (a vacuum or log cleanup removed it?); "
                                "start the read again, it plans with the table's latest version") from err
        return cls(path, table.version(), table, topic_id, topic)

    def schema(self) -> pa.Schema:
        """The table's columns at the pinned version (Delta's types)."""
        return pa.schema(self._table.schema().to_arrow())

    def end_offset(self, partition: int) -> int:
        """``e_p``: the lake holds the committed records of ``partition`` below it (0: none)."""
        return self.partition(partition).end_offset

    def range_of(self, partition: int) -> LakeRange:
        found = self.partition(partition)
        return LakeRange(self.path, self._topic_id, self.version, found.end_offset, found.start_offset)

    def partition(self, partition: int) -> LakePartition:
        if self._partitions is None:
            self._partitions = self._list_partitions()
        found = self._partitions.get(partition)
        if found is None:
            end = self._app_end(partition)
            found = LakePartition(end, end, ())
        return found

    def _app_end(self, partition: int) -> int:
        version = self._table.transaction_version(app_id(self._topic_id, partition))
        return 0 if version is None else int(version)

    def _list_partitions(self) -> dict[int, LakePartition]:
        actions = pa.table(self._table.get_add_actions(flatten=True))
        names = actions.column_names
        partitions = actions.column(f"partition.{PARTITION_COLUMN}").to_pylist()
        paths = actions.column("path").to_pylist()
        sizes = actions.column("size_bytes").to_pylist()
        times = actions.column("max.timestamp").cast(pa.int64()).to_pylist() if "max.timestamp" in names \
            else [None] * len(paths)
        lows = actions.column(f"min.{OFFSET_COLUMN}").to_pylist() if f"min.{OFFSET_COLUMN}" in names \
            else [None] * len(paths)
        highs = actions.column(f"max.{OFFSET_COLUMN}").to_pylist() if f"max.{OFFSET_COLUMN}" in names \
            else [None] * len(paths)
        files: dict[int, list[LakeFile]] = {}
        for partition, path, size, low, high, latest in zip(partitions, paths, sizes, lows, highs, times,
                                                             strict=True):
            full = os.path.join(self.path, urllib.parse.unquote(path))
            if low is None or high is None:  # no statistics (a typed topic's offset past column 32)
                low, high = _offset_bounds(full)
            if low is not None:
                files.setdefault(int(partition), []).append(LakeFile(full, int(low), int(high), int(size), latest))
        result = {}
        for partition, found in files.items():
            found.sort(key=lambda f: f.min_offset)
            end = self._app_end(partition)
            result[partition] = LakePartition(end, min(found[0].min_offset, end), tuple(found))
        return result

    def offset_for_timestamp(self, partition: int, timestamp_ms: int) -> int | None:
        """The first offset of ``partition`` in the lake whose record's timestamp is at or after
        ``timestamp_ms`` (None: none), the rule of :func:`kstream.log.offset_for_timestamp`."""
        hit = self.record_for_timestamp(partition, timestamp_ms)
        return None if hit is None else hit[0]

    def record_for_timestamp(self, partition: int, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp ms) of the first record of ``partition`` in the lake whose
        timestamp is at or after ``timestamp_ms`` (None: none): in offset order, a file at a
        time (files whose ``timestamp`` statistics end before the time are skipped)."""
        found = self.partition(partition)
        wanted = pa.scalar(timestamp_ms * 1000, pa.timestamp("us", tz="UTC"))
        for file in found.files:
            if file.max_timestamp_us is not None and file.max_timestamp_us < timestamp_ms * 1000:
                continue
            table = pq.read_table(file.path, columns=[OFFSET_COLUMN, "timestamp"])
            # a lookup that skipped such a row could answer a later offset than the truth
            refuse_nulls(self._where(partition), file.path, table, (OFFSET_COLUMN, "timestamp"))
            hits = table.filter(pc.and_(pc.greater_equal(table.column("timestamp"), wanted),
                                        pc.less(table.column(OFFSET_COLUMN), found.end_offset)))
            if len(hits):
                first = hits.take([pc.index(hits.column(OFFSET_COLUMN), pc.min(hits.column(OFFSET_COLUMN))).as_py()])
                stamp = first.column("timestamp").cast(pa.int64())[0].as_py() // 1000
                return int(first.column(OFFSET_COLUMN)[0].as_py()), stamp
        return None

    def _where(self, partition: int) -> LakeWhere:
        owner = self._topic if self._topic is not None else f"topic id {self._topic_id}"
        return LakeWhere(f"{owner}-{partition}", self.path, self.version)

    def read(self, partition: int, start: int, end: int, columns: list[str] | None = None
             ) -> Iterator[pa.Table]:
        """The rows of ``partition`` with offsets in ``[start, min(end, e_p))``, in offset order,
        one data file at a time, with the table's ``columns`` (None: all; ``partition`` is
        filled in, and a column an older file lacks comes back null)."""
        return read_files(self.partition(partition), partition, start, end, self.schema(), columns,
                          self._where(partition))


@dataclass(frozen=True)
class LakeWhere:
    """Which partition of which table at which version a read is of (for :func:`lake_row_error`)."""

    partition_name: str
    table_path: str
    version: int


def lake_row_error(partition_name: str, table_path: str, version: int, file_path: str, problem: str) -> str:
    """The words of a tier table data file whose rows kstream never writes (the JVM reader's
    ``LakeTimestampLookup`` words it alike): which table, version and file, what is wrong, what
    to do."""
    return (f"{partition_name}: the tier table {table_path} (Delta version {version}): its data file {file_path} "
            f"{problem}; kstream never writes such a row, so the table is damaged or was written by another "
            "writer: restore the table from a backup (the log may still hold these offsets)")


def refuse_nulls(where: LakeWhere, file_path: str, table: pa.Table, columns: tuple[str, ...]) -> None:
    """TierError in :func:`lake_row_error`'s words when a row of the data file has a null in one
    of ``columns``: kstream's tierer never writes one, so the table was damaged or written by
    someone else (the JVM reader's ``LakeRowError`` says the same)."""
    for name in columns:
        nulls = table.column(name).null_count
        if nulls:
            raise TierError(lake_row_error(where.partition_name, where.table_path, where.version, file_path,
                                           f"has {nulls} row(s) with a null {name}"))


def _offset_bounds(path: str) -> tuple[int | None, int | None]:
    offsets = pq.read_table(path, columns=[OFFSET_COLUMN]).column(OFFSET_COLUMN)
    if len(offsets) == 0:
        return None, None
    bounds = pc.min_max(offsets)
    return bounds["min"].as_py(), bounds["max"].as_py()


def read_files(found: LakePartition, partition: int, start: int, end: int, arrow_schema: pa.Schema,
               columns: list[str] | None, where: LakeWhere) -> Iterator[pa.Table]:
    """See :meth:`LakeSnapshot.read`. A data file with a row whose offset is null (kstream
    never writes one) is a TierError in :func:`lake_row_error`'s words, as the JVM reader's
    ``LakePartitionReader`` refuses it, not a row the offset filter drops."""
    stop = min(end, found.end_offset)
    wanted = list(arrow_schema.names) if columns is None else list(columns)
    for file in found.files:
        if file.max_offset < start or file.min_offset >= stop:
            continue
        stored = pq.read_schema(file.path).names
        present = [name for name in wanted if name in stored]
        if OFFSET_COLUMN not in present:
            present.append(OFFSET_COLUMN)
        table = pq.read_table(file.path, columns=present)
        refuse_nulls(where, file.path, table, (OFFSET_COLUMN,))
        if file.min_offset < start or file.max_offset >= stop:  # (a file wholly inside needs no filter)
            offsets = table.column(OFFSET_COLUMN)
            table = table.filter(pc.and_(pc.greater_equal(offsets, start), pc.less(offsets, stop)))
        if table.num_rows == 0:
            continue
        order = pc.sort_indices(table.column(OFFSET_COLUMN))
        if not _ascending(order):  # delta-rs does not keep the order of the batches it was handed
            table = table.take(order)
        arrays = []
        for name in wanted:
            if name in table.column_names:
                arrays.append(table.column(name))
            elif name == PARTITION_COLUMN:
                arrays.append(pa.array(np.full(table.num_rows, partition, dtype=np.int32)))
            else:
                arrays.append(pa.nulls(table.num_rows, arrow_schema.field(name).type))
        yield pa.Table.from_arrays(arrays, names=wanted)


def _ascending(order: pa.Array) -> bool:
    values = order.to_numpy()
    return bool(np.all(values == np.arange(len(values))))


def cast_columns(table: pa.Table | pa.RecordBatch, schema: pa.Schema) -> list[pa.Array]:
    """The lake columns named by ``schema``'s fields, cast to its types (Delta's microsecond
    timestamps to the reader's, large types to plain ones, headers' list item names)."""
    out = []
    for field in schema:
        column = table.column(field.name)
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        out.append(column if column.type == field.type else column.cast(field.type))
    return out


class LakeFetch:
    """A Consumer's reads of one tiered partition's lake, for positions below the log start
    (the union read of the Consumer, docs/TIERING.md): the table at the latest version it has
    seen (opened again when a position is past that version's lake end: the lake only grows),
    read one data file at a time into :class:`~kstream.log.storage.output.StoredBatch` chunks
    of the topic's stored columns, offsets kept (a chunk is sparse: aborted records and
    transaction markers are gaps). Not thread-safe: it lives in its Consumer's thread."""

    def __init__(self, path: str, topic: str, topic_id: str, partition: int, value_schema: pa.Schema | None):
        self.path = path
        self.topic = topic
        self.topic_id = topic_id
        self.partition = partition
        self._stored = _stored_schema(value_schema)
        self._snapshot: LakeSnapshot | None = None
        self._file: tuple[str, pa.Table] | None = None  # the last data file read, filtered to this partition

    def _lake(self, offset: int | None = None) -> LakePartition | None:
        """The partition in the lake (opened again when ``offset`` is past its end); None when
        no table exists yet."""
        if self._snapshot is None or (offset is not None and offset >= self._snapshot.end_offset(self.partition)):
            self._snapshot = LakeSnapshot.open(self.path, self.topic, self.topic_id)
        return None if self._snapshot is None else self._snapshot.partition(self.partition)

    def start_offset(self, log_start: int) -> int:
        """The first offset of lake and log together (``log_start`` when the lake holds nothing)."""
        found = self._lake()
        if found is None or found.end_offset == 0:
            return log_start
        return min(found.start_offset, log_start)

    def offset_for_timestamp(self, timestamp_ms: int) -> int | None:
        """The lake's answer to offsets_for_times (:meth:`LakeSnapshot.offset_for_timestamp`),
        from the table's latest version; None when the lake holds no such record."""
        hit = self.record_for_timestamp(timestamp_ms)
        return None if hit is None else hit[0]

    def record_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp ms) of :meth:`offset_for_timestamp`'s record (a ListOffsets
        answer), from the table's latest version; None when the lake holds no such record."""
        self._snapshot = LakeSnapshot.open(self.path, self.topic, self.topic_id)
        return None if self._snapshot is None else self._snapshot.record_for_timestamp(self.partition, timestamp_ms)

    def covers(self, offset: int) -> bool:
        """Whether the lake holds ``offset``'s place: at or above its first offset, below its end."""
        found = self._lake(offset)
        return found is not None and found.start_offset <= offset < found.end_offset

    def read(self, offset: int, max_bytes: int) -> tuple[list[StoredBatch], int]:
        """(chunks, next offset) from ``offset`` (which :meth:`covers`) on: the rest of the data
        file holding it, about ``max_bytes`` of it (one record at least). The next offset is
        where the next read starts: past the last record taken, the next file's first offset
        or the lake end (what lies between holds no records: aborted ones, markers)."""
        found = self._lake(offset)
        assert found is not None and found.start_offset <= offset < found.end_offset, offset
        files = [f for f in found.files if f.max_offset >= offset]
        if not files:
            return [], found.end_offset  # only gaps left below the lake end
        file = files[0]
        span_end = max(offset, files[1].min_offset if len(files) > 1 else found.end_offset)
        table = self._read_file(file)
        offsets = table.column(OFFSET_COLUMN).to_numpy()
        first = int(np.searchsorted(offsets, offset, side="left"))
        rows = table.slice(first)
        if rows.num_rows == 0:
            return [], span_end
        per_row = max(1, rows.nbytes // rows.num_rows)
        take = min(rows.num_rows, max(1, max_bytes // per_row))
        rows = rows.slice(0, take)
        end = span_end if first + take == len(offsets) else int(offsets[first + take])
        last = int(offsets[first + take - 1])
        if end <= last:  # the next row (or the next file) is not past this one: never read forever
            raise TierError(f"{self.topic}-{self.partition}: the Delta table {self.path} holds offset {end} more "
                            f"than once ({file.path}, or it and the next data file), so it is damaged; restore the "
                            f"table from a backup (the log may still hold these offsets)")
        return _stored_chunks(rows, self._stored, end), end

    def _read_file(self, file: LakeFile) -> pa.Table:
        if self._file is None or self._file[0] != file.path:
            table = next(read_files(LakePartition(file.max_offset + 1, file.min_offset, (file,)), self.partition,
                                    file.min_offset, file.max_offset + 1, self._snapshot_schema(),
                                    [OFFSET_COLUMN, "timestampType", *self._stored.names],
                                    self._where()), None)
            if table is None:  # no rows of the file in range (cannot happen: its statistics say so)
                table = pa.table({OFFSET_COLUMN: pa.array([], pa.int64())})
            self._file = (file.path, table)
        return self._file[1]

    def _snapshot_schema(self) -> pa.Schema:
        assert self._snapshot is not None
        return self._snapshot.schema()

    def _where(self) -> LakeWhere:
        assert self._snapshot is not None
        return LakeWhere(f"{self.topic}-{self.partition}", self.path, self._snapshot.version)


def partition_lake(cluster: Cluster, info: TopicInfo, partition: int,
                   value_schema: pa.Schema | None = None) -> LakeFetch | None:
    """A tiered topic's partition's lake (its Delta table), None when the topic is not tiered."""
    table_dir = cluster.log_config(info).tier_table_dir
    return None if table_dir is None else LakeFetch(table_dir, info.name, info.topic_id, partition, value_schema)


def _stored_schema(value_schema: pa.Schema | None) -> pa.Schema:
    """The columns of a stored batch of the topic (:mod:`kstream.log.storage.records`): key,
    value (or the typed columns), timestamp (int64 ms), headers."""
    values = [pa.field("value", pa.binary())] if value_schema is None else list(value_schema)
    return pa.schema([pa.field("key", pa.binary()), *values, pa.field("timestamp", pa.int64()),
                      pa.field("headers", HEADER_TYPE)])


def _stored_chunks(rows: pa.Table, stored: pa.Schema, end: int) -> list[StoredBatch]:
    """``rows`` (lake columns, in offset order) as sparse StoredBatches ending at ``end``: one per
    run of CreateTime records, and one per run of LogAppendTime records sharing a time (a stored
    batch has one append time)."""
    offsets = rows.column(OFFSET_COLUMN).to_numpy().astype(np.int64)
    millis = pc.cast(rows.column("timestamp"), pa.timestamp("ms", tz="UTC")).cast(pa.int64())
    kinds = rows.column("timestampType").to_numpy(zero_copy_only=False)
    times = millis.to_numpy()
    appended = kinds == LOG_APPEND_TIME
    change = np.flatnonzero((kinds[1:] != kinds[:-1]) | (appended[1:] & (times[1:] != times[:-1]))) + 1
    cuts = [0, *change.tolist(), len(offsets)]
    columns = []
    for field in stored:
        if field.name == "timestamp":
            columns.append(millis.combine_chunks())
        else:
            column = rows.column(field.name).combine_chunks()
            columns.append(column if column.type == field.type else column.cast(field.type))
    batch = pa.RecordBatch.from_arrays(columns, schema=stored)
    chunks = []
    for index, (a, b) in enumerate(pairwise(cuts)):
        span_end = end if index == len(cuts) - 2 else int(offsets[b])
        chunks.append(StoredBatch(int(offsets[a]), batch.slice(a, b - a), int(times[a:b].max()),
                                  bool(appended[a]), -1, offsets[a:b], span_end))
    return chunks

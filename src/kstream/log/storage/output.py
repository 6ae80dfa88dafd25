"""What readers see: stored frames turned into output batches and Python records.

Output columns of a bytes topic: key, value, topic, partition, offset,
timestamp, timestampType, headers. A typed topic gives its declared columns in
place of value. Offsets are not stored per record (base offset + row) except in
a frame the cleaner rewrote (a *sparse* frame: its rows carry offset deltas and
some offsets of its span have no record); a batch stored without timestamps
takes the frame's ``max_timestamp`` for every record.
Columns this module adds are built from buffers, not Python objects, so the
cost per batch stays a few small allocations.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat
from typing import Any

import numpy as np
import pyarrow as pa

from kstream.log.storage import format as fmt
from kstream.log.storage.element_count import row_elements
from kstream.log.storage.records import HEADER_TYPE, PayloadCodec
from kstream.log.storage.segment import Frame

TIMESTAMP_TYPE = pa.timestamp("ms", tz="UTC")
CREATE_TIME = 0
LOG_APPEND_TIME = 1
_META_FIELDS = [
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", TIMESTAMP_TYPE),
    pa.field("timestampType", pa.int32()),
    pa.field("headers", HEADER_TYPE),
]


def output_schema(value_schema: pa.Schema | None) -> pa.Schema:
    """The schema of batches a consumer or the Spark source returns for a topic."""
    value_fields = [pa.field("value", pa.binary())] if value_schema is None else list(value_schema)
    return pa.schema([pa.field("key", pa.binary()), *value_fields, *_META_FIELDS])


@dataclass(frozen=True, slots=True)
class StoredBatch:
    """A decoded frame: its stored columns and the header fields readers need.

    Dense (``offsets`` None): row *i* has offset ``base_offset + i``. Sparse (a frame the
    cleaner rewrote): row *i* has offset ``offsets[i]`` (increasing) and the batch holds the
    offsets up to ``span_end``, some of them without a record (a gap is not data loss: the
    cleaner removed a record another with the same key replaced). Use :meth:`row_offsets`,
    :meth:`rows_from` and :meth:`until`, never ``base_offset + row``.
    """

    base_offset: int
    batch: pa.RecordBatch
    max_timestamp: int
    log_append_time: bool
    leader_epoch: int = -1  # of the leader that appended the frame
    offsets: np.ndarray | None = None  # int64 offset of each row, sparse frames only
    span_end: int = -1  # sparse frames only: the offset after the batch's span

    @property
    def next_offset(self) -> int:
        """The offset after this batch (after its span when sparse)."""
        if self.offsets is None:
            return self.base_offset + self.batch.num_rows
        return self.span_end

    def row_offsets(self) -> np.ndarray:
        """Each row's offset (int64)."""
        if self.offsets is None:
            return np.arange(self.base_offset, self.base_offset + self.batch.num_rows, dtype=np.int64)
        return self.offsets

    def offset_of(self, row: int) -> int:
        """The offset of row ``row`` (``next_offset`` for the row after the last)."""
        if self.offsets is None:
            return self.base_offset + row
        return int(self.offsets[row]) if row < len(self.offsets) else self.span_end

    def slice_from(self, offset: int) -> StoredBatch:
        """The records at ``offset`` and after."""
        if self.offsets is None:
            skip = offset - self.base_offset
            if skip <= 0:
                return self
            return StoredBatch(offset, self.batch.slice(skip), self.max_timestamp, self.log_append_time,
                               self.leader_epoch)
        if offset <= self.base_offset:
            return self
        skip = int(np.searchsorted(self.offsets, offset, side="left"))
        return StoredBatch(min(offset, self.span_end), self.batch.slice(skip), self.max_timestamp,
                           self.log_append_time, self.leader_epoch, self.offsets[skip:], self.span_end)

    def rows_from(self, row: int) -> StoredBatch:
        """The records from row index ``row`` on."""
        return self.slice_from(self.offset_of(row))

    def until(self, end: int) -> StoredBatch:
        """The records before offset ``end``; the batch then ends at ``end`` if it went past it."""
        if end >= self.next_offset:
            return self
        if self.offsets is None:
            return self.head(end - self.base_offset)
        cut = int(np.searchsorted(self.offsets, end, side="left"))
        return StoredBatch(self.base_offset, self.batch.slice(0, cut), self.max_timestamp,
                           self.log_append_time, self.leader_epoch, self.offsets[:cut], max(end, self.base_offset))

    def head(self, count: int) -> StoredBatch:
        """The first ``count`` records (a sparse batch then ends after the last one kept)."""
        if self.offsets is None:
            return StoredBatch(self.base_offset, self.batch.slice(0, count), self.max_timestamp,
                               self.log_append_time, self.leader_epoch)
        return self.until(self.offset_of(count - 1) + 1 if count > 0 else self.base_offset)


def decode_frame(codec: PayloadCodec, frame: Frame, columns: frozenset[str] | None = None) -> StoredBatch:
    """The records of a frame that holds records (:attr:`FrameHeader.holds_records`)."""
    header = frame.header
    assert header.holds_records, header
    if not header.attributes & fmt.SPARSE:
        batch = codec.decode(frame.payload, header.schema_length, columns)
        return StoredBatch(header.base_offset, batch, header.max_timestamp,
                           bool(header.attributes & fmt.LOG_APPEND_TIME), header.leader_epoch)
    wanted = None if columns is None else columns | {fmt.OFFSET_DELTA_COLUMN}
    batch = codec.decode(frame.payload, header.schema_length, wanted)
    deltas = batch.column(fmt.OFFSET_DELTA_COLUMN).to_numpy(zero_copy_only=False)
    batch = batch.drop_columns([fmt.OFFSET_DELTA_COLUMN])
    return StoredBatch(header.base_offset, batch, header.max_timestamp,
                       bool(header.attributes & fmt.LOG_APPEND_TIME), header.leader_epoch,
                       deltas.astype(np.int64) + header.base_offset, header.next_offset)


def _filled(data_type: pa.DataType, dtype: type, value: int, count: int) -> pa.Array:
    """A column of ``count`` copies of ``value``, built straight from a buffer."""
    return pa.Array.from_buffers(data_type, count, [None, pa.py_buffer(np.full(count, value, dtype))])


def _timestamps(stored: StoredBatch) -> pa.Array:
    n = stored.batch.num_rows
    if not stored.log_append_time and "timestamp" in stored.batch.schema.names:
        return stored.batch.column("timestamp").view(TIMESTAMP_TYPE)
    return _filled(TIMESTAMP_TYPE, np.int64, stored.max_timestamp, n)


class OutputBuilder:
    """Builds output batches of one partition; reuses what does not change per batch.

    Arrow arrays are immutable, so the topic, partition and timestampType
    columns, the same for every record of the partition, and the all-null
    columns of fields a stored batch lacks, are built once (at the largest
    length seen) and handed out as zero-copy slices. Which output column comes
    from where is worked out once per stored schema. Not thread-safe; one per
    assigned partition.
    """

    def __init__(self, topic: str, partition: int, schema: pa.Schema):
        self.topic = topic
        self.partition = partition
        self.schema = schema
        self._constants: dict[str, pa.Array] = {}
        self._capacity = 0
        self._plans: dict[tuple[str, ...], list[tuple[int, Any]]] = {}

    def _constant(self, name: str, n: int) -> pa.Array:
        if n > self._capacity:
            self._capacity = max(n, 2 * self._capacity, 1024)
            self._constants = {}
        column = self._constants.get(name)
        if column is None:
            column = self._constants[name] = self._make_constant(name, self._capacity)
        return column.slice(0, n)

    def _make_constant(self, name: str, count: int) -> pa.Array:
        if name == "topic":
            data = self.topic.encode("utf-8")
            offsets = np.arange(count + 1, dtype=np.int32) * np.int32(len(data))
            return pa.StringArray.from_buffers(count, pa.py_buffer(offsets), pa.py_buffer(data * count))
        if name.startswith("null:"):
            return pa.nulls(count, self.schema.field(name[len("null:"):]).type)
        value = {"partition": self.partition, "create": CREATE_TIME, "append": LOG_APPEND_TIME}[name]
        return _filled(pa.int32(), np.int32, value, count)

    def _plan(self, names: tuple[str, ...]) -> list[tuple[int, Any]]:
        """Per output field: (kind, argument): a stored column's index, or what to make."""
        plan: list[tuple[int, Any]] = []
        for field in self.schema:
            name = field.name
            if name in ("topic", "partition"):
                plan.append((_CONSTANT, name))
            elif name == "offset":
                plan.append((_OFFSET, None))
            elif name == "timestamp":
                plan.append((_TIMESTAMP, None))
            elif name == "timestampType":
                plan.append((_TIMESTAMP_TYPE, None))
            elif name in names:
                plan.append((_STORED, names.index(name)))
            else:  # absent in this batch (no key/headers, or an older schema version)
                plan.append((_CONSTANT, f"null:{name}"))
        self._plans[names] = plan
        return plan

    def build(self, stored: StoredBatch) -> pa.RecordBatch:
        """One stored batch as an output batch of :attr:`schema` (see :func:`output_schema`)."""
        batch = stored.batch
        n = batch.num_rows
        names = tuple(batch.schema.names)
        plan = self._plans.get(names) or self._plan(names)
        columns: list[pa.Array] = []
        for kind, argument in plan:
            if kind == _STORED:
                columns.append(batch.column(argument))
            elif kind == _CONSTANT:
                columns.append(self._constant(argument, n))
            elif kind == _OFFSET:
                offsets = stored.row_offsets()
                columns.append(pa.Array.from_buffers(_INT64, n, [None, pa.py_buffer(offsets)]))
            elif kind == _TIMESTAMP:
                columns.append(_timestamps(stored))
            else:
                columns.append(self._constant("append" if stored.log_append_time else "create", n))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


_STORED, _CONSTANT, _OFFSET, _TIMESTAMP, _TIMESTAMP_TYPE = range(5)
_INT64 = pa.int64()


def to_python_records(stored: StoredBatch, typed: bool, max_items: int
                      ) -> tuple[Any, Any, Any, Any, dict[int, int]]:
    """(keys, values, timestamps ms, headers) as iterables of Python objects, one per record,
    and the records not converted: a typed value that would become more than ``max_items``
    values (:mod:`kstream.log.storage.element_count`) is None in ``values`` and its row index maps to
    its count (a number past ``max_items``) in the last item."""
    batch = stored.batch
    n = batch.num_rows
    names = batch.schema.names
    keys = batch.column("key").to_pylist() if "key" in names else repeat(None, n)
    too_large: dict[int, int] = {}
    if typed:
        value_columns = batch.select([name for name in names if name not in ("key", "timestamp", "headers")])
        too_large = _too_large_rows(value_columns, max_items)
        if too_large:  # convert the others one row at a time
            values: Any = [None if i in too_large else value_columns.slice(i, 1).to_pylist()[0] for i in range(n)]
        else:
            values = value_columns.to_pylist()
    else:
        values = batch.column("value").to_pylist()
    if not stored.log_append_time and "timestamp" in names:
        timestamps: Any = batch.column("timestamp").to_pylist()
    else:
        timestamps = repeat(stored.max_timestamp, n)
    if "headers" in names:
        headers: Any = [None if h is None else [(e["key"], e["value"]) for e in h]
                        for h in batch.column("headers").to_pylist()]
    else:
        headers = repeat(None, n)
    return keys, values, timestamps, headers, too_large


def _too_large_rows(values: pa.RecordBatch, max_items: int) -> dict[int, int]:
    """Row index -> element count of the rows over ``max_items``. One count of the whole batch
    first: a batch within ``max_items`` in all has no such row (the common case, cheap:
    counting reads lengths and offsets only)."""
    if row_elements(values, max_items) <= max_items:
        return {}
    counts = ((i, row_elements(values.slice(i, 1), max_items)) for i in range(values.num_rows))
    return {i: count for i, count in counts if count > max_items}


def record_timestamps(stored: StoredBatch) -> np.ndarray:
    """Each record's timestamp (ms; the batch's log-append time for such topics), as int64."""
    return _timestamps(stored).view(pa.int64()).to_numpy(zero_copy_only=False)


def first_offset_at_or_after(stored: StoredBatch, timestamp_ms: int) -> int:
    """Offset of the first record of ``stored`` with timestamp >= ``timestamp_ms``; -1 if none."""
    timestamps = record_timestamps(stored)
    hits = np.nonzero(timestamps >= timestamp_ms)[0]
    return stored.offset_of(int(hits[0])) if len(hits) else -1

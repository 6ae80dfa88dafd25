"""Record batches as Arrow: the stored columns, checking user input, IPC bytes.

A *bytes* topic stores the columns ``key`` (binary), ``value`` (binary),
``timestamp`` (int64 ms) and ``headers`` (list of (string, binary)); only
``value`` is always present. A batch without a ``timestamp`` column means every
record has the frame's ``max_timestamp``; without ``key`` or ``headers`` they
are null. A *typed* topic stores its declared Arrow columns in place of
``value`` (plus the same optional ``key``/``timestamp``/``headers``).

This module turns user tables into stored batches (checking types, raising
:class:`InvalidRecordError` with the column, the type found and the type
wanted), and encodes/decodes the IPC payload of a frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import crc32c as _crc32c
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from kstream.errors import InvalidRecordError, SchemaError

HEADER_TYPE: Final = pa.list_(
    pa.struct([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.binary())])
)
KEY_FIELD: Final = pa.field("key", pa.binary())
VALUE_FIELD: Final = pa.field("value", pa.binary())
TIMESTAMP_FIELD: Final = pa.field("timestamp", pa.int64())
HEADERS_FIELD: Final = pa.field("headers", HEADER_TYPE)
RECORD_COLUMNS: Final = ("key", "value", "timestamp", "headers")
ROUTING_COLUMNS: Final = ("partition", "topic")
# Names a typed topic's own columns may not use: the record fields above and
# the columns a reader adds.
RESERVED_NAMES: Final = frozenset(
    {"key", "timestamp", "headers", "topic", "partition", "offset", "timestampType"}
)
_BINARY_LIKE: Final = (pa.binary(), pa.large_binary(), pa.string(), pa.large_string())


def check_typed_schema(schema: pa.Schema) -> None:
    """Raise :class:`SchemaError` unless ``schema`` can be a typed topic's value schema."""
    if len(schema) == 0:
        raise SchemaError("a typed topic's schema needs at least one column")
    names = schema.names
    if len(set(names)) != len(names):
        raise SchemaError(f"duplicate column names in schema: {names}")
    for field in schema:
        if field.name in RESERVED_NAMES:
            raise SchemaError(
                f"column {field.name!r} is reserved (one of {sorted(RESERVED_NAMES)}); "
                "rename it, or pass it as the record key/timestamp/headers"
            )
        if _has_dictionary(field.type):
            raise SchemaError(
                f"column {field.name!r} is dictionary-encoded ({field.type}); "
                "declare the plain value type instead"
            )


def check_schema_evolution(old: pa.Schema, new: pa.Schema) -> None:
    """Allow only appending nullable columns; everything else raises :class:`SchemaError`."""
    check_typed_schema(new)
    for i, field in enumerate(old):
        if i >= len(new) or new.field(i).name != field.name:
            raise SchemaError(
                f"column {field.name!r} was removed, renamed or moved; only new nullable "
                "columns at the end may be added"
            )
        if not new.field(i).type.equals(field.type):
            raise SchemaError(
                f"column {field.name!r} changes type from {field.type} to {new.field(i).type}; "
                "create a new topic for an incompatible schema"
            )
    for field in list(new)[len(old) :]:
        if not field.nullable:
            raise SchemaError(f"new column {field.name!r} must be nullable (old batches lack it)")


# Kafka's broker message for the same refusal (INVALID_RECORD), kept word for word.
KEYLESS_ON_COMPACTED: Final = "Compacted topic cannot accept message without key"


def keyless_refused(topic: str, cleanup_policy: str, where: str) -> InvalidRecordError:
    """The error for a record without a key on a compacted topic (``where``: which record)."""
    return InvalidRecordError(
        f"{KEYLESS_ON_COMPACTED}: topic {topic!r} has cleanup.policy={cleanup_policy}, so every "
        f"record needs a key (the cleaner keeps the latest record per key), and {where} has none; "
        "give each record a key, or alter the topic's cleanup.policy to delete")


def check_keys_for_compaction(batch: pa.RecordBatch, topic: str, cleanup_policy: str) -> None:
    """Raise :func:`keyless_refused` unless every row of a stored ``batch`` has a key."""
    if "key" not in batch.schema.names:
        raise keyless_refused(topic, cleanup_policy, f"the batch (no 'key' column, {batch.num_rows} rows)")
    nulls = batch.column("key").null_count
    if nulls:
        first = pc.index(pc.is_null(batch.column("key")), True).as_py()
        raise keyless_refused(topic, cleanup_policy, f"row {first} of the batch ({nulls} of "
                                                     f"{batch.num_rows} rows without a key)")


def _has_dictionary(data_type: pa.DataType) -> bool:
    if pa.types.is_dictionary(data_type):
        return True
    return any(_has_dictionary(data_type.field(i).type) for i in range(data_type.num_fields))


def to_stored_batch(
    batch: pa.RecordBatch, value_schema: pa.Schema | None
) -> pa.RecordBatch:
    """Check a user batch and return it with the stored column types.

    Routing columns (``partition``, ``topic``) must already be removed.
    ``value_schema`` is None for a bytes topic.
    """
    columns: list[pa.Array] = []
    fields: list[pa.Field] = []
    present = set(batch.schema.names)
    if value_schema is None:
        if "value" not in present:
            raise InvalidRecordError(
                f"a 'value' column is required (binary or string); got columns {batch.schema.names}"
            )
        unknown = present - set(RECORD_COLUMNS)
        if unknown:
            raise InvalidRecordError(
                f"unknown columns {sorted(unknown)} for a bytes topic; allowed: "
                f"{list(RECORD_COLUMNS) + list(ROUTING_COLUMNS)}"
            )
    else:
        allowed = set(value_schema.names) | {"key", "timestamp", "headers"}
        unknown = present - allowed
        if unknown:
            raise SchemaError(
                f"columns {sorted(unknown)} are not in the topic's schema {value_schema.names}; "
                "alter the topic's schema to add them (nullable) first"
            )
    if "key" in present:
        columns.append(_binary_column(batch, "key"))
        fields.append(KEY_FIELD)
    if value_schema is None:
        columns.append(_binary_column(batch, "value"))
        fields.append(VALUE_FIELD)
    else:
        for field in value_schema:
            columns.append(_typed_column(batch, field))
            fields.append(field)
    if "timestamp" in present:
        columns.append(_timestamp_column(batch))
        fields.append(TIMESTAMP_FIELD)
    if "headers" in present:
        columns.append(_headers_column(batch))
        fields.append(HEADERS_FIELD)
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))


def _binary_column(batch: pa.RecordBatch, name: str) -> pa.Array:
    column = batch.column(name)
    if column.type == pa.binary():
        return column
    if column.type in _BINARY_LIKE:
        return column.cast(pa.binary())
    raise InvalidRecordError(
        f"column {name!r} has type {column.type}; expected binary or string"
    )


def _typed_column(batch: pa.RecordBatch, field: pa.Field) -> pa.Array:
    if field.name not in batch.schema.names:
        if field.nullable:
            return pa.nulls(batch.num_rows, field.type)
        raise SchemaError(f"required column {field.name!r} ({field.type}) is missing")
    column = batch.column(field.name)
    if not column.type.equals(field.type):
        try:
            column = column.cast(field.type, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
            raise SchemaError(
                f"column {field.name!r} has type {column.type}; the topic declares {field.type}"
            ) from err
    if not field.nullable and column.null_count:
        raise SchemaError(f"column {field.name!r} is not nullable but has {column.null_count} nulls")
    return column


def _timestamp_column(batch: pa.RecordBatch) -> pa.Array:
    column = batch.column("timestamp")
    if pa.types.is_timestamp(column.type):
        return column.cast(pa.timestamp("ms", tz=column.type.tz)).cast(pa.int64())
    if pa.types.is_integer(column.type):
        return column.cast(pa.int64())
    raise InvalidRecordError(
        f"column 'timestamp' has type {column.type}; expected a timestamp or int64 milliseconds"
    )


def _headers_column(batch: pa.RecordBatch) -> pa.Array:
    column = batch.column("headers")
    if column.type.equals(HEADER_TYPE):
        return column
    try:
        if pa.types.is_map(column.type):
            return pa.ListArray.from_arrays(
                column.offsets, pa.StructArray.from_arrays([column.keys, column.items], ["key", "value"]),
                mask=column.is_null(),
            ).cast(HEADER_TYPE)
        return column.cast(HEADER_TYPE)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
        raise InvalidRecordError(
            f"column 'headers' has type {column.type}; expected {HEADER_TYPE}"
        ) from err


def timestamp_range(batch: pa.RecordBatch, default_ms: int) -> tuple[int, int]:
    """(min, max) record timestamp of a stored batch; ``default_ms`` when it has none."""
    if "timestamp" not in batch.schema.names:
        return default_ms, default_ms
    bounds = pc.min_max(batch.column("timestamp"))
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    if low is None:
        return default_ms, default_ms
    return low, high


def batch_from_records(
    values: Sequence[bytes | None],
    keys: Sequence[bytes | None] | None,
    timestamps_ms: Sequence[int] | None,
    headers: Sequence[Sequence[tuple[str, bytes | None]] | None] | None,
) -> pa.RecordBatch:
    """A stored bytes batch from Python lists (the per-record producer path)."""
    columns = []
    fields = []
    if keys is not None:
        columns.append(pa.array(keys, pa.binary()))
        fields.append(KEY_FIELD)
    columns.append(pa.array(values, pa.binary()))
    fields.append(VALUE_FIELD)
    if timestamps_ms is not None:
        columns.append(pa.array(timestamps_ms, pa.int64()))
        fields.append(TIMESTAMP_FIELD)
    if headers is not None:
        columns.append(pa.array(headers, HEADER_TYPE))
        fields.append(HEADERS_FIELD)
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))


class _PartsSink:
    """A file-like object that keeps what Arrow's IPC writer writes, without copying:
    body buffers arrive as pyarrow Buffers, metadata as small bytes."""

    mode = "wb"
    closed = False

    def __init__(self) -> None:
        self.parts: list[Any] = []
        self.size = 0

    def write(self, data: Any) -> int:
        n = data.size if isinstance(data, pa.Buffer) else len(data)
        self.parts.append(data)
        self.size += n
        return n

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class Payload:
    """A frame payload as the list of pieces Arrow produced (written with one pwritev)."""

    parts: tuple[Any, ...]
    size: int
    crc: int
    schema_length: int

    def to_bytes(self) -> bytes:
        return b"".join(p.to_pybytes() if isinstance(p, pa.Buffer) else bytes(p) for p in self.parts)


class PayloadCodec:
    """Encodes stored batches to frame payloads and back, caching schemas.

    Encoding does not copy the batch's buffers: the payload's parts reference
    them, so the batch must stay alive until the payload is written (append
    it right away). Not thread-safe; one per producer or reader.
    """

    def __init__(self, compression: str = "none", cache_limit: int = 64):
        self.compression = compression
        self._write_options = ipc.IpcWriteOptions(
            compression=None if compression == "none" else compression
        )
        self._schema_bytes: dict[pa.Schema, bytes] = {}
        self._schemas: dict[bytes, pa.Schema] = {}
        self._cache_limit = cache_limit

    def _schema_message(self, schema: pa.Schema) -> bytes:
        schema_bytes = self._schema_bytes.get(schema)
        if schema_bytes is None:
            if len(self._schema_bytes) >= self._cache_limit:
                self._schema_bytes.clear()
            schema_bytes = schema.serialize().to_pybytes()
            self._schema_bytes[schema] = schema_bytes
        return schema_bytes

    def encoded_size(self, batch: pa.RecordBatch) -> int:
        """Bytes of the payload :meth:`encode` makes, uncompressed (exact for "none")."""
        return len(self._schema_message(batch.schema)) + ipc.get_record_batch_size(batch)

    def encode(self, batch: pa.RecordBatch) -> Payload:
        """The IPC stream of ``batch`` (schema message + batch message) and its checksum."""
        sink = _PartsSink()
        with ipc.new_stream(pa.PythonFile(sink, mode="w"), batch.schema,
                            options=self._write_options) as writer:
            writer.write_batch(batch)
        # The stream ends with an 8-byte end-of-stream marker we do not store.
        parts = sink.parts
        trim = 8
        while trim:
            last = parts.pop()
            size = last.size if isinstance(last, pa.Buffer) else len(last)
            if size > trim:
                parts.append(last[: size - trim])
                size = trim
            trim -= size
        crc = 0
        for part in parts:
            crc = _crc32c.crc32c(part, crc)
        return Payload(tuple(parts), sink.size - 8, crc, len(self._schema_message(batch.schema)))

    def decode(self, payload: pa.Buffer | memoryview, schema_length: int,
               columns: frozenset[str] | None = None) -> pa.RecordBatch:
        """The record batch stored in a frame payload (zero copy when uncompressed).

        With ``columns``, only those stored columns are read: the others are
        neither decompressed nor decoded.
        """
        buffer = payload if isinstance(payload, pa.Buffer) else pa.py_buffer(payload)
        schema_key = buffer.slice(0, schema_length).to_pybytes()
        schema = self._schemas.get(schema_key)
        if schema is None:
            if len(self._schemas) >= self._cache_limit:
                self._schemas.clear()
            schema = ipc.read_schema(buffer.slice(0, schema_length))
            self._schemas[schema_key] = schema
        if columns is None or columns.issuperset(schema.names):
            return ipc.read_record_batch(buffer.slice(schema_length), schema)
        wanted = [i for i, name in enumerate(schema.names) if name in columns]
        reader = ipc.open_stream(buffer, options=ipc.IpcReadOptions(included_fields=wanted))
        return reader.read_next_batch()

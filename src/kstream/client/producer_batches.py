"""Batch assembly and encoding for the Producer: the records of a partition's open batch, and
their way to the frames the log stores.

A :class:`OpenBatch` collects one partition's records as produce() hands them in
(values and timestamps per record; keys, headers and delivery callbacks only
once some record has one). :class:`TopicState` is what the producer keeps per
topic: metadata, partition handles, open batches and the sticky partition.
:class:`BatchEncoder` turns records into a stored Arrow batch, cuts it into
pieces whose frames fit the topic's ``message.max.bytes`` and encodes each
piece with the producer's ``compression.type``.

The record checks produce() runs before it takes the producer's lock
(:func:`to_bytes`, :func:`headers_list`) live here too: they raise
InvalidRecordError / InvalidHeaderError and change nothing.

Nothing here takes a lock or writes to the log; the caller holds the
producer's lock over an open batch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

import numpy as np
import pyarrow as pa

from kstream.client.typed_values import TypedValues
from kstream.errors import InvalidHeaderError, InvalidRecordError, RecordTooLargeError
from kstream.log.cluster.metadata import TopicInfo
from kstream.log.cluster.partition import Partition
from kstream.log.storage import format as fmt
from kstream.log.storage.partition_log import EncodedBatch
from kstream.log.storage.records import (
    HEADER_TYPE,
    Payload,
    PayloadCodec,
    batch_from_records,
    timestamp_range,
    to_stored_batch,
)
from kstream.message import KafkaError

DeliveryCallback = Callable[[KafkaError | None, Any], None]
RECORD_OVERHEAD_BYTES = 16  # offsets and timestamp per record in the Arrow batch

# A piece of a stored batch that fits one frame, with its payload when cutting had to encode it.
Piece = tuple[pa.RecordBatch, Payload | None]


class OpenBatch:
    """Records waiting for one partition's next batch.

    Values and timestamps (float seconds) are kept per record; keys and
    headers only from the first record that has one, and delivery callbacks
    by record index (the common unkeyed path appends two items per record).
    """

    __slots__ = ("callbacks", "deadline", "headers", "keys", "size", "timestamps", "values")

    def __init__(self, deadline: float):
        self.values: list[Any] = []
        self.timestamps: list[float] = []
        self.keys: list[bytes | None] | None = None
        self.headers: list[Any] | None = None
        self.callbacks: dict[int, DeliveryCallback] | None = None  # record index -> callback
        self.size = 0
        self.deadline = deadline

    def add_extras(self, key: bytes | None, headers: Any) -> None:
        """Record the key/headers of the record just appended."""
        index = len(self.values) - 1
        self.keys = _sparse_append(self.keys, key, index)
        self.headers = _sparse_append(self.headers, headers, index)


def _sparse_append(column: list[Any] | None, value: Any, index: int) -> list[Any] | None:
    """Append ``value`` as item ``index`` of a column kept only once some value is not None."""
    if column is None:
        if value is None:
            return None
        column = [None] * index
    column.append(value)
    return column


class TopicState:
    """What a producer keeps per topic: metadata, partition handles, open batches."""

    __slots__ = (
        "batches",
        "compacted",
        "info",
        "max_frame_bytes",
        "num_partitions",
        "partitions",
        "schema",
        "sticky",
        "sticky_bytes",
        "typed",
    )

    def __init__(self, info: TopicInfo, schema: pa.Schema | None, max_frame_bytes: int,
                 cleanup_policy: str = "delete"):
        self.info = info
        # cleanup.policy has compact: a record without a key is refused (Kafka's INVALID_RECORD);
        # the policy string itself, for the error message, else None.
        self.compacted = cleanup_policy if "compact" in cleanup_policy.split(",") else None
        self.num_partitions = info.num_partitions
        self.schema = schema
        self.typed = None if schema is None else TypedValues(info.name, schema)
        self.partitions: list[Partition | None] = [None] * info.num_partitions
        self.batches: list[OpenBatch | None] = [None] * info.num_partitions
        self.sticky = 0
        self.sticky_bytes = 0  # sent to the sticky partition since it was chosen
        self.max_frame_bytes = max_frame_bytes


class _ClosedBatches:
    """The open batches of a closed producer's topics: any look-up raises the closed error
    (so produce() needs no closed check of its own on every record)."""

    def __getitem__(self, partition: int) -> OpenBatch | None:
        raise RuntimeError("Producer has been closed")


CLOSED = cast("list[OpenBatch | None]", _ClosedBatches())


class BatchEncoder:
    """Stored batches and frames of one producer's ``compression.type``. Stateless between
    calls (the codec keeps no per-batch state), so any thread may use it."""

    __slots__ = ("attributes", "codec")

    def __init__(self, compression: str):
        self.codec = PayloadCodec(compression)
        self.attributes = fmt.CODECS[compression]

    def stored(self, schema: pa.Schema | None, batch: OpenBatch) -> tuple[pa.RecordBatch, np.ndarray]:
        """The open batch as a stored Arrow batch, with its timestamps in ms (the delivery
        reports carry them). A typed topic's record that does not match raises InvalidRecordError."""
        seconds = pa.array(batch.timestamps, pa.float64()).to_numpy()
        timestamps_ms = np.rint(seconds * 1000).astype(np.int64)
        if schema is None:
            return batch_from_records(batch.values, batch.keys, timestamps_ms, batch.headers), timestamps_ms
        return _typed_batch(schema, batch, timestamps_ms), timestamps_ms

    def pieces(self, state: TopicState, batch: pa.RecordBatch) -> list[Piece]:
        """Cut a stored batch into pieces whose frames fit the topic's message.max.bytes.

        Sizes come from Arrow's exact IPC size computation; a compressed size is only known by
        compressing, so that payload comes back with its piece and is not encoded again. A
        single record that cannot fit raises RecordTooLargeError.
        """
        if batch.num_rows == 0:
            return []
        payload = None
        if self.codec.compression == "none":
            frame_bytes = fmt.HEADER_SIZE + self.codec.encoded_size(batch)  # exact
        else:
            payload = self.codec.encode(batch)
            frame_bytes = fmt.HEADER_SIZE + payload.size
        if frame_bytes <= state.max_frame_bytes:
            return [(batch, payload)]
        if batch.num_rows == 1:
            raise RecordTooLargeError(
                f"a record of {frame_bytes} bytes (stored) exceeds topic {state.info.name!r}'s "
                f"message.max.bytes ({state.max_frame_bytes}); raise it with "
                f"`kstream topics alter {state.info.name} --config message.max.bytes=N`")
        pieces = min(batch.num_rows, -(-frame_bytes // state.max_frame_bytes) + 1)
        rows = -(-batch.num_rows // pieces)
        return [p for i in range(0, batch.num_rows, rows) for p in self.pieces(state, batch.slice(i, rows))]

    def encode(self, batch: pa.RecordBatch, now_ms: int, payload: Payload | None = None) -> EncodedBatch:
        """One piece as the frame the log appends (no producer id or sequence yet)."""
        low, high = timestamp_range(batch, now_ms)
        if payload is None:
            payload = self.codec.encode(batch)
        return EncodedBatch(payload, batch.num_rows, low, high, self.attributes)


def _typed_batch(schema: pa.Schema, batch: OpenBatch, timestamps_ms: np.ndarray) -> pa.RecordBatch:
    try:
        columns = pa.RecordBatch.from_pylist(batch.values, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
        raise InvalidRecordError(f"a record does not match the topic's schema {schema}: {err}") from err
    table = columns.append_column("timestamp", pa.array(timestamps_ms))
    if batch.keys is not None:
        table = table.append_column("key", pa.array(batch.keys, pa.binary()))
    if batch.headers is not None:
        table = table.append_column("headers", pa.array(batch.headers, HEADER_TYPE))
    return to_stored_batch(table, schema)


def to_bytes(value: Any, what: str) -> bytes:
    """A record's value, key or header value as bytes (str as UTF-8), else InvalidRecordError."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise InvalidRecordError(f"record {what} must be bytes or str, got {type(value).__name__}")


def headers_list(headers: Any) -> list[tuple[str, bytes | None]]:
    """Headers as stored: a dict, or a list of (name, value) pairs; values bytes, str or None.
    Anything else raises InvalidHeaderError (a TypeError, as confluent-kafka raises)."""
    if isinstance(headers, Mapping):
        items = list(headers.items())
    elif isinstance(headers, list):
        items = headers
    else:
        raise InvalidHeaderError(f"headers must be a list of (name, value) tuples or a dict, "
                                 f"got {type(headers).__name__}")
    result = []
    for item in items:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise InvalidHeaderError(f"a header must be a (name, value) tuple, got {item!r}")
        name, data = item
        if not isinstance(name, str):
            raise InvalidHeaderError(f"header name must be a str, got {type(name).__name__}")
        if data is not None and not isinstance(data, (bytes, str, bytearray, memoryview)):
            raise InvalidHeaderError(f"record header value must be bytes or str (or None), got "
                                     f"{type(data).__name__} for header {name!r}")
        result.append((name, None if data is None else to_bytes(data, "header value")))
    return result

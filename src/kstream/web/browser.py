"""The message browser: a bounded read of one partition, decoded for a page.

Reads with the same :class:`kstream.Consumer` as `kstream consume` (no group:
assigned partitions, nothing committed, nothing written), from an offset or from
the first offset at or after a timestamp (``offsets_for_times``), at most
``count`` records (capped at :data:`MAX_RECORDS`) and stopping at the partition's end
(the consumer's partition-EOF event, so a short partition costs no poll timeout) or when
the log has no more within :data:`POLL_TIMEOUT_S`. Keys, values and header values are shown as
text, JSON, hex or Avro (a schema given on the page, schemaless binary as
fastavro writes it); a typed topic's value is its columns. A value that does not
decode the chosen way shows why in its cell: the record is never dropped.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kstream.consumer import Consumer
from kstream.error import KafkaError
from kstream.errors import ConfigError
from kstream.message import Message, TopicPartition

MAX_RECORDS = 500
POLL_TIMEOUT_S = 0.2
DECODINGS = ("auto", "text", "json", "hex", "avro")
MAX_SHOWN_BYTES = 4096  # per field: a page shows the start of a large value


@dataclass(frozen=True)
class Shown:
    """One field as the page shows it: the text and how it was decoded (or why it was not)."""

    text: str
    kind: str  # "null", "text", "json", "hex", "avro", "columns", or "error"


@dataclass(frozen=True)
class Row:
    partition: int
    offset: int
    timestamp_ms: int
    key: Shown
    value: Shown
    headers: tuple[tuple[str, Shown], ...]


@dataclass(frozen=True)
class BrowseRequest:
    """What to read; :meth:`check` refuses a bad request before anything is opened."""

    topic: str
    partition: int
    offset: int | None = None
    timestamp_ms: int | None = None
    count: int = 50
    decoding: str = "auto"
    avro_schema: str | None = None

    def check(self) -> None:
        if self.decoding not in DECODINGS:
            raise ConfigError(f"decoding {self.decoding!r}: choose one of {', '.join(DECODINGS)}")
        if not 1 <= self.count <= MAX_RECORDS:
            raise ConfigError(f"count {self.count}: give 1..{MAX_RECORDS}")
        if self.decoding == "avro" and not self.avro_schema:
            raise ConfigError("decoding avro needs the writer's schema (Avro JSON)")


def _avro_reader(schema_text: str) -> Any:
    import fastavro

    try:
        return fastavro.parse_schema(json.loads(schema_text))
    except (ValueError, fastavro.schema.SchemaParseException) as err:
        raise ConfigError(f"the Avro schema does not parse: {err}") from err


def show(data: Any, decoding: str, avro_schema: Any = None) -> Shown:
    """``data`` (bytes, None, or a typed topic's dict of columns) as text of ``decoding``."""
    if data is None:
        return Shown("null", "null")
    if isinstance(data, dict):
        return Shown(json.dumps(data, default=str, ensure_ascii=False), "columns")
    raw = bytes(data)[:MAX_SHOWN_BYTES] if decoding != "avro" else bytes(data)
    if decoding == "hex":
        return Shown(raw.hex(" "), "hex")
    if decoding == "avro":
        import fastavro

        try:
            record = fastavro.schemaless_reader(io.BytesIO(raw), avro_schema, None)
        except (ValueError, EOFError, IndexError, TypeError, UnicodeDecodeError) as err:
            return Shown(f"not Avro of the given schema: {err}", "error")
        return Shown(json.dumps(record, default=str, ensure_ascii=False), "avro")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        if decoding == "auto":
            return Shown(raw.hex(" "), "hex")
        return Shown(f"not UTF-8 ({err.reason} at byte {err.start})", "error")
    if decoding in ("json", "auto"):
        try:
            return Shown(json.dumps(json.loads(text), indent=None, ensure_ascii=False), "json")
        except ValueError as err:
            if decoding == "json":
                return Shown(f"not JSON: {err}", "error")
    return Shown(text, "text")


def row_of(message: Message, decoding: str, avro: Any = None) -> Row:
    """One consumed record as the page shows it (``avro``: a parsed schema for "avro")."""
    headers = tuple((name, show(value, "auto" if decoding == "avro" else decoding))
                    for name, value in (message.headers() or []))
    partition, offset = message.partition(), message.offset()
    assert partition is not None and offset is not None
    return Row(partition, offset, message.timestamp()[1], show(message.key(), "auto" if decoding == "avro"
                                                                else decoding),
               show(message.value(), decoding, avro), headers)


def browse(cluster_path: str, request: BrowseRequest) -> list[Row]:
    """At most ``request.count`` records of the partition, from its offset or timestamp (else
    the log start). TopicNotFound/PartitionNotFound as KStreamErrors."""
    return list(_records(cluster_path, request, request.count))


def _is_partition_eof(message: Message) -> bool:
    error = message.error()
    return error is not None and error.code() == KafkaError._PARTITION_EOF


def _records(cluster_path: str, request: BrowseRequest, count: int) -> Iterator[Row]:
    request.check()
    avro = _avro_reader(request.avro_schema) if request.decoding == "avro" and request.avro_schema else None
    with Consumer({"cluster": cluster_path, "enable.partition.eof": True}) as consumer:
        consumer.cluster.partition(request.topic, request.partition).close()  # the not-found errors
        start = request.offset if request.offset is not None else -2  # -2: the log start (OFFSET_BEGINNING)
        if request.timestamp_ms is not None:
            found = consumer.offsets_for_times([TopicPartition(request.topic, request.partition,
                                                               request.timestamp_ms)])
            start = found[0].offset if found[0].offset >= 0 else -1  # -1: past the end
        consumer.assign([TopicPartition(request.topic, request.partition, start)])
        for _ in range(count):
            message = consumer.poll(POLL_TIMEOUT_S)
            if message is None or _is_partition_eof(message):
                return
            yield row_of(message, request.decoding, avro)

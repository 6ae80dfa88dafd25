"""The message browser: a bounded read of one partition, decoded for a page.

Reads with the same :class:`kstream.Consumer` as `kstream consume` (no group:
assigned partitions, nothing committed, nothing written), from an offset or from
the first offset at or after a timestamp (``offsets_for_times``), at most
``count`` records (capped at :data:`MAX_RECORDS`) and stopping at the partition's end
(the consumer's partition-EOF event, so a short partition costs no poll timeout) or when
the log has no more within :data:`POLL_TIMEOUT_S`. On a compacted topic, :func:`lookup`
answers one key's latest value (a :class:`kstream.Table`). Keys, values and header values are shown as
text, JSON, hex or Avro (a schema given on the page, schemaless binary as
fastavro writes it); a typed topic's value is its columns. A value that does not
decode the chosen way shows why in its cell: the record is never dropped.

Every decode is bounded (:class:`DecodeBudget`, from the console's
:class:`~kstream.tools.web.limits.ConsoleLimits`): text, JSON and hex see the first
:data:`MAX_SHOWN_BYTES` of a field and a typed value's text is cut there too; Avro
decodes a value of at most ``decode.max.bytes`` that passes
:func:`~kstream.tools.web.avro_bounds.check_avro` (item count, depth, lengths); and a
page stops decoding once it has spent ``decode.budget.ms``. A value refused shows
"not decodable: why" (or "not decoded: ...") in its cell.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from kstream.client.consumer import Consumer
from kstream.client.partitioner import partition_for_key
from kstream.client.table import Table
from kstream.error import KafkaError
from kstream.errors import ConfigError, ValueTooLargeError
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage.element_count import row_elements
from kstream.message import Message, TopicPartition
from kstream.tools.web.avro_bounds import AvroBoundsError, check_avro
from kstream.tools.web.limits import ConsoleLimits

MAX_RECORDS = 500
POLL_TIMEOUT_S = 0.2
DECODINGS = ("auto", "text", "json", "hex", "avro")
MAX_SHOWN_BYTES = 4096  # per field: a page shows the start of a large value
LOOKUP_MAX_KEYS = 10_000_000  # a key lookup indexes the key's partition: at most this many keys


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


@dataclass(frozen=True)
class AvroSchema:
    """A writer's schema as fastavro parsed it, with the named types it defines."""

    parsed: Any
    named: Mapping[str, Any] = field(default_factory=dict)


def parse_avro_schema(schema_text: str) -> AvroSchema:
    """The Avro JSON schema given on the page; ConfigError if it does not parse."""
    import fastavro

    named: dict[str, Any] = {}
    try:
        return AvroSchema(fastavro.parse_schema(json.loads(schema_text), named_schemas=named), named)
    except (ValueError, TypeError, KeyError, RecursionError, fastavro.schema.SchemaParseException) as err:
        raise ConfigError(f"the Avro schema does not parse: {err}") from err


@dataclass(frozen=True)
class DecodeBudget:
    """What one page may still spend decoding: the limits, and the ``time.monotonic()`` past
    which it decodes nothing more."""

    limits: ConsoleLimits
    deadline: float

    @classmethod
    def start(cls, limits: ConsoleLimits) -> DecodeBudget:
        return cls(limits, time.monotonic() + limits.decode_budget_ms / 1000)

    def spent(self) -> Shown | None:
        """The cell of a value not decoded because the page's time is spent, else None."""
        if time.monotonic() <= self.deadline:
            return None
        return Shown(f"not decoded: this page spent its decode time ({self.limits.decode_budget_ms} ms, "
                     "--decode-budget-ms); ask for fewer records", "error")


def _capped(text: str) -> str:
    """``text`` cut to :data:`MAX_SHOWN_BYTES` characters, saying how much was cut."""
    if len(text) <= MAX_SHOWN_BYTES:
        return text
    return f"{text[:MAX_SHOWN_BYTES]}… ({len(text) - MAX_SHOWN_BYTES} more characters)"


def _show_avro(raw: bytes, schema: AvroSchema, budget: DecodeBudget) -> Shown:
    import fastavro

    limits = budget.limits
    if len(raw) > limits.decode_max_bytes:
        return Shown(f"not decodable: {len(raw)} bytes, more than the console decodes as Avro "
                     f"({limits.decode_max_bytes}, --decode-max-bytes)", "error")
    try:
        check_avro(raw, schema.parsed, schema.named, max_items=limits.decode_max_items, deadline=budget.deadline)
        record = fastavro.schemaless_reader(io.BytesIO(raw), schema.parsed, None)
    except AvroBoundsError as err:
        return Shown(f"not decodable: {err}", "error")
    except (ValueError, EOFError, IndexError, TypeError, KeyError, ArithmeticError) as err:
        # (ArithmeticError: a logical type's value out of range, e.g. a date past year 9999)
        return Shown(f"not Avro of the given schema: {err}", "error")
    return Shown(_capped(json.dumps(record, default=str, ensure_ascii=False)), "avro")


def show(data: Any, decoding: str, avro_schema: AvroSchema | None = None,
         budget: DecodeBudget | None = None) -> Shown:
    """``data`` (bytes, None, or a typed topic's dict of columns) as text of ``decoding``,
    within ``budget`` (default: a fresh one of the default limits)."""
    if budget is None:
        budget = DecodeBudget.start(ConsoleLimits())
    if data is None:
        return Shown("null", "null")
    if decoding not in ("hex", "text") and (refused := budget.spent()) is not None:  # those two are cheap
        return refused
    if isinstance(data, dict):
        return Shown(_capped(json.dumps(data, default=str, ensure_ascii=False)), "columns")
    if decoding == "avro":
        assert avro_schema is not None, "BrowseRequest.check requires a schema for avro"
        return _show_avro(bytes(data), avro_schema, budget)
    raw = bytes(data[:MAX_SHOWN_BYTES])
    if decoding == "hex":
        return Shown(raw.hex(" "), "hex")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        if decoding == "auto":
            return Shown(raw.hex(" "), "hex")
        return Shown(f"not UTF-8 ({err.reason} at byte {err.start})", "error")
    if decoding in ("json", "auto"):
        try:
            return Shown(json.dumps(json.loads(text), indent=None, ensure_ascii=False), "json")
        except RecursionError:  # 4 KiB of "[": deeper than the parser's recursion allows
            if decoding == "json":
                return Shown("not JSON: nested deeper than the console's JSON parser goes", "error")
        except ValueError as err:
            if decoding == "json":
                return Shown(f"not JSON: {err}", "error")
    return Shown(text, "text")


def row_of(message: Message, decoding: str, avro: AvroSchema | None = None,
           budget: DecodeBudget | None = None) -> Row:
    """One consumed record as the page shows it (``avro``: the schema for "avro"), its
    key, value and headers decoded within ``budget`` (default: a fresh default one)."""
    if budget is None:
        budget = DecodeBudget.start(ConsoleLimits())
    plain = "auto" if decoding == "avro" else decoding  # keys and headers are not Avro
    headers = tuple((name, show(value, plain, None, budget)) for name, value in (message.headers() or []))
    partition, offset = message.partition(), message.offset()
    assert partition is not None and offset is not None
    error = message.error()  # e.g. a typed value past decode.max.items: the consumer did not convert it
    value = show(message.value(), decoding, avro, budget) if error is None else Shown(
        f"not decodable: {error.str()}", "error")
    return Row(partition, offset, message.timestamp()[1], show(message.key(), plain, None, budget), value, headers)


@dataclass(frozen=True)
class KeyLookup:
    """A key looked up in a compacted topic: its latest value as a row, or None (never written,
    or deleted: its latest record is a tombstone)."""

    key: str
    partition: int
    row: Row | None


def is_compacted(cluster_path: str, topic: str) -> bool:
    """Whether ``topic`` keeps the latest value per key (cleanup.policy has compact)."""
    cluster = Cluster.open(cluster_path)
    try:
        return cluster.log_config(cluster.topic(topic)).compact
    finally:
        cluster.close()


def lookup(cluster_path: str, topic: str, key: str, decoding: str = "auto", avro_schema: str | None = None,
           limits: ConsoleLimits | None = None) -> KeyLookup:
    """``key`` (its UTF-8 bytes) looked up in compacted ``topic`` with a :class:`kstream.Table`
    (read_committed, the key's partition by murmur2), its value decoded as the browser's rows.
    The Table lives for this request only (the console keeps no cluster open): it indexes the
    key's partition, at most :data:`LOOKUP_MAX_KEYS` keys. ConfigError for a topic that is not
    compacted (what to do in the message)."""
    BrowseRequest(topic, 0, decoding=decoding, avro_schema=avro_schema).check()
    limits = limits or ConsoleLimits()
    avro = parse_avro_schema(avro_schema) if decoding == "avro" and avro_schema else None
    with Table(cluster_path, topic, max_keys=LOOKUP_MAX_KEYS, decode_max_items=limits.decode_max_items) as table:
        partition = partition_for_key(key.encode("utf-8"), table.num_partitions)
        try:
            message = table.get(key)
        except ValueTooLargeError as err:  # shown in the value's cell, as the browser shows it
            return KeyLookup(key, partition, Row(partition, -1, 0, Shown(key, "text"),
                                                 Shown(f"not decodable: {err}", "error"), ()))
    if message is None:
        return KeyLookup(key, partition, None)
    return KeyLookup(key, partition, row_of(message, decoding, avro, DecodeBudget.start(limits)))


def browse(cluster_path: str, request: BrowseRequest, limits: ConsoleLimits | None = None) -> list[Row]:
    """At most ``request.count`` records of the partition, from its offset or timestamp (else
    the log start), decoded within ``limits`` (default: the defaults).
    TopicNotFound/PartitionNotFound as KStreamErrors."""
    return list(_records(cluster_path, request, request.count, limits or ConsoleLimits()))


def _is_partition_eof(message: Message) -> bool:
    error = message.error()
    return error is not None and error.code() == KafkaError._PARTITION_EOF


def _records(cluster_path: str, request: BrowseRequest, count: int, limits: ConsoleLimits) -> Iterator[Row]:
    request.check()
    avro = parse_avro_schema(request.avro_schema) if request.decoding == "avro" and request.avro_schema else None
    with Consumer({"cluster": cluster_path, "enable.partition.eof": True}) as consumer:
        consumer.cluster.partition(request.topic, request.partition).close()  # the not-found errors
        start = request.offset if request.offset is not None else -2  # -2: the log start (OFFSET_BEGINNING)
        if request.timestamp_ms is not None:
            found = consumer.offsets_for_times([TopicPartition(request.topic, request.partition,
                                                               request.timestamp_ms)])
            start = found[0].offset if found[0].offset >= 0 else -1  # -1: past the end
        consumer.assign([TopicPartition(request.topic, request.partition, start)])
        budget = DecodeBudget.start(limits)  # after the opening: the budget is for decoding
        if consumer.cluster.topic(request.topic).schemas:
            yield from _typed_rows(consumer, request, count, budget)
            return
        for _ in range(count):
            message = consumer.poll(POLL_TIMEOUT_S)
            if message is None or _is_partition_eof(message):
                return
            yield row_of(message, request.decoding, avro, budget)


_NOT_VALUE_COLUMNS = frozenset(("key", "topic", "partition", "offset", "timestamp", "timestampType", "headers"))


def _typed_rows(consumer: Consumer, request: BrowseRequest, count: int, budget: DecodeBudget) -> Iterator[Row]:
    """A typed topic's records, read as Arrow (``poll_batch``) and converted to Python one row
    at a time, each only once :func:`~kstream.log.storage.element_count.row_elements` finds it within
    ``decode.max.items`` (``Consumer.poll`` would convert a whole batch first, however many
    values its zero-width columns hold). Stops at the high watermark read at the start."""
    end = consumer.get_watermark_offsets(TopicPartition(request.topic, request.partition))[1]
    plain = "auto" if request.decoding == "avro" else request.decoding  # keys and headers are not Avro
    limit = budget.limits.decode_max_items
    left = count
    while left > 0:
        batch = consumer.poll_batch(left, POLL_TIMEOUT_S)
        if batch is None:
            return
        values = batch.select([name for name in batch.schema.names if name not in _NOT_VALUE_COLUMNS])
        offsets = batch.column("offset").to_pylist()
        timestamps = batch.column("timestamp").cast(pa.int64()).to_pylist()
        for i, offset in enumerate(offsets):
            one = values.slice(i, 1)
            if (value := budget.spent()) is None:
                items = row_elements(one, limit)
                value = show(one.to_pylist()[0], request.decoding, None, budget) if items <= limit else Shown(
                    f"not decodable: its columns hold more than {limit} values (nested lists, maps, "
                    "structs); raise --decode-max-items to see larger values", "error")
            headers = batch.column("headers")[i].as_py() if "headers" in batch.schema.names else None
            key = batch.column("key")[i].as_py() if "key" in batch.schema.names else None
            yield Row(request.partition, offset, timestamps[i], show(key, plain, None, budget), value,
                      tuple((h["key"], show(h["value"], plain, None, budget)) for h in headers or ()))
        left -= len(offsets)
        if offsets and offsets[-1] + 1 >= end:
            return

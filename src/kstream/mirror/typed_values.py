"""A typed kstream topic's values on the Kafka side: one JSON object per record.

A typed topic stores Arrow columns instead of a ``value`` (docs/FORMAT.md); Kafka has only
bytes. Into Kafka, each record's value columns become one UTF-8 JSON object (the columns by
name, in schema order), what Kafka Connect's JsonConverter (``schemas.enable=false``), ksqlDB's
``VALUE_FORMAT='JSON'`` and most consumers read without a schema registry. Every record also
carries two headers, after its own: ``kstream.value.encoding`` = ``json`` and
``kstream.value.schema`` = the columns as JSON text (``[{"name", "type", "nullable"}]``, the
type as Arrow spells it), so a reader knows the unit of a timestamp or the scale of a decimal.
(A Kafka topic config cannot say it: Kafka's topic configs are a closed set.)

Each Arrow type as JSON (what :func:`json_type` casts to first):

- null, bool, integers, float32/64, strings: as themselves (float16 as a float); a NaN or an
  infinity as the string ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (JSON has no such number);
- binary (all widths): base64 text;
- timestamp, date, time, duration: the integer Arrow stores (the unit in the schema header:
  ``timestamp[ms, tz=UTC]`` is epoch milliseconds, ``date32[day]`` days since 1970-01-01);
- decimal: its exact decimal text (``"12.50"``);
- list (all kinds): an array; struct: an object; map: an array of ``[key, value]`` pairs;
  dictionary-encoded: its values.
Unions, run-end encoded arrays, list views, intervals and extension types have no encoding:
a topic holding one is refused before anything is copied.

Kafka -> kstream into an existing typed topic decodes the same JSON with the target's schema
(:meth:`JsonValues.decode`): columns by name, a missing key is null, a key the schema does not
have, a value of the wrong type or a null record is a :class:`MirrorError` naming the record
(the chunk is not committed). The two ``kstream.value.*`` headers are dropped there (they
describe the Kafka encoding, not the record); a record saying another encoding is refused, and so
is one whose schema header gives a column a timestamp, date, time or duration unit other than the
target's (its integers would be read in the wrong unit). A record without the headers is read as
JSON in the target's units (what other producers write).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from kstream.log.storage.element_count import row_elements
from kstream.log.storage.output import output_schema
from kstream.mirror.errors import MirrorError

ENCODING_HEADER = "kstream.value.encoding"
SCHEMA_HEADER = "kstream.value.schema"
ENCODING = b"json"
VALUE_HEADERS = (ENCODING_HEADER, SCHEMA_HEADER)

MAX_ITEMS_PER_RECORD = 100_000
"""The values (every nested list, map and struct element) a typed record may hold, on average
over a batch read, to be encoded as JSON: Arrow stores a list of nulls in no bytes, so a tiny
record can hold a billion values (docs/FORMAT.md). The default of the Consumer's and the
console's bounds (decode.max.items, --decode-max-items)."""

MAX_SCHEMA_HEADER_BYTES = 256 << 10
"""The ``kstream.value.schema`` header's bytes, at most: every record copied into Kafka carries it,
and a Kafka record is at most 1 MiB by default (``max.message.bytes``); a wider schema is refused
when the mirror checks its input, before anything is created."""

MAX_HEADERS_CHECKED = 64
"""Distinct ``kstream.value.schema`` header texts one decoder remembers as checked (a topic's
schema evolves a few times; past this many the memory starts again)."""
_UNIT = re.compile(r"(?:timestamp|time32|time64|duration)\[(?:s|ms|us|ns)|date32|date64")
"""The types whose JSON integer means something only with its unit, as Arrow spells them."""

_CONSUMER_COLUMNS = frozenset(output_schema(None).names) - {"value"}  # key and the record's metadata

_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
Decoder = Callable[[Any], Any]


def json_type(kind: pa.DataType, where: str) -> pa.DataType:
    """The Arrow type a column of ``kind`` is cast to before its values become JSON; the
    types without an encoding raise a MirrorError naming ``where`` (topic and column)."""
    t = pa.types
    if t.is_timestamp(kind) or t.is_date64(kind) or t.is_time64(kind) or t.is_duration(kind):
        return pa.int64()
    if t.is_date32(kind) or t.is_time32(kind):
        return pa.int32()
    if t.is_decimal(kind):
        return pa.string()
    if t.is_float16(kind):
        return pa.float32()
    if t.is_dictionary(kind):
        return json_type(kind.value_type, where)
    if t.is_list(kind) or t.is_large_list(kind) or t.is_fixed_size_list(kind):
        item = kind.value_field.with_type(json_type(kind.value_type, f"{where} item"))
        return pa.large_list(item) if t.is_large_list(kind) else pa.list_(item)
    if t.is_struct(kind):
        return pa.struct([f.with_type(json_type(f.type, f"{where}.{f.name}")) for f in kind])
    if t.is_map(kind):
        return pa.map_(kind.key_field.with_type(json_type(kind.key_type, f"{where} key")),
                       kind.item_field.with_type(json_type(kind.item_type, f"{where} value")))
    if (t.is_null(kind) or t.is_boolean(kind) or t.is_integer(kind) or t.is_floating(kind)
            or t.is_string(kind) or t.is_large_string(kind) or t.is_binary(kind) or t.is_large_binary(kind)
            or t.is_fixed_size_binary(kind) or kind in (pa.string_view(), pa.binary_view())):
        return kind
    raise MirrorError(f"{where} has Arrow type {kind}, which has no JSON encoding on the Kafka side "
                      "(unions, run-end encoded arrays, list views, intervals and extension types are not "
                      "mirrored); mirror a topic without it")


class JsonValues:
    """One typed topic's values <-> JSON objects (the module's encoding). Stateless after
    construction: the schema is checked once, here."""

    def __init__(self, topic: str, schema: pa.Schema, *, into_kafka: bool = True):
        """``into_kafka``: the values are encoded (each record carries the schema header, at most
        :data:`MAX_SCHEMA_HEADER_BYTES`); False: only decoded (Kafka -> kstream), no header written."""
        self.topic = topic
        self.schema = schema
        self.json_schema = pa.schema([f.with_type(json_type(f.type, f"topic {topic!r} column {f.name!r}"))
                                      for f in schema])
        described = [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in schema]
        self.schema_text = json.dumps(described, separators=(",", ":")).encode()
        if into_kafka and len(self.schema_text) > MAX_SCHEMA_HEADER_BYTES:
            raise MirrorError(f"topic {topic!r}: its schema header {SCHEMA_HEADER} is {len(self.schema_text)} bytes, "
                              f"more than {MAX_SCHEMA_HEADER_BYTES} (MAX_SCHEMA_HEADER_BYTES), and every record "
                              f"copied into Kafka carries it ({len(schema)} columns); mirror a topic of fewer or "
                              "shorter-named columns")
        self.headers: list[tuple[str, bytes | None]] = [(ENCODING_HEADER, ENCODING), (SCHEMA_HEADER, self.schema_text)]
        self._decode_row = _struct_decoder(pa.struct(list(self.json_schema)), "the value")
        self._units = {f.name: _UNIT.findall(str(f.type)) for f in schema}
        self._headers_checked: set[bytes] = set()

    # -- kstream -> Kafka ---------------------------------------------------------------

    def encode(self, batch: pa.RecordBatch, partition: int, first_offset: int) -> list[bytes]:
        """The JSON value of each row of ``batch`` (a consumer batch: the value columns are
        picked by name). A batch converts to at most :data:`MAX_ITEMS_PER_RECORD` values per row
        (counted first, from lengths and offsets only); past it, the first row over the limit is
        named in a MirrorError (one exists: the batch's count is the sum of its rows')."""
        values = batch.select(self.schema.names)
        budget = MAX_ITEMS_PER_RECORD * values.num_rows
        if row_elements(values, budget) > budget:
            for i in range(values.num_rows):
                if row_elements(values.slice(i, 1), MAX_ITEMS_PER_RECORD) > MAX_ITEMS_PER_RECORD:
                    raise MirrorError(
                        f"{self.topic}[{partition}] offset {first_offset + i}: the typed record holds more than "
                        f"{MAX_ITEMS_PER_RECORD} values (MAX_ITEMS_PER_RECORD), too many to write as JSON")
        rows = values.cast(self.json_schema).to_pylist()
        return [_dumps(row) for row in rows]

    # -- Kafka -> kstream ---------------------------------------------------------------

    def decode(self, values: Sequence[bytes | None], headers: Sequence[Any], where: Callable[[int], str]) -> pa.Table:
        """The typed columns of Kafka records: ``values`` their JSON values, ``headers`` their
        headers (to check the encoding they say), ``where(i)`` names record ``i`` in errors."""
        rows = []
        for i, (value, header) in enumerate(zip(values, headers, strict=True)):
            encoding = next((v for k, v in header or () if k == ENCODING_HEADER), ENCODING)
            if encoding != ENCODING:
                raise MirrorError(f"{where(i)}: header {ENCODING_HEADER}={encoding!r}; only 'json' decodes into "
                                  f"the typed kstream topic {self.topic!r}")
            schema_text = next((v for k, v in header or () if k == SCHEMA_HEADER), None)
            if schema_text is not None and schema_text not in self._headers_checked:
                self._check_units(schema_text, where(i))
            if value is None:
                raise MirrorError(f"{where(i)} has no value (a tombstone); a typed kstream topic's record is a row "
                                  f"of {self.schema.names}: mirror into a bytes topic")
            try:
                row = json.loads(value)
                if not isinstance(row, dict):
                    raise ValueError(f"a JSON {type(row).__name__}, not an object")
                rows.append(self._decode_row(row))
            except (ValueError, TypeError, RecursionError, binascii.Error) as err:
                raise MirrorError(f"{where(i)}: its value is not a JSON object of the typed kstream topic "
                                  f"{self.topic!r} (columns {self.schema.names}): {err}") from err
        try:
            return pa.Table.from_pylist(rows, schema=self.json_schema).cast(self.schema)
        except (ValueError, TypeError, pa.ArrowNotImplementedError, OverflowError) as err:
            first = _first_bad_row(rows, self.json_schema, self.schema)
            raise MirrorError(f"{where(first)}: its JSON value does not fit the typed kstream topic "
                              f"{self.topic!r} (columns {self.schema.names}): {err}") from err

    def _check_units(self, schema_text: bytes, where: str) -> None:
        """A MirrorError unless each column the schema header names has the units of the target's
        column of that name (a timestamp, date, time or duration is a JSON integer in its unit)."""
        try:
            described = json.loads(schema_text)
            types = {str(c["name"]): str(c["type"]) for c in described}
        except (ValueError, TypeError, KeyError, RecursionError) as err:
            raise MirrorError(f"{where}: header {SCHEMA_HEADER} is not the mirror's column list ({err}): a JSON "
                              "array of {\"name\", \"type\", \"nullable\"}; fix or drop the header where the "
                              "record is produced") from err
        for name, kind in types.items():
            if name in self._units and _UNIT.findall(kind) != self._units[name]:
                raise MirrorError(f"{where}: header {SCHEMA_HEADER} gives column {name!r} the type {kind}, the typed "
                                  f"kstream topic {self.topic!r} has {self.schema.field(name).type}: its integers "
                                  "would be read in another unit; mirror into a topic of the same units (or a bytes "
                                  "topic)")
        if len(self._headers_checked) >= MAX_HEADERS_CHECKED:
            self._headers_checked.clear()
        self._headers_checked.add(schema_text)


def value_schema(batch_schema: pa.Schema) -> pa.Schema:
    """The value columns of a consumer batch of a typed topic (its schema as the batch was read:
    a topic whose schema evolved while a mirror ran gives its batches the new columns)."""
    return pa.schema([f for f in batch_schema if f.name not in _CONSUMER_COLUMNS])


def strip_value_headers(headers: list[tuple[str, bytes | None]] | None) -> list[tuple[str, bytes | None]] | None:
    """A Kafka record's headers without the ``kstream.value.*`` ones (None when none are left)."""
    if not headers:
        return None
    kept = [(k, v) for k, v in headers if k not in VALUE_HEADERS]
    return kept or None


def _dumps(row: dict[str, Any]) -> bytes:
    try:
        return json.dumps(row, allow_nan=False, default=_bytes_text, separators=(",", ":")).encode()
    except ValueError:  # a NaN or an infinity somewhere: as text (rare, so found only when it is there)
        return json.dumps(_finite(row), allow_nan=False, default=_bytes_text, separators=(",", ":")).encode()


def _bytes_text(value: Any) -> str:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} has no JSON encoding")  # json.dumps' own contract


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _decoder(kind: pa.DataType, where: str) -> Decoder | None:
    """A function from a JSON value to what ``pa.array(..., kind)`` takes; None: the JSON value as is."""
    t = pa.types
    if t.is_binary(kind) or t.is_large_binary(kind) or t.is_fixed_size_binary(kind) or kind == pa.binary_view():
        return _binary
    if t.is_floating(kind):
        return _float
    if t.is_list(kind) or t.is_large_list(kind):
        inner = _decoder(kind.value_type, f"{where} item")
        if inner is None:
            return None
        each: Decoder = inner
        return lambda v: None if v is None else [each(x) for x in _array(v, where)]
    if t.is_struct(kind):
        return _struct_decoder(kind, where)
    if t.is_map(kind):
        key = _decoder(kind.key_type, f"{where} key") or _same
        item = _decoder(kind.item_type, f"{where} value") or _same
        return lambda v: None if v is None else [_pair(p, key, item, where) for p in _array(v, where)]
    return None


def _struct_decoder(kind: pa.DataType, where: str) -> Decoder:
    fields = {f.name: _decoder(f.type, f"{where}.{f.name}") for f in kind}

    def decode(value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise ValueError(f"{where} is a JSON {type(value).__name__}, not an object")
        unknown = value.keys() - fields.keys()
        if unknown:
            raise ValueError(f"{where} has keys {sorted(unknown)} that are not columns {list(fields)}")
        return {name: (v if (d := fields.get(name)) is None else d(v)) for name, v in value.items()}

    return decode


def _same(value: Any) -> Any:
    return value


def _binary(value: Any) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"a binary value is base64 text, not a JSON {type(value).__name__}")
    return base64.b64decode(value, validate=True)


def _float(value: Any) -> Any:
    if isinstance(value, str):
        if value not in _NON_FINITE:
            raise ValueError(f"a float is a JSON number or one of {sorted(_NON_FINITE)}, not {value!r}")
        return _NON_FINITE[value]
    return value


def _array(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{where} is a JSON {type(value).__name__}, not an array")
    return value


def _pair(pair: Any, key: Decoder, item: Decoder, where: str) -> tuple[Any, Any]:
    if not isinstance(pair, list) or len(pair) != 2:
        raise ValueError(f"{where}: a map entry is a [key, value] array, not {pair!r:.80}")
    return key(pair[0]), item(pair[1])


def _first_bad_row(rows: list[Any], json_schema: pa.Schema, schema: pa.Schema) -> int:
    """The index of the first row that does not convert on its own (0 if each does)."""
    for i, row in enumerate(rows):
        try:
            pa.Table.from_pylist([row], schema=json_schema).cast(schema)
        except (ValueError, TypeError, pa.ArrowNotImplementedError, OverflowError):
            return i
    return 0

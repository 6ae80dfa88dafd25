"""How `kstream produce` turns a line's value into a typed topic's record: a dict of its columns.

The line reader (:mod:`kstream.tools.cli.line_reader`) first takes off the headers and the
key, as on a bytes topic; what is left is the value, read here in one of two formats:

``json`` (the default)
    one JSON object per line, ``{"id":1,"name":"ok"}``: its names are columns, a missing or
    ``null`` column is null. This is what kafka-avro-console-producer and
    kafka-json-schema-console-producer read, and what ``kstream consume`` prints for a typed
    topic, so a consumed line can be produced again.
``csv``
    the columns in the schema's order (as ``kstream topics describe`` lists them), quoted
    as RFC 4180 (``"a, b"``, ``""`` inside quotes); an empty field is null (Spark's CSV
    reader's default). There is no header row: every line is a record, as in Kafka's console
    producer, and with ``parse.key`` a header row could not even be told from a record.
    Only columns of flat types (no lists, structs or maps) can be read from CSV.

Values JSON has no type for are written as Spark's ``to_json`` / ``from_json`` and Kafka
Connect's JsonConverter write them: a timestamp as an ISO 8601 string
(``2026-01-02T03:04:05.006``, ``+01:00`` or ``Z`` allowed) or an integer in the column's unit,
a date or a time as an ISO string, binary as base64, a decimal as a number or a string; a
list is an array, a struct an object, a map an object (or an array of ``[key, value]`` pairs,
as ``kstream consume`` prints one), their elements read as columns of their type are. In
CSV, an integer column takes ``12``, a float ``1.5``, ``inf`` or ``nan``, a bool ``true`` /
``false`` (any case), and the rest as in JSON.

A value that does not fit raises InvalidRecordError naming the line number and the column.
"""

from __future__ import annotations

import base64
import binascii
import csv
import datetime
import json
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

import pyarrow as pa

from kstream.errors import ConfigError, InvalidRecordError

FORMATS = ("json", "csv")

_Convert = Callable[[Any], Any]  # raises ValueError/TypeError with what was expected


class _ExpectedError(ValueError):
    pass


def _integer(item: Any) -> int:
    if item.__class__ is int:  # (a bool is not an integer here, as in the producer's check)
        return item
    raise _ExpectedError("an integer")


def _float(item: Any) -> float:
    if item.__class__ in (int, float, Decimal):
        return float(item)
    raise _ExpectedError("a number")


def _text_integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise _ExpectedError("an integer") from None


def _text_float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise _ExpectedError("a number") from None


def _decimal(item: Any) -> Decimal:
    if item.__class__ in (int, Decimal) or isinstance(item, str):
        try:
            return Decimal(item.strip() if isinstance(item, str) else item)
        except InvalidOperation:
            raise _ExpectedError("a decimal number") from None
    raise _ExpectedError("a decimal number (a float loses digits: write it as in the JSON text)")


def _bool(item: Any) -> bool:
    if item.__class__ is bool:
        return item
    raise _ExpectedError("true or false")


def _text_bool(text: str) -> bool:
    if text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true"
    raise _ExpectedError("true or false")


def _string(item: Any) -> str:
    if isinstance(item, str):
        return item
    raise _ExpectedError("a string")


def _binary(item: Any) -> bytes:
    if isinstance(item, str):
        try:
            return base64.b64decode(item, validate=True)
        except (binascii.Error, ValueError):
            pass
    raise _ExpectedError("base64 text")


def _timestamp(item: Any) -> datetime.datetime | int:
    if item.__class__ is int:
        return item  # in the column's unit, as Arrow takes it
    if isinstance(item, str):
        text = item.strip()
        if text.lstrip("-").isdigit():
            return int(text)
        try:
            return datetime.datetime.fromisoformat(text)
        except ValueError:
            pass
    raise _ExpectedError("an ISO 8601 timestamp or an integer in the column's unit")


def _iso(kind: type) -> _Convert:
    def convert(item: Any) -> Any:
        if isinstance(item, str):
            try:
                return kind.fromisoformat(item.strip())  # type: ignore[attr-defined]
            except ValueError:
                pass
        raise _ExpectedError(f"an ISO 8601 {kind.__name__}")
    return convert


def _as_is(item: Any) -> Any:
    """Any other type's JSON value, as Arrow takes it (Arrow judges it when the producer checks
    the record): a JSON number with a fraction is a float again (it was read as a Decimal)."""
    if isinstance(item, Decimal):
        return float(item)
    if isinstance(item, list):
        return [_as_is(x) for x in item]
    if isinstance(item, dict):
        return {k: _as_is(v) for k, v in item.items()}
    return item


def _list_of(element: _Convert) -> _Convert:
    def convert(item: Any) -> list[Any]:
        if not isinstance(item, list):
            raise _ExpectedError("a JSON array")
        return [None if x is None else element(x) for x in item]
    return convert


def _map_of(key: _Convert, value: _Convert) -> _Convert:
    """A JSON object (its keys are text: read as the key type's CSV text is), or an array of
    [key, value] pairs (as `kstream consume` prints a map)."""
    def convert(item: Any) -> list[tuple[Any, Any]]:
        if isinstance(item, dict):
            pairs = list(item.items())
        elif isinstance(item, list) and all(isinstance(p, list) and len(p) == 2 for p in item):
            pairs = [(k, v) for k, v in item]
        else:
            raise _ExpectedError("a JSON object or an array of [key, value] pairs")
        return [(key(k), None if v is None else value(v)) for k, v in pairs]
    return convert


def _struct_of(fields: dict[str, _Convert]) -> _Convert:
    def convert(item: Any) -> dict[str, Any]:
        if not isinstance(item, dict):
            raise _ExpectedError("a JSON object")
        return {k: v if v is None or k not in fields else fields[k](v) for k, v in item.items()}
    return convert


def _text_converter(data_type: pa.DataType) -> _Convert:
    """A CSV field's converter: numbers and bools from their text, the rest as from JSON."""
    types = pa.types
    if types.is_integer(data_type):
        return _text_integer
    if types.is_floating(data_type):
        return _text_float
    if types.is_boolean(data_type):
        return _text_bool
    return _converter(data_type)


def _converter(data_type: pa.DataType) -> _Convert:
    """A JSON value's converter: JSON's own types as they are (a string is no number), the
    types JSON has none for from their text."""
    types = pa.types
    if types.is_integer(data_type):
        return _integer
    if types.is_floating(data_type):
        return _float
    if types.is_decimal(data_type):
        return _decimal
    if types.is_boolean(data_type):
        return _bool
    if types.is_string(data_type) or types.is_large_string(data_type):
        return _string
    if types.is_binary(data_type) or types.is_large_binary(data_type) or types.is_fixed_size_binary(data_type):
        return _binary
    if types.is_timestamp(data_type):
        return _timestamp
    if types.is_date(data_type):
        return _iso(datetime.date)
    if types.is_time(data_type):
        return _iso(datetime.time)
    if types.is_map(data_type):
        key_type = data_type.key_type
        return _map_of(_text_converter(key_type) if not (types.is_string(key_type) or types.is_large_string(key_type))
                       else _string, _converter(data_type.item_type))
    if types.is_list(data_type) or types.is_large_list(data_type) or types.is_fixed_size_list(data_type):
        return _list_of(_converter(data_type.value_type))
    if types.is_struct(data_type):
        return _struct_of({data_type.field(i).name: _converter(data_type.field(i).type)
                           for i in range(data_type.num_fields)})
    return _as_is


class TypedLineParser:
    """Reads a typed topic's values from lines in ``json`` or ``csv``. Immutable."""

    def __init__(self, topic: str, schema: pa.Schema, fmt: str = "json"):
        if fmt not in FORMATS:
            raise ConfigError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
        self.topic = topic
        self.format = fmt
        convert = _text_converter if fmt == "csv" else _converter
        self._columns = tuple((field.name, field.type, convert(field.type)) for field in schema)
        self._converters = {name: convert for name, _, convert in self._columns}
        if fmt == "csv":
            for name, data_type, _ in self._columns:
                if pa.types.is_nested(data_type):
                    raise ConfigError(f"column {name!r} of topic {topic!r} is {data_type}: CSV has no form "
                                      "for it; write the lines as JSON objects (--format json)")

    def parse(self, value: bytes | None, line_number: int) -> dict[str, Any] | None:
        """The record's columns read from ``value`` (None stays None: the producer refuses it)."""
        if value is None:
            return None
        if self.format == "csv":
            return self._csv(value, line_number)
        return self._json(value, line_number)

    def _json(self, value: bytes, line_number: int) -> dict[str, Any]:
        try:
            row = json.loads(value, parse_float=Decimal)  # exact: a decimal column keeps its digits
        except ValueError as err:  # (UnicodeDecodeError and JSONDecodeError are ValueErrors)
            raise InvalidRecordError(f"line {line_number}: not a JSON object: {err}: "
                                     f"{_shown(value)}") from None
        if not isinstance(row, dict):
            raise InvalidRecordError(f"line {line_number}: a record of typed topic {self.topic!r} is a JSON "
                                     f"object of its columns {[name for name, _, _ in self._columns]}, got "
                                     f"a JSON {_json_kind(row)}")
        columns: dict[str, Any] = {}
        for name, item in row.items():
            convert = self._converters.get(name)
            # An unknown column passes: the producer's check names every unknown column at once.
            columns[name] = item if convert is None or item is None else self._convert(
                convert, name, item, line_number)
        return columns

    def _csv(self, value: bytes, line_number: int) -> dict[str, Any]:
        try:
            text = value.decode()
        except UnicodeDecodeError as err:
            raise InvalidRecordError(f"line {line_number}: not UTF-8 text: {err}") from None
        try:
            fields = next(csv.reader([text], strict=True), [])
        except csv.Error as err:
            raise InvalidRecordError(f"line {line_number}: not a CSV line: {err}: {_shown(value)}") from None
        if len(fields) != len(self._columns):
            raise InvalidRecordError(
                f"line {line_number}: {len(fields)} field{'s' if len(fields) != 1 else ''}, but topic "
                f"{self.topic!r} has {len(self._columns)} columns, in this order: "
                f"{', '.join(name for name, _, _ in self._columns)}")
        return {name: None if field == "" else self._convert(convert, name, field, line_number)
                for (name, _, convert), field in zip(self._columns, fields, strict=True)}

    def _convert(self, convert: _Convert, name: str, item: Any, line_number: int) -> Any:
        try:
            return convert(item)
        except (ValueError, TypeError, OverflowError) as err:
            data_type = next(t for n, t, _ in self._columns if n == name)
            expected = f"expected {err}" if isinstance(err, _ExpectedError) else str(err)
            raise InvalidRecordError(f"line {line_number}, column {name!r} ({data_type}): {expected}, got "
                                     f"{_shown_item(item)}") from None


def _json_kind(item: Any) -> str:
    if isinstance(item, list):
        return "array"
    if isinstance(item, str):
        return "string"
    if item is None:
        return "null"
    if isinstance(item, bool):
        return "boolean"
    return "number"


def _shown(value: bytes) -> str:
    return repr(value[:200].decode(errors="replace"))


def _shown_item(item: Any) -> str:
    if isinstance(item, str):
        return repr(item[:200])
    return json.dumps(item, default=str)[:200]

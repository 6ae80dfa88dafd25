"""Avro values: ``valueFormat=avro`` + ``avroSchema`` decode each record's value (plain Avro
binary, no container header) with fastavro into typed columns.

The schema must be an Avro record; its fields replace the ``value`` column,
as a typed topic's columns do. Types map to Arrow as Spark's from_avro maps
them: null-unions become nullable columns, enums strings, fixed binary,
arrays lists, maps maps with string keys, nested records structs, and the
logical types date, timestamp-millis/micros and decimal their Arrow types.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
from fastavro import parse_schema, schemaless_reader

from kstream.errors import ConfigError, InvalidRecordError

_PRIMITIVES: Mapping[str, pa.DataType] = {
    "null": pa.null(), "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(),
    "float": pa.float32(), "double": pa.float64(), "bytes": pa.binary(), "string": pa.string(),
}


def parse(text: str) -> tuple[Any, pa.Schema]:
    """(fastavro's parsed schema, the Arrow schema of the value columns)."""
    try:
        schema = json.loads(text)
        parsed = parse_schema(schema)
    except (ValueError, TypeError, KeyError) as err:
        raise ConfigError(f"option 'avroSchema' is not an Avro schema (JSON): {err}") from err
    except Exception as err:  # fastavro raises its own SchemaParseException
        raise ConfigError(f"option 'avroSchema' is not a valid Avro schema: {err}") from err
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise ConfigError("option 'avroSchema' must be an Avro record (its fields become columns), e.g. "
                          '{"type":"record","name":"Event","fields":[{"name":"id","type":"long"}]}')
    return parsed, pa.schema([_field(f) for f in schema["fields"]])


def _field(field: Mapping[str, Any]) -> pa.Field:
    data_type, nullable = _type(field["type"])
    return pa.field(field["name"], data_type, nullable=nullable)


def _type(avro: Any) -> tuple[pa.DataType, bool]:
    """(Arrow type, nullable) of an Avro type."""
    if isinstance(avro, list):  # a union: [null, T] is a nullable T
        others = [t for t in avro if t != "null"]
        if len(others) != 1:
            raise ConfigError(f"option 'avroSchema': union {avro} has more than one non-null branch; "
                              "only [\"null\", T] unions map to a column")
        return _type(others[0])[0], True
    if isinstance(avro, str):
        if avro not in _PRIMITIVES:
            raise ConfigError(f"option 'avroSchema': named type {avro!r} is not supported as a column; "
                              "define it inline")
        return _PRIMITIVES[avro], avro == "null"
    kind, logical = avro.get("type"), avro.get("logicalType")
    if logical == "date":
        return pa.date32(), False
    if logical in ("timestamp-millis", "timestamp-micros"):
        return pa.timestamp("ms" if logical == "timestamp-millis" else "us", tz="UTC"), False
    if logical == "decimal":
        return pa.decimal128(int(avro["precision"]), int(avro.get("scale", 0))), False
    if kind == "record":
        return pa.struct([_field(f) for f in avro["fields"]]), False
    if kind == "array":
        return pa.list_(_type(avro["items"])[0]), False
    if kind == "map":
        return pa.map_(pa.string(), _type(avro["values"])[0]), False
    if kind == "enum":
        return pa.string(), False
    if kind == "fixed":
        return pa.binary(), False
    return _type(kind)


def decode(values: pa.Array, parsed: Any, schema: pa.Schema, where: str, first_offset: int) -> pa.RecordBatch:
    """The value column decoded to ``schema``'s columns (a null value: all-null columns)."""
    rows: list[Any] = []
    for i, raw in enumerate(values.to_pylist()):
        if raw is None:
            rows.append({})
            continue
        try:
            rows.append(schemaless_reader(io.BytesIO(raw), parsed, None))
        except Exception as err:  # fastavro raises many kinds for bad bytes
            raise InvalidRecordError(
                f"{where} offset {first_offset + i}: the value is not Avro of the given avroSchema "
                f"({type(err).__name__}: {err}); check the schema, or read with valueFormat=binary") from err
    return pa.RecordBatch.from_pylist(rows, schema=schema)


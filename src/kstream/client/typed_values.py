"""Checking one record of a typed topic against the topic's schema, at produce().

The Producer converts a typed topic's queued values (dicts of columns) to an
Arrow batch only when the batch is sent; one value that does not convert
would then fail the whole batch, and the good records queued with it would
be lost. :class:`TypedValues` checks each value when it is produced instead,
with the conversion the batch uses (Arrow's from Python objects), so a bad
record is refused by produce() with an error naming the column, and a
checked record cannot fail its batch later. Common types (ints in range,
floats, ASCII strings, bytes, bools) take a fast path that gives Arrow's
answer without calling it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from kstream.errors import InvalidRecordError, SchemaError

_Check = Callable[[Any], bool]  # True: Arrow surely converts it; False: ask Arrow


def _int_check(bits: int, signed: bool) -> _Check:
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return lambda item: item.__class__ is int and low <= item <= high  # a bool is not an int here


def _fast_check(data_type: pa.DataType) -> _Check:
    if pa.types.is_integer(data_type):
        return _int_check(data_type.bit_width, pa.types.is_signed_integer(data_type))
    if pa.types.is_float64(data_type) or pa.types.is_float32(data_type):
        return lambda item: item.__class__ is float
    if pa.types.is_string(data_type) or pa.types.is_large_string(data_type):
        return lambda item: item.__class__ is str and item.isascii()  # others may not encode
    if pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type):
        return lambda item: item.__class__ is bytes
    if pa.types.is_boolean(data_type):
        return lambda item: item.__class__ is bool
    return lambda item: False


class TypedValues:
    """The value checker of one typed topic's schema. Immutable; thread-safe."""

    __slots__ = ("_columns", "_names", "topic")

    def __init__(self, topic: str, schema: pa.Schema):
        self.topic = topic
        self._names = frozenset(schema.names)
        self._columns = tuple((f.name, f.type, f.nullable, _fast_check(f.type)) for f in schema)

    def check(self, value: Any) -> int:
        """The approximate size in bytes of ``value`` (a dict of columns); raises
        InvalidRecordError/SchemaError naming the column if it does not fit the schema."""
        if not isinstance(value, Mapping):
            raise InvalidRecordError(f"a record of typed topic {self.topic!r} is a dict of its columns "
                                     f"{sorted(self._names)}, got {type(value).__name__}")
        if not self._names.issuperset(value):
            unknown = sorted(str(name) for name in value if name not in self._names)
            raise SchemaError(f"columns {unknown} are not in topic {self.topic!r}'s schema "
                              f"{sorted(self._names)}; alter the topic's schema to add them "
                              "(nullable) first")
        size = 0
        for name, data_type, nullable, fast in self._columns:
            item = value.get(name)
            if item is None:
                if not nullable:
                    raise SchemaError(f"column {name!r} of topic {self.topic!r} is not nullable; "
                                      "the record has no value for it")
                continue
            if not fast(item):
                try:
                    pa.scalar(item, data_type)
                except (pa.ArrowException, TypeError, ValueError, OverflowError) as err:
                    raise SchemaError(f"column {name!r} of topic {self.topic!r} is {data_type}; "
                                      f"{item!r} does not convert: {err}") from err
            size += len(item) if item.__class__ is str or item.__class__ is bytes else 8
        return size

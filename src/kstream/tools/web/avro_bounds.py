"""A bounded walk of one schemaless Avro value, done before fastavro decodes it.

fastavro trusts the bytes it reads: an array or map block count is a number the
writer chose, and a block of N items of a zero-width type (null, a record of
nulls, a fixed of size 0) consumes no bytes at all, so 15 bytes can ask for
billions of items (issue 26: one GET of the message browser spent 40 s and
3 GiB). :func:`check_avro` reads the value as the Avro specification's binary
encoding lays it out, building nothing, and raises :class:`AvroBoundsError`
before the decode would:

* hold more than ``max_items`` array and map items in all (a block's count is
  added, and checked, before any of its items is read);
* read a length, a fixed, a float or a block past the end of the bytes;
* nest records, arrays and maps deeper than :data:`MAX_DEPTH` (a recursive named type);
* run past ``deadline`` (a ``time.monotonic()`` value).

A value that passes decodes in time and memory proportional to its size plus
``max_items``, and then fastavro builds it. Only the bounds are checked here: a
value that passes may still fail one of fastavro's own checks (bad UTF-8, ...),
which the caller reports as it always did.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from kstream.errors import KStreamError

MAX_DEPTH = 64  # records, arrays and maps inside each other (fastavro's recursion and the page's JSON)
_FIXED_WIDTH = {"null": 0, "boolean": 1, "float": 4, "double": 8}
_VARINT = ("int", "long")
_LENGTH_PREFIXED = ("bytes", "string")
_MAX_VARINT_BYTES = 10  # a 64-bit zig-zag long
_CLOCK_EVERY = 1024  # steps between two reads of the clock


class AvroBoundsError(KStreamError):
    """An Avro value the console will not decode: it would cost more than the limits allow,
    or its bytes end before its schema does. The message says which and where."""


def check_avro(data: bytes, schema: Any, named: Mapping[str, Any], *, max_items: int, deadline: float) -> None:
    """Walk ``data`` as a value of ``schema`` (as ``fastavro.parse_schema`` returns it, with the
    ``named`` types it filled in); raise AvroBoundsError if decoding it would break a bound."""
    _Walk(data, named, max_items, deadline).value(schema, 0)


class _Walk:
    __slots__ = ("data", "deadline", "items", "max_items", "named", "position", "steps")

    def __init__(self, data: bytes, named: Mapping[str, Any], max_items: int, deadline: float):
        self.data, self.named, self.max_items, self.deadline = data, named, max_items, deadline
        self.position = self.items = self.steps = 0

    def value(self, schema: Any, depth: int) -> None:
        self.steps += 1
        if self.steps % _CLOCK_EVERY == 0 and time.monotonic() > self.deadline:
            raise AvroBoundsError(f"the page's decode time ran out at byte {self.position}")
        if isinstance(schema, list):  # a union: the branch's index, then the branch
            branch = self.long()
            if not 0 <= branch < len(schema):
                raise AvroBoundsError(f"union branch {branch} at byte {self.position} of {len(schema)} branches")
            self.value(schema[branch], depth)
            return
        kind = schema["type"] if isinstance(schema, dict) else schema
        if not isinstance(kind, str):  # {"type": {...}} or {"type": [...]}
            self.value(kind, depth)
        elif kind in _FIXED_WIDTH:
            self.skip(_FIXED_WIDTH[kind])
        elif kind in _VARINT:
            self.long()
        elif kind in _LENGTH_PREFIXED:
            self.skip(self.long())
        elif kind == "fixed":
            self.skip(int(schema["size"]))
        elif kind == "enum":
            symbol, symbols = self.long(), len(schema["symbols"])
            if not 0 <= symbol < symbols:
                raise AvroBoundsError(f"enum index {symbol} at byte {self.position} of {symbols} symbols")
        elif kind in ("record", "error"):
            self.nest(depth)
            for field in schema["fields"]:
                self.value(field["type"], depth + 1)
        elif kind == "array":
            self.blocks(schema["items"], depth, keyed=False)
        elif kind == "map":
            self.blocks(schema["values"], depth, keyed=True)
        elif kind in self.named:  # a name is defined by a record, enum or fixed: no loop without a record
            self.value(self.named[kind], depth)
        else:
            raise AvroBoundsError(f"the schema names a type {kind!r} it does not define")

    def blocks(self, items: Any, depth: int, *, keyed: bool) -> None:
        """An array's or map's blocks: a count (negative: a byte size follows), its items, ...,
        then a count of 0."""
        self.nest(depth)
        count = self.long()
        while count != 0:
            self.items += abs(count)
            if self.items > self.max_items:
                raise AvroBoundsError(f"more than {self.max_items} array/map items (a block of {abs(count)} at "
                                      f"byte {self.position}); raise --decode-max-items to see larger values")
            if count < 0:
                count = -count
                size = self.long()
                if not 0 <= size <= len(self.data) - self.position:
                    raise AvroBoundsError(f"a block of {size} bytes at byte {self.position}, but only "
                                          f"{len(self.data) - self.position} bytes remain")
            for _ in range(count):
                if keyed:
                    self.skip(self.long())
                self.value(items, depth + 1)
            count = self.long()

    def nest(self, depth: int) -> None:
        """Refuse a record, array or map nested deeper than :data:`MAX_DEPTH` (the only way a
        recursive schema recurses: through a record)."""
        if depth >= MAX_DEPTH:
            raise AvroBoundsError(f"nested deeper than {MAX_DEPTH} records/arrays/maps at byte {self.position}")

    def long(self) -> int:
        """A zig-zag varint (Avro's int and long)."""
        start, result, shift = self.position, 0, 0
        for index in range(_MAX_VARINT_BYTES):
            if start + index >= len(self.data):
                raise AvroBoundsError(f"the value ends inside a number at byte {start + index}")
            byte = self.data[start + index]
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                self.position = start + index + 1
                return (result >> 1) ^ -(result & 1)
            shift += 7
        raise AvroBoundsError(f"a number longer than {_MAX_VARINT_BYTES} bytes at byte {start}")

    def skip(self, size: int) -> None:
        remaining = len(self.data) - self.position
        if not 0 <= size <= remaining:
            raise AvroBoundsError(f"a length of {size} at byte {self.position}, but only {remaining} bytes remain")
        self.position += size

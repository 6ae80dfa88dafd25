"""TypedValues accepts exactly what the batch conversion accepts (Arrow's from-Python), so a
record refused at produce() is one that would have failed its batch, and no other."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from kstream.client.typed_values import TypedValues
from kstream.errors import InvalidRecordError

TYPES = [pa.int8(), pa.int32(), pa.int64(), pa.uint8(), pa.uint64(), pa.float32(), pa.float64(), pa.string(),
         pa.large_string(), pa.binary(), pa.bool_(), pa.timestamp("ms"), pa.date32(), pa.decimal128(5, 2),
         pa.list_(pa.int64())]
VALUES = [0, 1, -1, 127, 128, 255, 256, -129, 2**31, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63) - 1, True,
          False, 1.5, 1e300, float("nan"), "abc", "é", "\ud800", b"raw", bytearray(b"x"), [1, 2], ["a"], {"a": 1},
          dt.datetime(2024, 1, 1), dt.date(2024, 1, 1), decimal.Decimal("1.25"), object()]


def batch_accepts(data_type: pa.DataType, value: object) -> bool:
    try:
        pa.RecordBatch.from_pylist([{"c": value}], schema=pa.schema([pa.field("c", data_type)]))
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return False
    return True


@pytest.mark.parametrize("data_type", TYPES, ids=str)
def test_check_agrees_with_the_batch_conversion(data_type):
    checker = TypedValues("t", pa.schema([pa.field("c", data_type)]))
    for value in VALUES:
        try:
            checker.check({"c": value})
            accepted = True
        except InvalidRecordError:
            accepted = False
        assert accepted == batch_accepts(data_type, value), (data_type, value)


def test_nulls_missing_and_unknown_columns():
    checker = TypedValues("t", pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())]))
    assert checker.check({"id": 1}) == 8
    assert checker.check({"id": 1, "name": "abcd"}) == 12
    for bad, says in (({"name": "x"}, "'id' of topic 't' is not nullable"), ({"id": None}, "not nullable"),
                      ({"id": 1, "x": 2}, r"columns \['x'\] are not in topic 't'"), (None, "dict of its columns"),
                      (b"raw", "dict of its columns")):
        with pytest.raises(InvalidRecordError, match=says):
            checker.check(bad)

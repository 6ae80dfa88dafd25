"""A typed topic's values as JSON on the Kafka side (kstream.mirror.typed_values), no broker:
the encoding as docs/MIRROR.md writes it, the way back, and the errors."""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import math

import pyarrow as pa
import pytest

from kstream.mirror import MirrorError
from kstream.mirror.typed_values import MAX_ITEMS_PER_RECORD, JsonValues, strip_value_headers

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("blob", pa.binary()),
    ("ts", pa.timestamp("us", tz="UTC")), ("day", pa.date32()), ("price", pa.decimal128(10, 2)),
    ("ratio", pa.float64()), ("tags", pa.list_(pa.string())), ("attrs", pa.map_(pa.string(), pa.binary())),
    ("point", pa.struct([("x", pa.int8()), ("ys", pa.list_(pa.float32()))])),
    ("colour", pa.dictionary(pa.int32(), pa.string())),
])
UTC = datetime.UTC
ROWS = [
    {"id": 1, "name": "x", "blob": b"\x00\xff", "ts": datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
     "day": datetime.date(2020, 1, 1), "price": decimal.Decimal("12.50"), "ratio": 0.25, "tags": ["a", None],
     "attrs": [("k", b"v")], "point": {"x": -3, "ys": [1.5, None]}, "colour": "red"},
    {"id": 2, "name": None, "blob": None, "ts": None, "day": None, "price": None, "ratio": math.inf, "tags": None,
     "attrs": None, "point": None, "colour": None},
]


def batch(rows=ROWS):
    return pa.Table.from_pylist(rows, schema=SCHEMA).to_batches()[0]


def test_each_type_is_written_as_the_docs_say():
    values = [json.loads(v) for v in JsonValues("t", SCHEMA).encode(batch(), 0, 0)]
    assert values[0] == {
        "id": 1, "name": "x", "blob": base64.b64encode(b"\x00\xff").decode(), "ts": 1704164645000006,
        "day": 18262, "price": "12.50", "ratio": 0.25, "tags": ["a", None], "attrs": [["k", "dg=="]],
        "point": {"x": -3, "ys": [1.5, None]}, "colour": "red"}
    assert values[1] == {"id": 2, "name": None, "blob": None, "ts": None, "day": None, "price": None,
                         "ratio": "Infinity", "tags": None, "attrs": None, "point": None, "colour": None}


def test_the_schema_header_names_each_column_with_its_arrow_type():
    values = JsonValues("t", SCHEMA)
    described = json.loads(values.schema_text)
    assert described[0] == {"name": "id", "type": "int64", "nullable": False}
    assert described[3] == {"name": "ts", "type": "timestamp[us, tz=UTC]", "nullable": True}
    assert [k for k, _ in values.headers] == ["kstream.value.encoding", "kstream.value.schema"]


def test_decoding_gives_back_the_same_rows_nan_included():
    rows = [dict(ROWS[0], ratio=math.nan), ROWS[1]]
    values = JsonValues("t", SCHEMA)
    back = values.decode(values.encode(batch(rows), 0, 0), [None, None], lambda i: f"record {i}")
    assert back.schema == SCHEMA
    decoded = back.to_pylist()
    assert math.isnan(decoded[0].pop("ratio")) and decoded[1] == ROWS[1]
    assert decoded[0] == {k: v for k, v in ROWS[0].items() if k != "ratio"}


@pytest.mark.parametrize(("value", "why"), [
    (b'{"id": 1, "colour": "red", "size": 3}', r"keys \['size'\] that are not columns"),
    (b'{"id": 1, "point": {"x": 1, "z": 2}}', r"keys \['z'\]"),
    (b"[1, 2]", "a JSON list, not an object"),
    (b"not json", "not a JSON object"),
    (b'{"id": "one"}', "does not fit"),
    (b'{"id": 1, "blob": 7}', "base64 text, not a JSON int"),
    (b'{"id": 1, "blob": "%%%"}', "not a JSON object"),
    (b'{"id": 1, "point": {"x": 1000}}', "does not fit"),
    (b'{"name": "no id"}', "does not fit"),  # id is not nullable
    (b'{"id": 1, "ratio": "lots"}', "a float is a JSON number"),
    (None, "has no value"),
])
def test_a_value_that_does_not_decode_is_an_error_naming_the_record(value, why):
    good = b'{"id": 9}'
    with pytest.raises(MirrorError, match=why) as caught:
        JsonValues("t", SCHEMA).decode([good, value], [None, None], lambda i: f"record #{i}")
    assert "record #1" in str(caught.value)


def test_a_record_saying_another_encoding_is_refused_and_the_value_headers_are_dropped():
    with pytest.raises(MirrorError, match="kstream.value.encoding=b'avro'"):
        JsonValues("t", SCHEMA).decode([b'{"id": 1}'], [[("kstream.value.encoding", b"avro")]], str)
    headers = [("h", b"1"), ("kstream.value.encoding", b"json"), ("kstream.value.schema", b"[]")]
    assert strip_value_headers(headers) == [("h", b"1")]
    assert strip_value_headers(headers[1:]) is None


@pytest.mark.parametrize("kind", [pa.month_day_nano_interval(), pa.dense_union([pa.field("a", pa.int8())]),
                                  pa.list_(pa.run_end_encoded(pa.int32(), pa.string()))])
def test_a_column_type_without_an_encoding_is_refused_naming_it(kind):
    with pytest.raises(MirrorError, match=r"topic 't' column 'c'.* has Arrow type"):
        JsonValues("t", pa.schema([("c", kind)]))


def test_a_record_holding_more_values_than_the_limit_is_an_error_naming_its_offset():
    schema = pa.schema([("xs", pa.list_(pa.null()))])
    rows = pa.Table.from_pylist([{"xs": []}, {"xs": [None] * (MAX_ITEMS_PER_RECORD * 3)}], schema=schema)
    with pytest.raises(MirrorError, match=r"t\[4\] offset 101: .* more than 100000 values"):
        JsonValues("t", schema).encode(rows.to_batches()[0], 4, 100)


def test_a_schema_header_over_its_limit_is_refused_into_kafka_and_decodes_into_kstream():
    """Every record copied into Kafka carries the schema header: a schema whose text passes
    MAX_SCHEMA_HEADER_BYTES is refused when the mirror checks its input (before anything is
    created), never one record at a time by the broker; decoding (into kstream) writes no header."""
    from kstream.mirror.typed_values import MAX_SCHEMA_HEADER_BYTES

    wide = pa.schema([(f"column_{i:06d}_" + "x" * 40, pa.int64()) for i in range(MAX_SCHEMA_HEADER_BYTES // 60)])
    with pytest.raises(MirrorError, match=rf"topic 't': its schema header kstream.value.schema is \d+ bytes, more "
                                          rf"than {MAX_SCHEMA_HEADER_BYTES} \(MAX_SCHEMA_HEADER_BYTES\)"):
        JsonValues("t", wide)
    decoded = JsonValues("t", wide, into_kafka=False).decode([b"{}"], [None], str)
    assert decoded.num_rows == 1 and decoded.num_columns == len(wide)
    narrow = pa.schema(list(wide)[:100])
    assert len(JsonValues("t", narrow).schema_text) < MAX_SCHEMA_HEADER_BYTES


@pytest.mark.parametrize("source, target", [
    (pa.timestamp("ms", tz="UTC"), pa.timestamp("us", tz="UTC")), (pa.date64(), pa.date32()),
    (pa.time32("s"), pa.time64("us")), (pa.duration("ns"), pa.duration("ms")),
    (pa.list_(pa.timestamp("s")), pa.list_(pa.timestamp("ms"))),
    (pa.struct([("at", pa.timestamp("ms"))]), pa.struct([("at", pa.timestamp("ns"))]))])
def test_a_record_whose_schema_header_gives_another_unit_is_refused_not_read_in_the_targets(source, target):
    """A timestamp's JSON is an integer in the unit of the schema header: read in another unit it
    was silently off by a factor (2024-01-01 in ms into a us column became 1970-01-20)."""
    encoder = JsonValues("t", pa.schema([("c", source), ("n", pa.int32())]))
    header = [("h", b"x"), *encoder.headers]
    with pytest.raises(MirrorError, match=r"record #0: header kstream.value.schema gives column 'c' the type .*"
                                          r"the typed kstream topic 't' has"):
        JsonValues("t", pa.schema([("c", target), ("n", pa.int64())]), into_kafka=False).decode(
            [b'{"c": null, "n": 1}'], [header], lambda i: f"record #{i}")


def test_a_schema_header_of_the_same_units_or_none_decodes_and_a_bad_one_is_refused():
    source = pa.schema([("at", pa.timestamp("ms")), ("n", pa.int32())])
    target = JsonValues("t", pa.schema([("at", pa.timestamp("ms", tz="UTC")), ("n", pa.int64())]), into_kafka=False)
    values = JsonValues("t", source).encode(pa.table({"at": pa.array([1_704_067_200_000], pa.timestamp("ms")),
                                                      "n": pa.array([1], pa.int32())}).to_batches()[0], 0, 0)
    same_units = target.decode(values, [JsonValues("t", source).headers], str)
    no_header = target.decode(values, [None], str)
    assert same_units.column("at").cast(pa.int64()).to_pylist() == [1_704_067_200_000] == \
        no_header.column("at").cast(pa.int64()).to_pylist()
    with pytest.raises(MirrorError, match=r"#0: header kstream.value.schema is not the mirror's column list"):
        target.decode(values, [[("kstream.value.schema", b"{oops")]], lambda i: f"#{i}")

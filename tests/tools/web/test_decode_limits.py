"""Every decode the console does is bounded by size and time (issue 26 item 8).

The case that motivated it: the 15-byte record "éé: déjà vu" read as Avro of
``{"type": "array", "items": "null"}`` is a block count of billions of zero-width
items; fastavro alone spent 40 s and 3 GiB on it. Each test asserts on the refusal
(it comes before anything is allocated), never on timing.
"""

from __future__ import annotations

import decimal
import io
import json
import time

import fastavro
import pytest

from kstream import Producer
from kstream.admin import Admin, NewTopic
from kstream.errors import ConfigError
from kstream.tools.web.browser import DecodeBudget, parse_avro_schema, show
from kstream.tools.web.limits import ConsoleLimits

DEJA_VU = "éé: déjà vu".encode()
NULLS = '{"type": "array", "items": "null"}'


def budget(**limits) -> DecodeBudget:
    return DecodeBudget.start(ConsoleLimits(**limits))


def test_the_deja_vu_record_is_refused_before_decoding():
    assert len(DEJA_VU) == 15
    shown = show(DEJA_VU, "avro", parse_avro_schema(NULLS), budget())
    assert shown.kind == "error"
    assert shown.text.startswith("not decodable:") and "items" in shown.text


def test_a_block_of_zero_width_items_counts_against_the_item_limit():
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(json.loads(NULLS)), [None] * 50)
    assert json.loads(show(out.getvalue(), "avro", parse_avro_schema(NULLS), budget(decode_max_items=50)).text) \
        == [None] * 50
    refused = show(out.getvalue(), "avro", parse_avro_schema(NULLS), budget(decode_max_items=49))
    assert refused.kind == "error" and "49" in refused.text


def test_a_recursive_schema_is_bounded_by_depth():
    schema = '{"type": "record", "name": "L", "fields": [{"name": "next", "type": ["null", "L"]}]}'
    shallow = show(b"\x02\x02\x00", "avro", parse_avro_schema(schema), budget())
    assert json.loads(shallow.text) == {"next": {"next": {"next": None}}}
    fifty = show(b"\x02" * 50 + b"\x00", "avro", parse_avro_schema(schema), budget())
    assert fifty.kind == "avro" and fifty.text.count("next") == 51  # a list of 50: within 64 levels
    deep = show(b"\x02" * 5000 + b"\x00", "avro", parse_avro_schema(schema), budget())
    assert deep.kind == "error" and "deeper than" in deep.text


def test_a_length_past_the_end_and_an_oversize_value_are_refused():
    string = parse_avro_schema('"string"')
    past = show(b"\xfe\xff\xff\xff\x0f", "avro", string, budget())  # a length of 2 GiB in 5 bytes
    assert past.kind == "error" and "remain" in past.text
    big = show(b"\x02x" * 600, "avro", parse_avro_schema('{"type": "array", "items": "string"}'),
               budget(decode_max_bytes=1024))
    assert big.kind == "error" and "1024" in big.text and "--decode-max-bytes" in big.text


def test_a_spent_page_budget_refuses_further_decodes_but_keeps_the_record():
    spent = DecodeBudget(ConsoleLimits(), deadline=time.monotonic() - 1)
    for decoding, schema in (("avro", parse_avro_schema('"string"')), ("json", None), ("auto", None)):
        shown = show(b'\x02x' if decoding == "avro" else b'{"a": 1}', decoding, schema, spent)
        assert shown.kind == "error" and "--decode-budget-ms" in shown.text
    assert show(b"ab", "hex", None, spent).text == "61 62"  # no decode: still shown


def test_deeply_nested_json_says_why_instead_of_failing_the_page():
    shown = show(b"[" * 4000 + b"]" * 4000, "json", None, budget())
    assert shown.kind == "error" and "not JSON" in shown.text
    assert show(b"[" * 4000, "auto", None, budget()).kind in ("text", "error")


def test_typed_columns_are_capped_like_text():
    shown = show({"name": "x" * 100_000}, "auto", None, budget())
    assert shown.kind == "columns" and len(shown.text.encode()) < 5000 and "more" in shown.text


def test_limits_are_checked_by_name_with_their_range():
    with pytest.raises(ConfigError, match=r"decode\.max\.items.*0.*1\.\."):
        ConsoleLimits.from_options({"decode.max.items": "0"})
    with pytest.raises(ConfigError, match=r"decode\.budget\.ms"):
        ConsoleLimits(decode_budget_ms=10**9)
    with pytest.raises(ConfigError, match="nosuch"):
        ConsoleLimits.from_options({"nosuch": "1"})
    assert ConsoleLimits.from_options({"decode.max.items": "7"}).decode_max_items == 7


@pytest.fixture
def deja_vu_topic(cluster_dir):
    with Admin({"cluster": cluster_dir}) as admin:
        admin.create_topics([NewTopic("dv", 1, 1)])["dv"].result()
    with Producer({"cluster": cluster_dir, "linger.ms": 0}) as producer:
        producer.produce("dv", DEJA_VU, partition=0)
        producer.produce("dv", b"\x04\x00", partition=0)  # a block of two nulls, then the end
    return "dv"


def test_the_messages_page_answers_with_the_refusal_in_its_cell(read_only_client, deja_vu_topic):
    response = read_only_client.get(f"/c/main/topics/{deja_vu_topic}/messages",
                                    params={"decoding": "avro", "avro_schema": NULLS})
    assert response.status_code == 200
    page = response.text.replace("&#34;", '"')
    assert "not decodable:" in page and "[null, null]" in page  # the next record still decodes


def test_kstream_console_takes_the_limits_as_options(monkeypatch, cluster_dir):
    from click.testing import CliRunner

    from kstream.tools.cli.main import cli

    served = {}
    monkeypatch.setattr("uvicorn.run", lambda app, host, port, log_level: served.update(app=app))
    result = CliRunner().invoke(cli, ["console", "--cluster", f"main={cluster_dir}", "--sample-interval-s", "0",
                                      "--decode-max-bytes", "4096", "--decode-max-items", "9",
                                      "--decode-budget-ms", "500"])
    assert result.exit_code == 0, result.output
    limits = served["app"].app.state.console.limits
    assert (limits.decode_max_bytes, limits.decode_max_items, limits.decode_budget_ms) == (4096, 9, 500)
    bad = CliRunner().invoke(cli, ["console", "--cluster", cluster_dir, "--decode-max-items", "0"])
    assert bad.exit_code != 0 and "--decode-max-items" in str(bad.exception)


def test_values_of_a_rich_schema_pass_the_walk_and_decode():
    schema = {"type": "record", "name": "R", "namespace": "n", "fields": [
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
        {"name": "f", "type": {"type": "fixed", "name": "F", "size": 3}},
        {"name": "m", "type": {"type": "map", "values": ["null", "double", "E"]}},
        {"name": "a", "type": {"type": "array", "items": {"type": "array", "items": "float"}}},
        {"name": "b", "type": ["null", "bytes", "F"]},
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2}},
        {"name": "flag", "type": "boolean"}, {"name": "i", "type": "int"}, {"name": "s", "type": "string"}]}
    record = {"e": "B", "f": b"xyz", "m": {"k": None, "l": 2.5, "z": "A"}, "a": [[1.5], [], [2.0, 3.0]],
              "b": b"\x00\x01", "d": decimal.Decimal("12.34"), "flag": True, "i": -7, "s": "déjà"}
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    shown = show(out.getvalue(), "avro", parse_avro_schema(json.dumps(schema)), budget())
    assert shown.kind == "avro", shown.text
    assert json.loads(shown.text)["m"] == {"k": None, "l": 2.5, "z": "A"}
    assert show(out.getvalue()[:-1], "avro", parse_avro_schema(json.dumps(schema)), budget()).kind == "error"


@pytest.mark.parametrize("schema", ['{"type": "long", "logicalType": "timestamp-millis"}',
                                    '{"type": "int", "logicalType": "date"}',
                                    '{"type": "long", "logicalType": "time-micros"}'])
def test_a_logical_value_out_of_range_says_why(schema):
    shown = show(b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01", "avro", parse_avro_schema(schema), budget())
    assert shown.kind == "error" and shown.text.startswith("not Avro of the given schema")


ZERO_WIDTH_SCHEMAS = [
    NULLS, '{"type": "map", "values": "null"}', '{"type": "array", "items": {"type": "array", "items": "null"}}',
    '{"type": "array", "items": {"type": "fixed", "name": "Z", "size": 0}}',
    '{"type": "array", "items": {"type": "record", "name": "Empty", "fields": []}}',
    '{"type": "record", "name": "L", "fields": [{"name": "n", "type": ["null", "L"]}, '
    '{"name": "a", "type": {"type": "array", "items": "L"}}]}',
    '["null", "string", "bytes", {"type": "enum", "name": "E", "symbols": ["A"]}, '
    '{"type": "fixed", "name": "F", "size": 0}]']


@pytest.mark.parametrize("schema", ZERO_WIDTH_SCHEMAS)
def test_random_bytes_always_show_something_within_the_item_limit(schema):
    """Seeded random values: each is decoded or refused in its cell, never raises, and a
    decoded one holds at most decode.max.items items."""
    import random

    rng = random.Random(26)
    parsed = parse_avro_schema(schema)
    for _ in range(300):
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
        shown = show(raw, "avro", parsed, budget(decode_max_items=1000))
        assert shown.kind in ("avro", "error")
        if shown.kind == "avro":
            assert shown.text.count("null") <= 1000 + 40


@pytest.fixture
def zero_width_topic(cluster_dir):
    """A typed topic whose first record is a list of a million nulls: a few bytes on disk."""
    import pyarrow as pa

    schema = pa.schema([("id", pa.int64()), ("l", pa.list_(pa.null()))])
    with Admin({"cluster": cluster_dir}) as admin:
        admin.create_topics([NewTopic("zw", 1, 1, schema=schema)])["zw"].result()
    million = pa.ListArray.from_arrays(pa.array([0, 1_000_000, 1_000_002], pa.int32()), pa.nulls(1_000_002))
    with Producer({"cluster": cluster_dir, "linger.ms": 0}) as producer:
        producer.produce_batch("zw", pa.table({"id": [1, 2], "l": million}), partition=0)
        producer.produce("zw", {"id": 3, "l": []}, key=b"k3", headers=[("h", b"x")], partition=0)
    return "zw"


def test_a_typed_row_of_zero_width_values_is_refused_before_conversion(read_only_client, zero_width_topic):
    page = read_only_client.get(f"/c/main/topics/{zero_width_topic}/messages").text.replace("&#34;", '"')
    assert page.count("not decodable: its columns hold more than 100000 values") == 1
    assert '"id": 2, "l": [null, null]' in page and '"id": 3, "l": []' in page and "k3" in page


def test_count_elements_counts_every_nested_level():
    import pyarrow as pa

    from kstream.log.storage.element_count import count_elements

    assert count_elements(pa.array([[1, 2], [3]]), 100) == 2 + 3
    assert count_elements(pa.array([[1, 2], [3]]).slice(1, 1), 100) == 1 + 1
    nested = pa.array([{"a": [1, 2, 3], "b": {"c": [None]}}])
    assert count_elements(nested, 100) == 1 + 1 + 3 + 1 + 1 + 1
    assert count_elements(pa.array([[(1, "x")]], pa.map_(pa.int8(), pa.string())), 100) == 1 + 1 + 1 + 1
    words = pa.array(["x", "y", "x"]).dictionary_encode()
    assert count_elements(words, 100) == 3 + 3
    bomb = pa.ListArray.from_arrays(pa.array([0, 10**9], pa.int32()), pa.nulls(10**9))
    assert count_elements(bomb, 1000) > 1000

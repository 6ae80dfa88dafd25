"""How the browser shows a field: text, JSON, hex, Avro, typed columns, and why not."""

from __future__ import annotations

import io
import json

import fastavro
import pytest

from kstream.errors import ConfigError
from kstream.tools.web.browser import BrowseRequest, Shown, parse_avro_schema, show

SCHEMA = {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}, {"name": "s", "type": "string"}]}


def avro_bytes(record):
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(SCHEMA), record)
    return out.getvalue()


def test_auto_picks_json_then_text_then_hex():
    assert show(b'{"a": 1}', "auto") == Shown('{"a": 1}', "json")
    assert show(b"plain", "auto") == Shown("plain", "text")
    assert show(b"\xff\x00", "auto") == Shown("ff 00", "hex")
    assert show(None, "auto") == Shown("null", "null")
    assert show({"id": 1}, "hex") == Shown('{"id": 1}', "columns")  # a typed topic's value is its columns


def test_a_field_that_does_not_decode_says_why():
    assert show(b"plain", "json").kind == "error" and "not JSON" in show(b"plain", "json").text
    assert show(b"\xff", "text").kind == "error"


def test_avro_with_the_writers_schema():
    parsed = parse_avro_schema(json.dumps(SCHEMA))
    assert json.loads(show(avro_bytes({"id": 7, "s": "x"}), "avro", parsed).text) == {"id": 7, "s": "x"}
    assert show(b"\x01", "avro", parsed).kind == "error"


def test_requests_are_checked():
    with pytest.raises(ConfigError, match="count"):
        BrowseRequest("t", 0, count=0).check()
    with pytest.raises(ConfigError, match="decoding"):
        BrowseRequest("t", 0, decoding="xml").check()
    with pytest.raises(ConfigError, match="schema"):
        BrowseRequest("t", 0, decoding="avro").check()

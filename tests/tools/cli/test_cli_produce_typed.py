"""`kstream produce` into a typed topic: each line is a JSON object of the columns (or, with
--format csv, the columns in the schema's order), keys and headers parsed as on a bytes topic;
a bad line stops the run with its line number and column, the lines before it written."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pyarrow as pa
import pytest
from click.testing import CliRunner

from kstream import Consumer, TopicPartition
from kstream.config.option_text import parse_schema
from kstream.message import OFFSET_BEGINNING
from kstream.tools.cli.main import cli


def run(cluster, *args, input=None):
    return CliRunner().invoke(cli, ["--cluster", cluster, *args], input=input)


def read_all(path, topic="t"):
    with Consumer({"cluster": path}) as consumer:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        records = []
        while (m := consumer.poll(0.3)) is not None:
            records.append((m.key(), m.value()))
        return records


@pytest.fixture
def typed(cluster_path, make_topic):
    make_topic("t", schema=parse_schema("id:int64,name:string"))
    return cluster_path


def test_a_json_line_fills_the_columns(typed):
    result = run(typed, "produce", "t", input='{"id":1,"name":"ok"}\n{"name":"no id"}\n{"id":3,"name":null}\n')
    assert result.exit_code == 0, result.output
    assert "Produced 3 record(s)" in result.output
    assert read_all(typed) == [(None, {"id": 1, "name": "ok"}), (None, {"id": None, "name": "no id"}),
                               (None, {"id": 3, "name": None})]


def test_keys_are_parsed_before_the_json_value(typed):
    result = run(typed, "produce", "t", "--property", "parse.key=true,key.separator=|",
                 input='k1|{"id":1,"name":"a|b"}\n')
    assert result.exit_code == 0, result.output
    assert read_all(typed) == [(b"k1", {"id": 1, "name": "a|b"})]


def test_csv_takes_the_schemas_column_order(typed):
    result = run(typed, "produce", "t", "--format", "csv", "--key-separator", "\t",
                 input='k\t1,plain\n\t2,"with, comma and ""quotes"""\n\t,\n')
    assert result.exit_code == 0, result.output
    assert read_all(typed) == [(b"k", {"id": 1, "name": "plain"}), (b"", {"id": 2, "name": 'with, comma and "quotes"'}),
                               (b"", {"id": None, "name": None})]  # an empty field is null


@pytest.mark.parametrize("fmt, lines, where", [
    ("json", '{"id":1,"name":"a"}\n{"id":"two","name":"b"}\n{"id":3,"name":"c"}\n', "line 2, column 'id'"),
    ("json", '{"id":1,"name":"a"}\n{"id":2,"nmae":"b"}\n{"id":3,"name":"c"}\n', "line 2: columns ['nmae']"),
    ("json", '{"id":1,"name":"a"}\n{"id":2,\n{"id":3,"name":"c"}\n', "line 2: not a JSON object"),
    ("json", '{"id":1,"name":"a"}\n[2,"b"]\n{"id":3,"name":"c"}\n', "line 2: a record of typed topic 't'"),
    ("json", '{"id":1,"name":"a"}\n{"id":99999999999999999999,"name":"b"}\n{"id":3,"name":"c"}\n',
     "line 2: column 'id'"),
    ("json", '{"id":1,"name":"a"}\n{"id":true,"name":"b"}\n{"id":3,"name":"c"}\n', "line 2, column 'id'"),
    ("csv", "1,a\n2.5,b\n3,c\n", "line 2, column 'id'"),
    ("csv", "1,a\n2\n3,c\n", "line 2: 1 field"),
])
def test_a_bad_line_stops_the_run_naming_line_and_column(typed, fmt, lines, where):
    result = run(typed, "produce", "t", "--format", fmt, input=lines)
    assert result.exit_code != 0
    assert where in str(result.exception), result.exception
    assert read_all(typed) == [(None, {"id": 1, "name": "a"})]  # as Kafka's tool: the lines before it are written
    assert "Produced 1 record(s) to t; stopped at line 2" in result.output


def test_json_and_csv_read_timestamps_dates_decimals_and_base64_binary(cluster_path, make_topic):
    schema = pa.schema([("at", pa.timestamp("ms")), ("day", pa.date32()), ("price", pa.decimal128(10, 2)),
                        ("ratio", pa.float64()), ("ok", pa.bool_()), ("blob", pa.binary())])
    make_topic("t", schema=schema)
    json_line = ('{"at":"2026-01-02T03:04:05.006","day":"2026-01-02","price":12.34,"ratio":1,'
                 '"ok":true,"blob":"AAE="}\n')
    csv_line = "1767323045006,2026-01-02,12.34,1.0,TRUE,AAE=\n"
    assert run(cluster_path, "produce", "t", input=json_line).exit_code == 0
    result = run(cluster_path, "produce", "t", "--format", "csv", input=csv_line)
    assert result.exit_code == 0, result.output
    expected = {"at": datetime.datetime(2026, 1, 2, 3, 4, 5, 6000), "day": datetime.date(2026, 1, 2),
                "price": Decimal("12.34"), "ratio": 1.0, "ok": True, "blob": b"\x00\x01"}
    assert read_all(cluster_path) == [(None, expected), (None, expected)]


def test_what_consume_prints_produces_the_same_rows(cluster_path, make_topic):
    schema = pa.schema([("id", pa.int64()), ("at", pa.timestamp("ms")), ("blob", pa.binary()), ("x", pa.float64()),
                        ("m", pa.map_(pa.string(), pa.int64())), ("day", pa.date32())])
    make_topic("t", schema=schema)
    make_topic("copy", schema=schema)
    lines = ('{"id":1,"at":"2026-01-02T03:04:05","blob":"/wA=","x":0.1,"m":{"a":1},"day":"2026-01-02"}\n'
             '{"id":2,"at":null,"blob":null,"x":null}\n')
    assert run(cluster_path, "produce", "t", input=lines).exit_code == 0
    printed = run(cluster_path, "consume", "t", "--from-beginning", "--timeout-ms", "300", "--print-key")
    assert printed.exit_code == 0, printed.output
    text = "".join(line + "\n" for line in printed.output.splitlines() if not line.startswith("Processed"))
    copied = run(cluster_path, "produce", "copy", "--property", "parse.key=true,null.marker=null", input=text)
    assert copied.exit_code == 0, copied.output
    assert read_all(cluster_path, "copy") == read_all(cluster_path) != []


def test_format_is_for_typed_topics_and_csv_for_flat_columns(cluster_path, make_topic):
    make_topic("raw")
    result = run(cluster_path, "produce", "raw", "--format", "json", input='{"a":1}\n')
    assert result.exit_code == 2 and "bytes topic" in result.output
    make_topic("t", schema=pa.schema([("tags", pa.list_(pa.string()))]))
    result = run(cluster_path, "produce", "t", "--format", "csv", input="x\n")
    assert result.exit_code != 0 and "column 'tags'" in str(result.exception)
    result = run(cluster_path, "produce", "t", input='{"tags":["a","b"]}\n')  # JSON takes nested columns
    assert result.exit_code == 0, result.output
    assert read_all(cluster_path) == [(None, {"tags": ["a", "b"]})]


def test_nested_columns_convert_their_elements(cluster_path, make_topic):
    schema = pa.schema([("xs", pa.list_(pa.float64())), ("at", pa.list_(pa.timestamp("ms"))),
                        ("p", pa.struct([("w", pa.float64()), ("blob", pa.binary())])),
                        ("m", pa.map_(pa.string(), pa.float64()))])
    make_topic("t", schema=schema)
    line = ('{"xs":[1.5,2,null],"at":["2026-01-02T03:04:05"],"p":{"w":0.25,"blob":"AAE="},'
            '"m":{"a":0.5}}\n')
    result = run(cluster_path, "produce", "t", input=line)
    assert result.exit_code == 0, result.output
    assert read_all(cluster_path) == [(None, {
        "xs": [1.5, 2.0, None], "at": [datetime.datetime(2026, 1, 2, 3, 4, 5)],
        "p": {"w": 0.25, "blob": b"\x00\x01"}, "m": [("a", 0.5)]})]
    result = run(cluster_path, "produce", "t", input='{"xs":"1.5"}\n')
    assert "line 1, column 'xs' (list<item: double>): expected a JSON array" in str(result.exception)


@pytest.mark.parametrize("fmt, value, expected", [
    ("json", '{"id":"7"}', "expected an integer, got '7'"),  # JSON: a string is no number
    ("json", '{"id":7,"name":7}', "expected a string, got 7"),
    ("csv", "x,a", "expected an integer, got 'x'"),
])
def test_the_error_says_what_the_column_takes(typed, fmt, value, expected):
    result = run(typed, "produce", "t", "--format", fmt, input=value + "\n")
    assert expected in str(result.exception)
    assert read_all(typed) == []


def test_a_date_that_is_no_date_is_named(cluster_path, make_topic):
    make_topic("t", schema=parse_schema("day:date32,at:timestamp[ms]"))
    result = run(cluster_path, "produce", "t", input='{"day":"2026-02-30"}\n')
    assert "line 1, column 'day' (date32[day]): expected an ISO 8601 date, got '2026-02-30'" in str(result.exception)
    result = run(cluster_path, "produce", "t", "--format", "csv", input=",yesterday\n")
    assert "column 'at' (timestamp[ms]): expected an ISO 8601 timestamp" in str(result.exception)

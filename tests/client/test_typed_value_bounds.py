"""A typed record whose value holds more values than ``decode.max.items`` (a list of nulls is
stored in no bytes: a few hundred bytes on disk, a million ``None`` in Python) is not converted
by ``poll()``/``consume()``: it is an error Message (_VALUE_DESERIALIZATION) naming the record
and what to do, the records around it come through, and ``poll_batch()`` still reads it as
Arrow. ``kstream consume`` halts on it as kafka-console-consumer halts on an error."""

from __future__ import annotations

import pyarrow as pa
import pytest
from click.testing import CliRunner

from kstream import Consumer, KafkaError, Producer, TopicPartition
from kstream.errors import ConfigError, ValueTooLargeError
from kstream.tools.cli.main import cli

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("nothing", pa.list_(pa.null()))])
MANY = 1_000_000


@pytest.fixture
def typed(cluster_path, make_topic):
    """t: ids 0, 1, 2; record 1 holds a list of a million nulls."""
    make_topic("t", 1, schema=SCHEMA)
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for i in range(3):
            producer.produce("t", {"id": i, "nothing": [None] * (MANY if i == 1 else 2)})
        producer.flush()


def consumer(cluster_path, **extra):
    c = Consumer({"cluster": cluster_path, "fetch.wait.max.ms": 10, "decode.max.items": 1000, **extra})
    c.assign([TopicPartition("t", 0, 0)])
    return c


def test_poll_reports_a_value_past_decode_max_items_and_goes_on(cluster_path, typed):
    c = consumer(cluster_path)
    try:
        messages = [c.poll(1) for _ in range(3)]
    finally:
        c.close()
    assert [m.offset() for m in messages] == [0, 1, 2]
    assert messages[0].error() is None and messages[0].value() == {"id": 0, "nothing": [None, None]}
    error = messages[1].error()
    assert error is not None and error.code() == KafkaError._VALUE_DESERIALIZATION
    assert isinstance(error.exception, ValueTooLargeError)
    assert "t-0 offset 1" in error.str() and "decode.max.items" in error.str() and "poll_batch" in error.str()
    assert messages[1].value() is None
    assert messages[2].error() is None and messages[2].value()["id"] == 2


def test_poll_batch_still_reads_it_as_arrow(cluster_path, typed):
    c = consumer(cluster_path)
    try:
        batches = [c.poll_batch(3, 1) for _ in range(3)]
    finally:
        c.close()
    table = pa.Table.from_batches([b for b in batches if b is not None])
    assert table.column("id").to_pylist() == [0, 1, 2]
    assert len(table.column("nothing")[1].values) == MANY


def test_decode_max_items_is_bounded(cluster_path):
    with pytest.raises(ConfigError, match="decode.max.items"):
        Consumer({"cluster": cluster_path, "decode.max.items": 0})
    with pytest.raises(ConfigError, match="decode.max.items"):
        Consumer({"cluster": cluster_path, "decode.max.items": 10**9})


def test_kstream_consume_halts_on_it_naming_the_record(cluster_path, typed):
    result = CliRunner().invoke(cli, ["--cluster", cluster_path, "consume", "t", "--from-beginning",
                                      "--timeout-ms", "2000", "--consumer-config", "decode.max.items=1000"])
    assert result.exit_code != 0
    assert "t-0 offset 1" in result.output and "decode.max.items" in result.output
    assert "Processed a total of 1 messages" in result.output


def test_the_consoles_tail_shows_such_a_record_as_an_error_cell(cluster_path, typed):
    """The live tail converts with Consumer.poll (bounded by the console's decode.max.items):
    the record is listed, its value cell says why it is not shown."""
    from kstream.tools.web.browser import row_of

    c = consumer(cluster_path)
    try:
        rows = [row_of(c.poll(1), "auto") for _ in range(3)]
    finally:
        c.close()
    assert [r.offset for r in rows] == [0, 1, 2]
    assert rows[1].value.kind == "error" and "decode.max.items" in rows[1].value.text
    assert rows[0].value.kind != "error"

"""`kstream produce` / `kstream consume` with Kafka's console tools' options: --offset,
--isolation-level, --property (DefaultMessageFormatter / LineMessageReader), --compression-codec."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from kstream import Consumer, Producer, TopicPartition
from kstream.log.storage import format as fmt
from kstream.message import OFFSET_BEGINNING
from kstream.tools.cli.main import cli


def run(cluster, *args, input=None):
    return CliRunner().invoke(cli, ["--cluster", cluster, *args], input=input)


def printed(result):
    """stdout lines (CliRunner mixes stderr in: drop the summary line)."""
    return [line for line in result.output.splitlines() if not line.startswith(("Processed", "Produced"))]


@pytest.fixture
def filled(cluster_path, make_topic):
    make_topic("t", partitions=2)
    with Producer({"cluster": cluster_path}) as producer:
        for i in range(6):
            producer.produce("t", f"v{i}".encode(), key=f"k{i}".encode() if i != 3 else None,
                             partition=i % 2, timestamp=1_000 + i, headers=[("h", b"x")] if i == 0 else None)
    return cluster_path


def consume(path, *args):
    result = run(path, "consume", "t", "--timeout-ms", "300", *args)
    assert result.exit_code == 0, result.output
    return printed(result)


def test_offset_earliest_latest_and_number(filled):
    assert consume(filled, "--partition", "0", "--offset", "earliest") == ["v0", "v2", "v4"]
    assert consume(filled, "--partition", "0", "--offset", "1") == ["v2", "v4"]
    assert consume(filled, "--partition", "1", "--offset", "latest") == []
    assert consume(filled, "--partition", "1", "--from-beginning") == ["v1", "v3", "v5"]


@pytest.mark.parametrize("args, message", [
    (["--offset", "1"], "partition is required"),
    (["--partition", "0", "--offset", "1", "--from-beginning"], "cannot be specified together"),
    (["--partition", "0", "--offset", "-5"], "non-negative"),
    (["--partition", "0", "--offset", "first"], "earliest, latest"),
])
def test_offset_misuse_is_a_usage_error(filled, args, message):
    result = run(filled, "consume", "t", "--timeout-ms", "100", *args)
    assert result.exit_code == 2 and message in result.output


def test_properties_shape_the_line_like_default_message_formatter(filled):
    lines = consume(filled, "--partition", "0", "--from-beginning", "--property",
                    "print.key=true,key.separator=|", "--property", "print.partition=true",
                    "--formatter-property", "print.offset=true", "--property", "print.timestamp=true")
    assert lines == ["CreateTime:1000|Partition:0|Offset:0|k0|v0", "CreateTime:1002|Partition:0|Offset:1|k2|v2",
                     "CreateTime:1004|Partition:0|Offset:2|k4|v4"]
    lines = consume(filled, "--topic", "t", "--partition", "1", "--from-beginning", "--property",
                    "print.key=true", "--property", "null.literal=<none>", "--property", "print.value=false")
    assert lines == ["k1", "<none>", "k5"]
    headers = consume(filled, "--partition", "0", "--from-beginning", "--property", "print.headers=true",
                      "--max-messages", "2")
    assert headers == ["h:x\tv0", "NO_HEADERS\tv2"]


def test_separator_may_be_a_comma_and_escapes_are_read(filled):
    assert consume(filled, "--partition", "0", "--offset", "2", "--property", "print.key=true",
                   "--property", "key.separator=,") == ["k4,v4"]
    result = run(filled, "consume", "t", "--timeout-ms", "300", "--partition", "0", "--offset", "2",
                 "--property", "print.offset=true", "--property", "key.separator=\\t",
                 "--property", "line.separator=;\\n")
    assert printed(result) == ["Offset:2\tv4;"]


def test_unknown_property_and_formatter_are_refused(filled):
    result = run(filled, "consume", "t", "--timeout-ms", "100", "--property", "print.kye=true")
    assert result.exit_code != 0 and "print.kye" in str(result.exception)
    result = run(filled, "consume", "t", "--timeout-ms", "100", "--formatter", "com.acme.Fancy")
    assert result.exit_code == 2 and "default formatter" in result.output
    ok = run(filled, "consume", "t", "--timeout-ms", "100", "--formatter",
             "org.apache.kafka.tools.consumer.DefaultMessageFormatter")
    assert ok.exit_code == 0, ok.output


def test_isolation_level(cluster_path, make_topic):
    make_topic("t")
    producer = Producer({"cluster": cluster_path, "transactional.id": "tx", "linger.ms": 0})
    producer.init_transactions()
    producer.begin_transaction()
    producer.produce("t", b"open", partition=0)
    producer.flush()
    try:
        assert consume(cluster_path, "--from-beginning", "--isolation-level", "read_uncommitted") == ["open"]
        assert consume(cluster_path, "--from-beginning", "--isolation-level", "read_committed") == []
    finally:
        producer.abort_transaction()


def read_all(path, topic="t"):
    with Consumer({"cluster": path}) as consumer:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        messages = []
        while (m := consumer.poll(0.3)) is not None:
            messages.append((m.key(), m.value(), m.headers()))
        return messages


def test_produce_parses_keys_headers_and_null_markers(cluster_path, make_topic):
    make_topic("t")
    lines = "h1:a,h2:b\tk1:v1\nNULL\tNULL:v3\nh3:NULL\tk4:NULL\n"
    result = run(cluster_path, "produce", "--topic", "t", "--partition", "0", "--property",
                 "parse.key=true,key.separator=:", "--property", "parse.headers=true",
                 "--property", "null.marker=NULL", input=lines)
    assert result.exit_code == 0, result.output
    assert read_all(cluster_path) == [
        (b"k1", b"v1", [("h1", b"a"), ("h2", b"b")]),
        (None, b"v3", None),
        (b"k4", None, [("h3", None)]),
    ]


def test_produce_missing_separator_names_the_line(cluster_path, make_topic):
    make_topic("t")
    result = run(cluster_path, "produce", "t", "--property", "parse.key=true", "--property",
                 "key.separator=:", input="a:1\nno separator\n")
    assert result.exit_code != 0 and "line number 2" in str(result.exception)
    result = run(cluster_path, "produce", "t", "--partition", "0", "--property",
                 "parse.key=true,key.separator=:,ignore.error=true", input="a:1\nplain\n")
    assert result.exit_code == 0, result.output
    assert [(k, v) for k, v, _ in read_all(cluster_path)][-2:] == [(b"a", b"1"), (None, b"plain")]


def test_compression_codec(cluster_path, make_topic):
    make_topic("t")
    result = run(cluster_path, "produce", "t", "--partition", "0", "--compression-codec", "zstd",
                 input="x" * 1000 + "\n")
    assert result.exit_code == 0, result.output
    segment = os.path.join(cluster_path, "logs", "t-0", fmt.segment_file_name(0))
    assert "compression: zstd" in run(cluster_path, "dump-log", segment).output
    refused = run(cluster_path, "produce", "t", "--compression-codec", input="y\n")  # alone: gzip, as Kafka
    assert refused.exit_code != 0 and "gzip" in str(refused.exception)


@pytest.mark.parametrize("properties, message", [
    ("parse.headers=true,headers.delimiter=|,headers.separator=|", "headers.delimiter and headers.separator"),
    ("parse.key=true,key.separator=~,null.marker=~", "key.separator and null.marker"),
    ("parse.key=yes", "expected true or false"),
    ("parse.kye=true", "parse.kye"),
])
def test_produce_refuses_bad_reader_properties(cluster_path, make_topic, properties, message):
    make_topic("t")
    result = run(cluster_path, "produce", "t", "--property", properties, input="a\n")
    assert result.exit_code != 0 and message in str(result.exception)
    assert read_all(cluster_path) == []

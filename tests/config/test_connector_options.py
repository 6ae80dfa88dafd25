"""The data source's options follow the Spark Kafka connector's rules (checked without Spark)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from kstream.errors import ConfigError, InvalidRecordError
from kstream.source.planning import check_covers_selection
from kstream.source.read_options import ReaderOptions


def batch(**options):
    return ReaderOptions.from_options({"subscribe": "t", **options}, streaming=False)


def stream(**options):
    return ReaderOptions.from_options({"subscribe": "t", **options}, streaming=True)


def test_the_connectors_own_options_and_kafka_keys_are_accepted():
    options = batch(**{"kafka.bootstrap.servers": "host1:port1,host2:port2", "kafka.security.protocol": "SSL",
                       "groupIdPrefix": "p", "kafkaConsumer.pollTimeoutMs": "512", "fetchOffset.numRetries": "3",
                       "KAFKA.SASL.MECHANISM": "PLAIN", "kafka.isolation.level": "read_uncommitted"})
    assert options.isolation_level == "read_uncommitted"
    assert options.starting_offsets == "earliest"  # batch default, as the connector's


@pytest.mark.parametrize(("name", "suggested"), [
    ("startingOffset", "'startingOffsets'"),
    ("subscribePatern", "'subscribePattern'"),
    ("maxOffsetPerTrigger", "'maxOffsetsPerTrigger'"),
    ("includeHeader", "'includeHeaders'"),
])
def test_an_unknown_option_says_did_you_mean(name, suggested):
    expected = f"unknown option '{name}' for the kstream reader; did you mean .*{suggested}"
    with pytest.raises(ConfigError, match=expected):
        batch(**{name: "x"})


@pytest.mark.parametrize("key", ["kafka.auto.offset.reset", "kafka.enable.auto.commit",
                                 "kafka.key.deserializer", "kafka.value.deserializer", "kafka.interceptor.classes"])
def test_kafka_keys_the_connector_refuses_are_refused(key):
    with pytest.raises(ConfigError, match=f"option '{key}' is not supported"):
        batch(**{key: "x"})


def test_kafka_group_id_commits_nothing_and_group_id_does():
    assert batch(**{"kafka.group.id": "g"}).group_id is None
    assert stream(**{"kafka.group.id": "g"}).group_id is None
    assert stream(**{"group.id": "g"}).group_id == "g"


@pytest.mark.parametrize("options", [
    {},
    {"startingOffsets": "earliest", "endingOffsets": "latest"},
    {"startingOffsets": '{"t":{"0":0}}', "endingOffsets": '{"t":{"0":5}}'},
    {"startingTimestamp": "1700000000000"},
    {"auto.commit.interval.ms": "5s"},
])
def test_group_id_on_a_batch_read_without_a_group_position_is_refused(options):
    """A batch read never commits, so group.id there (but to read a group's position) is an
    error saying how to commit (a streaming query) or read from the group instead."""
    with pytest.raises(ConfigError) as raised:
        batch(**{"group.id": "g", **options})
    message = str(raised.value)
    assert "option 'group.id' on a batch read would commit nothing" in message
    assert "spark.readStream" in message and "trigger(availableNow=True)" in message
    assert "checkpointLocation" in message and ".option('startingOffsets', 'group')" in message


@pytest.mark.parametrize("options", [
    {"startingOffsets": "group"},
    {"startingOffsets": "group@version=3"},
    {"startingOffsets": "earliest", "endingOffsets": "group"},
    {"startingOffsets": "group@timestamp=2026-11-20T10:00:00Z", "endingOffsets": "group"},
])
def test_group_id_on_a_batch_read_names_the_group_of_a_group_position(options):
    assert batch(**{"group.id": "g", **options}).group_id == "g"


def test_group_id_is_not_judged_before_spark_says_batch_or_streaming():
    schema_time = ReaderOptions.from_options({"subscribe": "t", "group.id": "g"}, streaming=None)
    assert schema_time.group_id == "g"


@pytest.mark.parametrize(("options", "message"), [
    ({"startingOffsets": "latest"}, "starting offset can't be latest for batch queries"),
    ({"endingOffsets": "earliest"}, "ending offset can't be earliest for batch queries"),
    ({"startingOffsets": '{"t":{"0":-1}}', "endingOffsets": '{"t":{"0":-1}}'}, "t-0 can't be latest"),
    ({"startingOffsets": '{"t":{"0":-2}}', "endingOffsets": '{"t":{"0":-2}}'}, "t-0 can't be earliest"),
    ({"startingOffsets": '{"t":{"0":1,"1":2}}', "endingOffsets": '{"t":{"0":5}}'}, "only in startingOffsets: t-1"),
    ({"startingOffsets": '{"t":{"0":9}}', "endingOffsets": '{"t":{"0":5}}'}, "9 of t-0 is after its endingOffsets 5"),
    ({"minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"}, "is higher than 'maxOffsetsPerTrigger'"),
])
def test_batch_ranges_fail_as_the_connectors_do(options, message):
    with pytest.raises(ConfigError, match=message):
        batch(**options)


def test_streaming_may_start_at_latest_and_takes_no_end():
    assert stream(startingOffsets="latest").starting_offsets == "latest"
    schema_time = ReaderOptions.from_options({"subscribe": "t", "startingOffsets": "latest"}, streaming=None)
    assert schema_time.starting_offsets == "latest"  # the schema is asked before Spark says which read
    assert stream().starting_offsets == "latest"
    with pytest.raises(ConfigError, match="a streaming query has no end"):
        stream(endingOffsets="latest")


def test_json_offsets_must_name_every_selected_partition():
    tps = [("t", 0), ("t", 1), ("u", 0)]
    full = json.dumps({"t": {"0": 5, "1": -2}, "u": {"0": -2}})
    check_covers_selection("startingOffsets", batch(startingOffsets=full).starting_offsets, tps)
    with pytest.raises(ConfigError, match="must name every partition .* missing t-1, u-0; not selected none"):
        check_covers_selection("startingOffsets", batch(startingOffsets='{"t":{"0":5}}').starting_offsets, tps)
    with pytest.raises(ConfigError, match="missing none; not selected t-7"):
        check_covers_selection("endingOffsets", {"t": {"0": 1, "1": 1, "7": 1}, "u": {"0": 1}}, tps)
    by_time = batch(startingOffsetsByTimestamp='{"t":{"0":1000}}').starting_offsets
    with pytest.raises(ConfigError, match="'startingOffsetsByTimestamp' gives specific offsets"):
        check_covers_selection("startingOffsets", by_time, tps)
    check_covers_selection("startingOffsets", "earliest", tps)


def test_the_sink_takes_the_connectors_options_and_refuses_typos():
    pytest.importorskip("pyspark")
    from kstream.sink.writer import SinkOptions

    options = SinkOptions.from_options({"kafka.bootstrap.servers": "h:1", "kafka.acks": "all", "topic": " b ",
                                        "includeHeaders": "true", "cluster": "/tmp/c"})
    assert options.topic == "b"
    with pytest.raises(ConfigError, match="did you mean 'topic'"):
        SinkOptions.from_options({"topics": "b"})
    with pytest.raises(ConfigError, match="'kafka.value.serializer' is not supported"):
        SinkOptions.from_options({"kafka.value.serializer": "x"})


def test_the_topic_option_overrides_the_topic_column_and_other_columns_are_ignored():
    pytest.importorskip("pyspark")
    from kstream.sink.writer import _by_topic

    rows = pa.record_batch({"value": [b"1", b"2"], "topic": ["a", None], "offset": [7, 8], "extra": ["x", "y"]})
    [(topic, table)] = list(_by_topic(rows, "b"))
    assert topic == "b" and table.column_names == ["value"]
    with pytest.raises(InvalidRecordError, match="null 'topic'"):
        list(_by_topic(rows, None))


def test_reader_choice_and_check_crcs_options():
    """'reader' picks the JVM or Python reader (docs/JVM_READER.md); the Python reader only sees
    reads the JVM provider handed it, so reader=jvm here means the jar is not on the session."""
    assert batch(reader="python").check_crcs is True
    assert batch(reader="auto", **{"check.crcs": "false"}).check_crcs is False
    with pytest.raises(ConfigError, match="option 'reader' is jvm, but the kstream JVM reader is not on this"):
        batch(reader="jvm")
    with pytest.raises(ConfigError, match="option 'reader': 'fast' is not jvm, python or auto"):
        batch(reader="fast")
    with pytest.raises(ConfigError, match="option 'check.crcs': 'maybe' is not true or false"):
        batch(**{"check.crcs": "maybe"})

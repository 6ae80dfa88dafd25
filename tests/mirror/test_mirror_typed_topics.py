"""Typed kstream topics through the mirror: into Kafka as JSON values with two headers, and
back into a typed kstream topic (docs/MIRROR.md "Typed topics")."""

from __future__ import annotations

import base64
import datetime
import decimal
import json

import pyarrow as pa
import pytest
from tests.mirror.mirror_support import (
    NOW_MS,
    by_partition,
    create_kafka_topic,
    produce_kafka,
    read_kafka,
    read_kstream,
)

from kstream import Admin, NewTopic, Producer
from kstream.mirror import MirrorError, MirrorOptions, parse_endpoint
from kstream.mirror.into_kafka import IntoKafka
from kstream.mirror.into_kstream import IntoKstream

pytestmark = pytest.mark.kafka

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()),
                    ("at", pa.timestamp("ms", tz="UTC")), ("price", pa.decimal128(9, 2)), ("blob", pa.binary()),
                    ("tags", pa.list_(pa.string()))])
SCHEMA_HEADER = json.dumps([{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in SCHEMA],
                           separators=(",", ":")).encode()


def into_kafka(cluster, bootstrap, name, topic, **kw):
    return IntoKafka(MirrorOptions(parse_endpoint(f"cluster:{cluster}"), parse_endpoint(f"kafka:{bootstrap}"), name,
                                   topics=(topic,), until_end=True, poll_timeout_s=0.2, **kw))


def into_kstream(bootstrap, cluster, name, topic, **kw):
    return IntoKstream(MirrorOptions(parse_endpoint(f"kafka:{bootstrap}"), parse_endpoint(f"cluster:{cluster}"), name,
                                     topics=(topic,), until_end=True, poll_timeout_s=0.2, **kw))


def make_typed_topic(cluster, topic, partitions, schema=SCHEMA):
    with Admin({"cluster": cluster}) as admin:
        admin.create_topics([NewTopic(topic, partitions, schema=schema)])[topic].result()


def row(i):
    return {"id": i, "name": None if i % 5 == 0 else f"n{i}",
            "at": datetime.datetime.fromtimestamp((NOW_MS + i) / 1000, datetime.UTC),
            "price": decimal.Decimal(f"{i}.{i % 100:02d}"), "blob": None if i % 3 else bytes([i % 256, 0]),
            "tags": [f"t{j}" for j in range(i % 4)]}


def expected_json(i):
    """The JSON value docs/MIRROR.md promises for row(i), written out by hand."""
    return {"id": i, "name": None if i % 5 == 0 else f"n{i}", "at": NOW_MS + i, "price": f"{i}.{i % 100:02d}",
            "blob": None if i % 3 else base64.b64encode(bytes([i % 256, 0])).decode(),
            "tags": [f"t{j}" for j in range(i % 4)]}


def headers_of(i):
    return [("h", str(i).encode())] if i % 2 else None


def produce_typed(cluster, topic, partitions, count):
    producer = Producer({"cluster": cluster})
    try:
        for p in range(partitions):
            ids = [i for i in range(count) if i % partitions == p]
            rows = pa.Table.from_pylist([row(i) for i in ids], schema=SCHEMA)
            table = rows.add_column(0, "key", pa.array([f"k{i}".encode() for i in ids], pa.binary()))
            table = table.append_column("timestamp", pa.array([NOW_MS - 60_000 + i for i in ids], pa.int64()))
            table = table.append_column("headers", pa.array([headers_of(i) for i in ids],
                                                            pa.list_(pa.struct([("key", pa.string()),
                                                                                ("value", pa.binary())]))))
            producer.produce_batch(topic, table, partition=p)
        producer.flush()
    finally:
        producer.close()


@pytest.mark.parametrize("exactly_once", [False, True], ids=["at-least-once", "exactly-once"])
def test_a_typed_topic_reaches_kafka_as_one_json_object_per_record_with_the_encoding_headers(
        kafka_broker, tmp_path, topic_name, mirror_name, exactly_once):
    cluster = str(tmp_path / "c")
    make_typed_topic(cluster, topic_name, 2)
    produce_typed(cluster, topic_name, 2, 60)

    progress = into_kafka(cluster, kafka_broker, mirror_name, topic_name, chunk_records=16,
                          exactly_once=exactly_once).run()

    assert progress.records == 60
    got = read_kafka(kafka_broker, topic_name, 2)  # confluent-kafka, read_committed
    encoding = [("kstream.value.encoding", b"json"), ("kstream.value.schema", SCHEMA_HEADER)]
    want = [(i % 2, f"k{i}".encode(), expected_json(i), tuple((headers_of(i) or []) + encoding), NOW_MS - 60_000 + i)
            for i in range(60)]
    decoded = [(p, k, json.loads(v), h, ts) for p, k, v, h, ts in got]
    assert by_partition(decoded) == by_partition(want)


def test_a_typed_topic_mirrored_into_kafka_and_back_into_a_typed_topic_has_the_same_rows(
        kafka_broker, tmp_path, topic_name, mirror_name):
    source, target = str(tmp_path / "source"), str(tmp_path / "target")
    make_typed_topic(source, topic_name, 3)
    produce_typed(source, topic_name, 3, 90)
    make_typed_topic(target, topic_name, 3)

    assert into_kafka(source, kafka_broker, mirror_name, topic_name).run().records == 90
    assert into_kstream(kafka_broker, target, mirror_name, topic_name, chunk_records=32).run().records == 90

    original = read_kstream(source, topic_name, 3)
    assert original[0][2] == {k: v for k, v in row(original[0][2]["id"]).items()}  # values are the typed rows
    assert by_partition(read_kstream(target, topic_name, 3)) == by_partition(original)


def test_kafka_values_that_are_not_json_of_the_typed_target_stop_the_mirror_and_write_nothing(
        kafka_broker, tmp_path, topic_name, mirror_name):
    create_kafka_topic(kafka_broker, topic_name, 1)
    good = json.dumps(expected_json(1)).encode()
    produce_kafka(kafka_broker, topic_name, [(0, None, good, (), NOW_MS), (0, None, b"not json", (), NOW_MS)])
    cluster = str(tmp_path / "c")
    make_typed_topic(cluster, topic_name, 1)

    with pytest.raises(MirrorError, match=rf"Apache Kafka record {topic_name}\[0\] offset 1: .*not a JSON object"):
        into_kstream(kafka_broker, cluster, mirror_name, topic_name).run()
    assert read_kstream(cluster, topic_name, 1) == []  # the chunk's transaction was aborted


def test_a_typed_topic_with_a_type_json_cannot_carry_is_refused_before_kafka_is_touched(
        kafka_broker, tmp_path, topic_name, mirror_name):
    from tests.mirror.mirror_support import kafka_admin

    cluster = str(tmp_path / "c")
    make_typed_topic(cluster, topic_name, 1, pa.schema([("span", pa.month_day_nano_interval())]))

    with pytest.raises(MirrorError, match=r"column 'span' has Arrow type month_day_nano_interval"):
        into_kafka(cluster, kafka_broker, mirror_name, topic_name).run()
    assert topic_name not in kafka_admin(kafka_broker).list_topics(timeout=30).topics


def test_a_schema_evolved_while_the_mirror_runs_sends_the_new_columns_and_says_so(
        kafka_broker, tmp_path, topic_name, mirror_name, monkeypatch):
    import dataclasses

    from kstream.mirror.kstream_side import KstreamSide

    cluster = str(tmp_path / "c")
    first = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    make_typed_topic(cluster, topic_name, 1, first)
    evolved = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
    with Admin({"cluster": cluster}) as admin:
        admin.evolve_schema(topic_name, evolved)
    with Producer({"cluster": cluster}) as producer:
        producer.produce(topic_name, {"id": 1, "name": "one"}, partition=0)
        producer.flush()
    real = KstreamSide.describe

    def as_at_start(self, topic):  # the mirror read the topic before the column was added
        details = real(self, topic)
        return dataclasses.replace(details, schema=first) if topic == topic_name else details

    monkeypatch.setattr(KstreamSide, "describe", as_at_start)
    assert into_kafka(cluster, kafka_broker, mirror_name, topic_name).run().records == 1
    [(_, _, value, headers, _)] = read_kafka(kafka_broker, topic_name, 1)
    assert json.loads(value) == {"id": 1, "name": "one"}
    assert [c["name"] for c in json.loads(dict(headers)["kstream.value.schema"])] == ["id", "name"]

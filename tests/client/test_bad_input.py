"""Bad input fails fast with a KStreamError that says what to do, and writes nothing."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from kstream import (
    OFFSET_BEGINNING,
    Admin,
    ClusterError,
    ConfigError,
    Consumer,
    InvalidRecordError,
    NewTopic,
    PartitionNotFoundError,
    Producer,
    RecordTooLargeError,
    SchemaError,
    TopicExistsError,
    TopicNotFoundError,
    TopicPartition,
)


def stored_bytes(cluster_path):
    total = 0
    for root, _, files in os.walk(os.path.join(cluster_path, "logs")):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files if f.endswith(".log"))
    return total


def test_unknown_topic_lists_existing_topics(cluster_path, make_topic):
    make_topic("orders")
    with Producer({"cluster": cluster_path}) as producer:
        with pytest.raises(TopicNotFoundError, match=r"'ordres' does not exist.*orders.*kstream topics create"):
            producer.produce("ordres", b"x")


def test_bad_config_values_name_option_value_and_choices(cluster_path):
    with pytest.raises(ConfigError, match=r"'acks'.*'2'.*allowed: all, 0, 1"):
        Producer({"cluster": cluster_path, "acks": "2"})
    with pytest.raises(ConfigError, match=r"unknown option 'batch.sise'.*did you mean batch.size"):
        Producer({"cluster": cluster_path, "batch.sise": 10})
    with pytest.raises(ConfigError, match=r"'linger.ms'.*below the minimum 0"):
        Producer({"cluster": cluster_path, "linger.ms": -5})


def test_bad_topic_config_writes_nothing(admin, cluster_path):
    with pytest.raises(ConfigError, match="retention.ms"):
        admin.create_topics([NewTopic("t", 1, 1, {"retention.ms": "soon"})])["t"].result()
    with pytest.raises(ConfigError, match="illegal topic name"):
        admin.create_topics([NewTopic("bad/name", 1)])["bad/name"].result()
    with pytest.raises(ConfigError, match="replication_factor 2 needs that many online log dirs"):
        admin.create_topics([NewTopic("t", 1, 2)])["t"].result()
    assert admin.cluster.list_topics() == []
    admin.create_topics([NewTopic("t", 1)])["t"].result()
    with pytest.raises(TopicExistsError):
        admin.create_topics([NewTopic("t", 1)])["t"].result()


def test_oversize_record_is_refused_and_nothing_written(cluster_path, make_topic):
    make_topic("t", 1, config={"message.max.bytes": "2000"})
    with Producer({"cluster": cluster_path, "message.max.bytes": 1000}) as producer:
        with pytest.raises(RecordTooLargeError, match="message.max.bytes"):
            producer.produce("t", b"x" * 1001)
        with pytest.raises(RecordTooLargeError, match="message.max.bytes"):
            producer.produce_batch("t", pa.table({"value": [b"x" * 5000]}))
    assert stored_bytes(cluster_path) == 0


def test_a_refused_record_is_not_queued(cluster_path, make_topic):
    make_topic("t", 1)
    with Producer({"cluster": cluster_path, "linger.ms": 1000}) as producer:
        producer.produce("t", b"first", headers=[("h", b"1")])
        with pytest.raises(InvalidRecordError, match="header value must be bytes or str"):
            producer.produce("t", b"refused", headers=[("h", 42)])
        producer.produce("t", b"second")
    consumer = Consumer({"cluster": cluster_path})
    consumer.assign([TopicPartition("t", 0, OFFSET_BEGINNING)])
    got = [(m.value(), m.headers()) for m in consumer.consume(10, timeout=1)]
    consumer.close()
    assert got == [(b"first", [("h", b"1")]), (b"second", None)]


def test_wrong_columns_in_produce_batch(cluster_path, make_topic):
    make_topic("t", 2)
    make_topic("typed", 1, schema=pa.schema([("id", pa.int64())]))
    with Producer({"cluster": cluster_path}) as producer:
        with pytest.raises(InvalidRecordError, match="'value' column is required"):
            producer.produce_batch("t", pa.table({"payload": [b"x"]}))
        with pytest.raises(InvalidRecordError, match=r"column 'value' has type int64; expected binary"):
            producer.produce_batch("t", pa.table({"value": [1, 2]}))
        with pytest.raises(InvalidRecordError, match=r"unknown columns \['extra'\]"):
            producer.produce_batch("t", pa.table({"value": [b"x"], "extra": [1]}))
        with pytest.raises(PartitionNotFoundError, match="partitions 0..1"):
            producer.produce_batch("t", pa.table({"value": [b"x"], "partition": [5]}))
        with pytest.raises(SchemaError, match="declares int64"):
            producer.produce_batch("typed", pa.table({"id": ["not a number"]}))
        with pytest.raises(SchemaError, match=r"not in the topic's schema"):
            producer.produce_batch("typed", pa.table({"id": [1], "other": [2]}))
        with pytest.raises(InvalidRecordError, match="must be bytes or str"):
            producer.produce("t", 12345)
    assert stored_bytes(cluster_path) == 0


def test_incompatible_schema_change_is_refused(admin, make_topic):
    make_topic("typed", 1, schema=pa.schema([("id", pa.int64()), ("name", pa.string())]))
    with pytest.raises(SchemaError, match="changes type"):
        admin.evolve_schema("typed", pa.schema([("id", pa.string()), ("name", pa.string())]))
    with pytest.raises(SchemaError, match="removed, renamed or moved"):
        admin.evolve_schema("typed", pa.schema([("id", pa.int64())]))
    with pytest.raises(SchemaError, match="must be nullable"):
        admin.evolve_schema("typed", pa.schema([("id", pa.int64()), ("name", pa.string()),
                                                pa.field("x", pa.int8(), nullable=False)]))
    with pytest.raises(SchemaError, match="reserved"):
        make_topic("typed2", 1, schema=pa.schema([("offset", pa.int64())]))


def test_a_path_that_is_not_a_cluster(tmp_path):
    (tmp_path / "stuff.txt").write_text("my files")
    with pytest.raises(ClusterError, match="is not a kstream cluster"):
        Admin({"cluster": str(tmp_path)})
    assert os.listdir(tmp_path) == ["stuff.txt"]


def test_broker_settings_are_fixed_at_creation(tmp_path):
    path = str(tmp_path / "c")
    dirs = ",".join(str(tmp_path / d) for d in ("d1", "d2"))
    Admin({"cluster": path, "log.dirs": dirs}).close()
    Admin({"cluster": path}).close()  # later entry points read them from the cluster
    with pytest.raises(ConfigError, match="already has log.dirs"):
        Admin({"cluster": path, "log.dirs": str(tmp_path / "d3")})
    with Admin({"cluster": path}) as admin:
        admin.create_topics([NewTopic("t", 4, 2)])["t"].result()
        placements = [p.replicas for p in admin.cluster.topic("t").partitions]
    assert all(len(set(r)) == 2 for r in placements)
    assert sorted(r[0] for r in placements) == [1, 1, 2, 2]  # leaders spread evenly


def test_cluster_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("KSTREAM_CLUSTER", str(tmp_path / "env-cluster"))
    with Admin() as admin:
        assert admin.cluster.path == str(tmp_path / "env-cluster")
    assert os.path.exists(tmp_path / "env-cluster" / "cluster.properties")


def test_deleted_topic_fences_open_producers(admin, cluster_path, make_topic):
    make_topic("t")
    producer = Producer({"cluster": cluster_path, "linger.ms": 0})
    producer.produce("t", b"before")
    admin.delete_topics(["t"])["t"].result()
    with pytest.raises(TopicNotFoundError, match="deleted"):
        producer.produce("t", b"after")
    assert admin.cluster.list_topics() == []

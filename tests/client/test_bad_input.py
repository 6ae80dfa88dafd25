"""Bad input fails fast with a KStreamError that says what to do, and writes nothing."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

from kstream import (
    OFFSET_BEGINNING,
    Admin,
    ClusterError,
    ConfigError,
    Consumer,
    InvalidRecordError,
    KStreamError,
    NewPartitions,
    NewTopic,
    PartitionNotFoundError,
    Producer,
    RecordTooLargeError,
    SchemaError,
    TopicExistsError,
    TopicNotFoundError,
    TopicPartition,
)
from kstream.log.cluster.cluster import Cluster


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
    with pytest.raises(ConfigError, match=r'"acks": 2: .*allowed: all, 0, 1'):
        Producer({"cluster": cluster_path, "acks": "2"})
    with pytest.raises(ConfigError, match=r"unknown option 'batch.sise'.*did you mean batch.size"):
        Producer({"cluster": cluster_path, "batch.sise": 10})
    with pytest.raises(ConfigError, match=r"'linger.ms'.*below the minimum 0"):
        Producer({"cluster": cluster_path, "linger.ms": -5})


def test_bad_topic_config_writes_nothing(admin, cluster_path):
    with pytest.raises(ConfigError, match="retention.ms"):
        admin.create_topics([NewTopic("t", 1, 1, config={"retention.ms": "soon"})])["t"].result()
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
    with Admin({"cluster": path, "log.dirs": dirs}) as admin:  # creating a topic creates the cluster
        admin.create_topics([NewTopic("t", 4, 2)])["t"].result()
    Admin({"cluster": path}).close()  # later entry points read them from the cluster
    with pytest.raises(ConfigError, match="already has log.dirs"):
        Admin({"cluster": path, "log.dirs": str(tmp_path / "d3")})
    with Admin({"cluster": path}) as admin:
        placements = [p.replicas for p in admin.cluster.topic("t").partitions]
    assert all(len(set(r)) == 2 for r in placements)
    assert sorted(r[0] for r in placements) == [1, 1, 2, 2]  # leaders spread evenly


def test_cluster_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("KSTREAM_CLUSTER", str(tmp_path / "env-cluster"))
    with Admin() as admin:
        admin.create_topics([NewTopic("t", 1)])["t"].result()
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


# -- issue 10, defect 12: a partition outside the topic is an error, never routing -------------

@pytest.mark.parametrize("partition", [-7, -3, -2, 3, 2**32 + 1, 2**63, "1", 1.0, True])
def test_produce_to_a_partition_outside_the_topic(cluster_path, make_topic, partition):
    make_topic("t", 3)
    with Producer({"cluster": cluster_path}) as producer:
        with pytest.raises(PartitionNotFoundError, match=r"is not a partition of topic 't'.*0\.\.2.*-1"):
            producer.produce("t", b"x", partition=partition)
        with pytest.raises(PartitionNotFoundError, match=r"is not a partition of topic 't'.*0\.\.2"):
            producer.produce("t", b"x", key=b"k", partition=partition)
        with pytest.raises(PartitionNotFoundError, match=r"is not a partition of topic 't'.*0\.\.2"):
            producer.produce_batch("t", pa.table({"value": [b"x"]}), partition=partition)
        assert len(producer) == 0
    assert stored_bytes(cluster_path) == 0


@pytest.mark.parametrize("column", [
    pa.array([0, 2**32 + 1], pa.int64()),  # was cast to int32 first: landed in partition 1
    pa.array([1, -3], pa.int64()),  # went to the sticky partition
    pa.array([-2], pa.int8()),
    pa.array([2**64 - 1], pa.uint64()),
    pa.array([3, None], pa.int32()),
])
def test_partition_column_outside_the_topic(cluster_path, make_topic, column):
    make_topic("t", 3)
    table = pa.table({"value": [b"x"] * len(column), "partition": column})
    with Producer({"cluster": cluster_path}) as producer:
        with pytest.raises(PartitionNotFoundError, match=r"\(column 'partition'\) is not a partition of topic 't'"):
            producer.produce_batch("t", table)
    assert stored_bytes(cluster_path) == 0


def test_minus_one_and_none_let_the_partitioner_choose(cluster_path, make_topic):
    make_topic("t", 3)
    with Producer({"cluster": cluster_path}) as producer:
        producer.produce("t", b"a", partition=-1)
        producer.produce("t", b"b", partition=None)
        producer.produce("t", b"c", partition=np.int64(2))
        results = producer.produce_batch("t", pa.table({"value": [b"d", b"e", b"f"],
                                                        "partition": pa.array([-1, None, 1], pa.int64())}))
        results += producer.produce_batch("t", pa.table({"value": [b"g"]}), partition=None)
    assert sum(r.record_count for r in results) == 4
    assert {r.partition for r in results} <= {0, 1, 2}


def test_the_spark_sink_refuses_a_partition_outside_the_topic(cluster_path, make_topic):
    from kstream.sink.writer import SinkOptions, write_task

    make_topic("t", 3)
    batch = pa.record_batch({"value": [b"x", b"y"], "partition": pa.array([0, 2**32 + 1], pa.int64())})
    with pytest.raises(PartitionNotFoundError, match="4294967297"):
        write_task(SinkOptions(cluster_path, "t"), "batch:test", iter([batch]))
    assert stored_bytes(cluster_path) == 0


# -- issue 10, defect 13: a bad typed record is refused at produce(), the others are delivered ---

TYPED = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])


@pytest.mark.parametrize("bad", [
    {"id": "not a number"},
    {"id": 2**70},
    {"id": None, "name": "x"},
    {"name": "no id"},
    {"id": 1, "extra": 2},
    {"id": True},
    None,
    b"raw bytes",
])
def test_a_bad_typed_record_does_not_drop_the_good_ones(cluster_path, make_topic, bad):
    make_topic("typed", 1, schema=TYPED)
    reports = []
    with Producer({"cluster": cluster_path, "linger.ms": 60_000}) as producer:
        for i in range(3):
            producer.produce("typed", {"id": i, "name": f"n{i}"}, on_delivery=lambda e, m: reports.append((e, m)))
        with pytest.raises(InvalidRecordError, match="typed"):
            producer.produce("typed", bad, on_delivery=lambda e, m: reports.append((e, m)))
        for i in range(3, 5):
            producer.produce("typed", {"id": i}, on_delivery=lambda e, m: reports.append((e, m)))
        producer.flush()
    assert [e for e, _ in reports] == [None] * 5
    assert [m.offset() for _, m in reports] == [0, 1, 2, 3, 4]
    consumer = Consumer({"cluster": cluster_path})
    consumer.assign([TopicPartition("typed", 0, OFFSET_BEGINNING)])
    try:
        rows = consumer.poll_batch(timeout=1)
    finally:
        consumer.close()
    assert rows.column("id").to_pylist() == [0, 1, 2, 3, 4]
    assert rows.column("name").to_pylist() == ["n0", "n1", "n2", None, None]


# -- issue 10, defect 14: limits on names, counts and producer ids ----------------------------

def replica_dirs(cluster_path):
    logs = os.path.join(cluster_path, "logs")
    return sorted(d for d in os.listdir(logs) if os.path.isdir(os.path.join(logs, d)))


@pytest.mark.parametrize(("partitions", "replicas"), [
    (10**9, 1), (10_001, 1), (0, 1), (-2, 1), ("3", 1), (1, 10**9), (1, 2), (1, 0), (1, True),
])
def test_topic_counts_have_limits(admin, cluster_path, make_topic, partitions, replicas):
    make_topic("other")
    with pytest.raises(ConfigError, match=r"num_partitions must be an integer from 1 to 10000|"
                                          r"replication_factor .* needs that many online log dirs"):
        admin.create_topics([NewTopic("t", partitions, replicas)])["t"].result()
    assert admin.cluster.list_topics() == ["other"]
    assert replica_dirs(cluster_path) == ["other-0"]


def test_a_cluster_default_partition_count_has_a_limit(tmp_path):
    path = str(tmp_path / "c")
    with Admin({"cluster": path, "num.partitions": 10_001}) as admin:
        with pytest.raises(ConfigError, match="option 'num.partitions' must be an integer from 1 to 10000"):
            admin.create_topics([NewTopic("t")])["t"].result()
    assert os.listdir(tmp_path) == []  # no cluster, no staging dir left


def test_create_partitions_has_a_limit(admin, cluster_path, make_topic):
    make_topic("t", 2)
    for total in (10_001, 10**9):
        with pytest.raises(ConfigError, match=f"new partition count must be an integer from 1 to 10000, got {total}"):
            admin.create_partitions([NewPartitions("t", total)])["t"].result()
    assert admin.cluster.topic("t").num_partitions == 2
    assert replica_dirs(cluster_path) == ["t-0", "t-1"]


def test_topic_names_past_the_file_name_limit_are_refused(admin, cluster_path, make_topic):
    make_topic("other")
    for length in (211, 214, 249, 250):
        name = "t" * length
        with pytest.raises(ConfigError, match="illegal topic name.*1-210 characters"):
            admin.create_topics([NewTopic(name, 1)])[name].result()
    assert admin.cluster.list_topics() == ["other"]
    assert replica_dirs(cluster_path) == ["other-0"]


def test_the_longest_topic_name_works_end_to_end(admin, cluster_path):
    from kstream.log.cluster.cluster import MAX_PARTITIONS
    from kstream.log.storage import format as fmt

    name = "n" * 210
    for _ in range(2):  # created, produced to, read, deleted, and created again
        assert admin.create_topics([NewTopic(name, 2)])[name].result() is None  # confluent's shape
        info = admin.cluster.topic(name)
        with Producer({"cluster": cluster_path}) as producer:
            producer.produce(name, b"v", partition=1)
        consumer = Consumer({"cluster": cluster_path})
        consumer.assign([TopicPartition(name, 1, OFFSET_BEGINNING)])
        try:
            assert [m.value() for m in consumer.consume(5, timeout=1)] == [b"v"]
        finally:
            consumer.close()
        admin.delete_topics([name])[name].result()
        assert admin.cluster.list_topics() == []
        assert replica_dirs(cluster_path) == []
    # The names made from it for the highest partition number fit a 255-byte file name too.
    highest = MAX_PARTITIONS - 1
    deleted_dir = f"{fmt.replica_dir_name(name, highest)}.{info.topic_id}-delete"
    lock_file = os.path.basename(admin.cluster.lock_path(info, highest))
    assert len(deleted_dir) == 255 and len(lock_file) < 255


def test_transactional_producer_ids_grow_by_one(cluster_path, make_topic):
    make_topic("t")
    ids = []
    for i in range(3):
        with Producer({"cluster": cluster_path, "transactional.id": f"tx-{i}"}) as producer:
            producer.init_transactions()
            producer.begin_transaction()
            producer.produce("t", b"x")
            producer.commit_transaction()
            ids.append(producer._transactions.writer.producer_id)
    assert ids == [ids[0], ids[0] + 1, ids[0] + 2]
    assert ids[0] == (1 << 40) + 1  # above every idempotent producer id


def test_transactional_producer_ids_stop_at_the_i64_maximum(cluster_path, make_topic):
    from kstream.log.transactions.store import TransactionStore

    make_topic("t")
    cluster = Cluster.open(cluster_path)
    store = TransactionStore(cluster.metadata)
    store.ensure_schema()  # (made by the first write; this test writes the row itself)
    with cluster.metadata.transaction() as tx:
        tx.execute("INSERT INTO transactions VALUES ('last', ?, 0, 'Empty', '[]', 0)", ((1 << 63) - 1,))
    with pytest.raises(KStreamError, match="producer ids are used up"):
        store.init("one-too-many")
    with pytest.raises(KStreamError, match="unknown"):
        store.get("one-too-many")
    cluster.close()


def test_opening_the_metadata_never_opens_its_file_outside_sqlite(cluster_path, make_topic, monkeypatch):
    """Closing any descriptor of a file drops all of this process's POSIX locks on it, those of
    its other SQLite connections included; another process could then checkpoint the WAL under
    them (a "malformed" database). So a second connection must not read the file itself."""
    import builtins

    from kstream.log.cluster.metadata import Metadata
    from kstream.log.storage import format as fmt

    make_topic("t")
    first = Metadata(os.path.join(cluster_path, fmt.METADATA_DB))
    first.connection.execute("SELECT count(*) FROM topics").fetchone()
    real_open = builtins.open

    def guarded_open(file, *args, **kwargs):
        assert not str(file).endswith(fmt.METADATA_DB), "metadata.db opened outside SQLite"
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded_open)
    second = Metadata(os.path.join(cluster_path, fmt.METADATA_DB))
    assert second.connection.execute("SELECT count(*) FROM topics").fetchone() == (1,)
    second.close()
    first.close()

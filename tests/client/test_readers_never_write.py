"""Readers never write (issue 26, item 7).

A cluster is left with every kind of unfinished transaction: an Ongoing one past
its deadline (its producer died), one decided PrepareCommit whose producer died
before its markers, a Spark sink batch decided "Committing" whose driver died
before its markers, and a sink task write past its deadline that no decision
names. Every read path (Consumer, CLI consume/get-offsets/describe, Admin
describe/list, the console) then writes nothing at all, and sees what a writing
reader sees after the expiry actually ran. Past its deadline, nothing can be
decided any more, so the reader's view is never contradicted later.
"""

from __future__ import annotations

import os
import sqlite3
import time

import pytest
from click.testing import CliRunner

from helpers import consume_values, open_transaction
from kstream import Admin, Consumer, FencedError, NewTopic, Producer, TopicPartition
from kstream.errors import GroupNotFoundError
from kstream.log.cluster.cluster import Cluster
from kstream.log.transactions.isolation import READ_COMMITTED, Isolation
from kstream.log.transactions.sink import SinkStore, TaskWrites
from kstream.log.transactions.store import TransactionStore
from kstream.tools.cli.main import cli
from stuck_transactions import (
    COMMITTED_VIEW,
    SHORT,
    TIMEOUT_MS,
    snapshot,
    stuck_cluster,
    task_attempt,
    wait_past_deadline,
)


@pytest.fixture
def stuck(tmp_path):
    """A cluster (topic "txn", 2 partitions) whose unfinished transactions are all past their
    deadline, and no consumer group (so no offsets table); yields its path."""
    yield from stuck_cluster(tmp_path, with_group=False)


@pytest.fixture
def stuck_with_group(tmp_path):
    """The same with group "g" and its offsets (the group tables exist)."""
    yield from stuck_cluster(tmp_path, with_group=True)


def committed_view(path: str) -> list[list[bytes]]:
    return [consume_values(path, "txn", [p]) for p in (0, 1)]


def test_a_read_committed_consumer_sees_the_fixed_outcomes_and_writes_nothing(stuck):
    before = snapshot(stuck)
    assert committed_view(stuck) == COMMITTED_VIEW
    assert snapshot(stuck) == before
    assert not os.path.exists(os.path.join(stuck, "__consumer_offsets"))


def test_the_read_only_view_equals_the_view_after_the_expiry_ran(stuck):
    read_only = committed_view(stuck)
    with Producer({"cluster": stuck, **SHORT, "transactional.id": "passer-by", "linger.ms": 0}) as writer:
        writer.init_transactions()  # a writer passing by runs the expiry: markers, fencing
    cluster = Cluster.open(stuck)
    try:
        rows = cluster.metadata.connection.execute("SELECT COUNT(*) FROM open_transaction_partitions").fetchone()
    finally:
        cluster.close()
    assert rows == (0,)  # the expiry ended every one of them
    assert committed_view(stuck) == read_only == COMMITTED_VIEW


def test_the_lso_every_read_path_shows_is_the_one_the_reader_reads_to(stuck):
    cluster = Cluster.open(stuck)
    try:
        for partition in (0, 1):
            handle = cluster.partition("txn", partition)
            isolation = Isolation(READ_COMMITTED, TransactionStore.for_cluster(cluster), "txn", partition,
                                  handle.leader_dir)
            assert isolation.end_offset(handle.high_watermark()) == handle.high_watermark()
            handle.close()
    finally:
        cluster.close()
    with Admin({"cluster": stuck}) as admin:
        from kstream.admin import IsolationLevel, OffsetSpec

        latest = admin.list_offsets({TopicPartition("txn", p): OffsetSpec.latest() for p in (0, 1)},
                                    isolation_level=IsolationLevel.READ_COMMITTED)
        described = admin.describe_topic("txn")
        ends = {p.id: p.high_watermark for p in described.partitions}
        assert {tp.partition: f.result().offset for tp, f in latest.items()} == ends


READ_COMMANDS = [
    ("consume", "txn", "--from-beginning", "--timeout-ms", "300"),
    ("consume", "txn", "--partition", "1", "--offset", "earliest", "--timeout-ms", "300"),
    ("get-offsets", "--topic", "txn"),
    ("topics", "describe", "txn"),
    ("topics", "list"),
]
GROUP_COMMANDS = [
    ("groups", "list"),
    ("groups", "describe", "g"),
    ("groups", "describe", "--all-groups", "--state"),
]


@pytest.mark.parametrize("command", READ_COMMANDS, ids=" ".join)
def test_read_only_commands_write_nothing_on_unfinished_transactions(stuck, command):
    before = snapshot(stuck)
    result = CliRunner().invoke(cli, ["--cluster", stuck, *command], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert snapshot(stuck) == before
    assert not os.path.exists(os.path.join(stuck, "__consumer_offsets"))
    if command[0] == "consume":
        assert "expired" not in result.output and "sink-undecided" not in result.output
        assert "decided" in result.output and "sink-committing" in result.output


@pytest.mark.parametrize("command", GROUP_COMMANDS, ids=" ".join)
def test_group_commands_write_nothing_on_unfinished_transactions(stuck_with_group, command):
    # A cluster that has the group tables and the offsets table; one that never had a group:
    # test_read_only_commands_create_nothing_on_a_cluster_without_groups_or_transactions.
    before = snapshot(stuck_with_group)
    result = CliRunner().invoke(cli, ["--cluster", stuck_with_group, *command], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert snapshot(stuck_with_group) == before


def test_admin_describe_and_list_write_nothing(stuck):
    from kstream.admin import IsolationLevel, OffsetSpec

    before = snapshot(stuck)
    with Admin({"cluster": stuck}) as admin:
        admin.list_topics()
        admin.describe_topic("txn")
        for level in (IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED):
            for future in admin.list_offsets({TopicPartition("txn", p): OffsetSpec.latest() for p in (0, 1)},
                                             isolation_level=level).values():
                future.result()
    assert snapshot(stuck) == before


def test_the_read_only_console_writes_nothing_on_a_get(stuck):
    from fastapi.testclient import TestClient

    from kstream.tools.web.app import create_app
    from kstream.tools.web.clusters import ClusterRef, check_clusters

    before = snapshot(stuck)
    clusters = check_clusters([ClusterRef("main", stuck)])
    with TestClient(create_app(clusters, read_only=True)) as client:
        for page in ("/c/main/topics/txn", "/c/main/topics/txn/messages",
                     "/c/main/topics/txn/messages?partition=1&offset=0"):
            response = client.get(page)
            assert response.status_code == 200, page
            assert "expired" not in response.text and "sink-undecided" not in response.text
        assert "sink-committing" in client.get("/c/main/topics/txn/messages?partition=1&offset=0").text
    assert snapshot(stuck) == before
    # Item 4 (branch fix-groupsfix) makes read paths never create the Delta offsets table;
    # this item's part is that no expiry or roll-forward runs, which would also have made it.
    assert not os.path.exists(os.path.join(stuck, "__consumer_offsets"))


# -- past its deadline, nothing can be decided any more -----------------------------------------------


def test_a_transaction_a_reader_saw_as_aborted_can_never_commit(tmp_path):
    path = str(tmp_path / "c")
    with Admin({"cluster": path, "transaction.max.timeout.ms": TIMEOUT_MS}) as admin:
        admin.create_topics([NewTopic("t", 1)])["t"].result()
    opened = time.time() * 1000
    late = open_transaction(path, "late", "t", b"late", TIMEOUT_MS)
    wait_past_deadline(opened)
    before = snapshot(path)
    assert consume_values(path, "t", 1) == []  # reads as aborted ...
    assert snapshot(path) == before  # ... and nothing was written
    with pytest.raises(FencedError, match="transaction.timeout.ms"):
        late.commit_transaction()
    assert consume_values(path, "t", 1) == []
    late.close()


def test_a_sink_task_write_past_its_deadline_can_neither_append_nor_commit_before_any_expiry(tmp_path):
    path = str(tmp_path / "c")
    with Admin({"cluster": path, "transaction.max.timeout.ms": TIMEOUT_MS}) as admin:
        admin.create_topics([NewTopic("t", 2)])["t"].result()
    sink = "batch:job-1"
    task, writer = task_attempt(path, sink)
    opened = time.time() * 1000
    task.produce("t", b"slow", partition=0)
    task.flush()
    wait_past_deadline(opened)
    for partition in (0, 1):  # one it wrote, one it had not: both refused, nobody expired it
        with pytest.raises(FencedError, match="transaction.max.timeout.ms"):
            task.produce("t", b"more", partition=partition)
            task.flush()
    driver = Cluster.open(path)
    with pytest.raises(FencedError, match="cannot commit"):
        SinkStore(driver).commit(sink, 0, [TaskWrites(writer.producer_id, (("t", 0),), 1)])
    assert SinkStore(driver).batch_state(sink, 0) is None
    assert consume_values(path, "t", 2) == []
    driver.close()
    task.close()


def test_a_consumer_polling_through_an_expiry_sees_each_record_once(stuck):
    """The view before the expiry and after it join up: nothing shown twice, nothing lost."""
    consumer = Consumer({"cluster": stuck, "isolation.level": "read_committed", "enable.partition.eof": True})
    consumer.assign([TopicPartition("txn", 1, 0)])
    seen = []
    message = consumer.poll(1.0)
    while message is not None and message.error() is None:
        seen.append(message.value())
        if len(seen) == 1:
            with Producer({"cluster": stuck, **SHORT, "transactional.id": "passer-by", "linger.ms": 0}) as writer:
                writer.init_transactions()
        message = consumer.poll(1.0)
    consumer.close()
    assert seen == COMMITTED_VIEW[1]


def decided_etl(path: str) -> Producer:
    """A transaction carrying group "g"'s offset 2 for txn-0 (the table holds 1), decided to
    commit by a producer that "died" before its markers and Delta commit; the producer."""
    from kstream.groups.transactional_offsets import ConsumerGroupMetadata

    producer = Producer({"cluster": path, **SHORT, "transactional.id": "etl", "linger.ms": 0})
    producer.init_transactions()
    producer.begin_transaction()
    producer.produce("txn", b"etl-out", partition=0)
    producer.send_offsets_to_transaction([TopicPartition("txn", 0, 2)], ConsumerGroupMetadata("g"))
    store = TransactionStore.for_cluster(producer.cluster)
    store.prepare("etl", store.get("etl").epoch, commit=True)  # ... and "died" before its markers
    return producer


def etl_state(path: str) -> str:
    cluster = Cluster.open(path)
    try:
        return TransactionStore(cluster.metadata).get("etl").state
    finally:
        cluster.close()


def test_groups_describe_writes_nothing_on_a_decided_commit_carrying_the_groups_offsets(stuck_with_group):
    from kstream.admin import AdminClient, ConsumerGroupTopicPartitions
    from kstream.groups import ConsumerGroups

    producer = decided_etl(stuck_with_group)
    before = snapshot(stuck_with_group)
    try:
        result = CliRunner().invoke(cli, ["--cluster", stuck_with_group, "groups", "describe", "g", "--json"],
                                    catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert '"committed": 2' in result.output, result.output
        groups = ConsumerGroups(Cluster.open(stuck_with_group))
        try:  # the decided offsets laid over the table, on every read path
            assert groups.committed("g")[("txn", 0)].offset == 2
            assert groups.committed("g", require_stable=False)[("txn", 0)].offset == 2
            assert [(p.partition, p.committed) for p in groups.lag("g")] == [(0, 2)]
            assert groups.describe("g").partitions[0].committed == 2
        finally:
            groups.close()
            groups.cluster.close()
        with AdminClient({"cluster": stuck_with_group}) as client:
            listed = client.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g")])["g"].result()
            assert [(tp.partition, tp.offset) for tp in listed.topic_partitions] == [(0, 2)]
        with Consumer({"cluster": stuck_with_group, "group.id": "g"}) as consumer:
            assert consumer.committed([TopicPartition("txn", 0)])[0].offset == 2
        assert snapshot(stuck_with_group) == before
        assert etl_state(stuck_with_group) == "PrepareCommit"
    finally:
        producer.close()


def test_a_joining_member_starts_at_a_decided_commits_offsets_and_its_commit_rolls_it_forward(stuck_with_group):
    """Joining writes the member's rows, but its read of the starting offsets is a read: it
    sees the decided offsets without finishing the transaction. Its own commit (a write of the
    group's offsets) finishes the transaction first, so the transaction's offsets never land
    over the member's later commit, whoever finishes it after."""
    producer = decided_etl(stuck_with_group)
    consumer = Consumer({"cluster": stuck_with_group, "group.id": "g", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    try:
        positions: dict[int, int] = {}
        consumer.subscribe(["txn"], on_assign=lambda c, tps: positions.update(
            (tp.partition, tp.offset) for tp in c.position(tps)))
        limit = time.monotonic() + 10
        while not positions:
            assert time.monotonic() < limit, "never assigned"
            consumer.poll(0.05)
        assert positions[0] == 2  # not the table's 1: the decided commit's offset
        assert etl_state(stuck_with_group) == "PrepareCommit"  # ... and it was not finished
        consumer.commit(offsets=[TopicPartition("txn", 0, 3)], asynchronous=False)
        assert etl_state(stuck_with_group) == "CompleteCommit"  # finished before the commit
        with Producer({"cluster": stuck_with_group, **SHORT, "transactional.id": "passer-by",
                       "linger.ms": 0}) as writer:
            writer.init_transactions()  # the expiry passes by: nothing left to apply
        assert consumer.committed([TopicPartition("txn", 0)])[0].offset == 3
    finally:
        consumer.close()
        producer.close()


def test_the_python_spark_readers_planner_and_splits_see_the_fixed_outcomes_and_write_nothing(stuck):
    """The Spark source's code path without Spark (tests/spark/test_read_only_readers.py runs it
    in Spark): the driver's bounds and each split's read_range, with one read-only Isolation."""
    import pyarrow as pa

    from kstream.source.partition_reader import read_range
    from kstream.source.planning import PartitionRange, bounds

    schema = pa.schema([("value", pa.binary()), ("offset", pa.int64())])
    before = snapshot(stuck)
    cluster = Cluster.open(stuck)
    try:
        planned = [bounds(cluster, "txn", p, "read_committed") for p in (0, 1)]
    finally:
        cluster.close()
    seen = []
    for partition, (start, end) in enumerate(planned):
        split = PartitionRange(stuck, "txn", partition, start, end, True, "read_committed")
        seen.append([v for batch in read_range(split, schema) for v in batch.column("value").to_pylist()])
    assert seen == COMMITTED_VIEW
    assert snapshot(stuck) == before


def test_an_expired_transaction_is_not_read_as_aborted_while_a_decision_taken_in_time_is_in_flight(tmp_path):
    """The producer's decision checked its deadline in time but has not committed yet (its
    SQLite write transaction is still open, say the process is stopped): a reader past the
    deadline must not read the transaction as aborted, or it would skip records that the
    decision then commits. It waits (the LSO held) and reads them once the decision lands."""
    path = str(tmp_path / "c")
    with Admin({"cluster": path, "transaction.max.timeout.ms": TIMEOUT_MS}) as admin:
        admin.create_topics([NewTopic("t", 1)])["t"].result()
    opened = time.time() * 1000
    slow = open_transaction(path, "slow", "t", b"slow", TIMEOUT_MS)
    with Producer({"cluster": path, "linger.ms": 0}) as plain:
        plain.produce("t", b"later", partition=0)
    consumer = Consumer({"cluster": path, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition("t", 0, 0)])
    assert consumer.poll(0.2) is None  # held by the open transaction
    deciding = sqlite3.connect(os.path.join(path, "metadata.db"), isolation_level=None)
    deciding.execute("BEGIN IMMEDIATE")  # prepare(): the deadline checked in time ...
    deciding.execute("UPDATE transactions SET state = 'PrepareCommit' WHERE transactional_id = 'slow'")
    try:
        wait_past_deadline(opened)
        seen = [m.value() for m in (consumer.poll(0.3) for _ in range(3)) if m is not None]
        assert seen == []  # ... and not committed yet: neither "later" alone nor anything else
    finally:
        deciding.execute("COMMIT")  # ... lands after the deadline
        deciding.close()
    seen = []
    limit = time.monotonic() + 10
    while len(seen) < 2 and time.monotonic() < limit:
        message = consumer.poll(0.2)
        if message is not None:
            seen.append(message.value())
    consumer.close()
    assert seen == [b"slow", b"later"]
    slow.close()


def _cluster_reads(client) -> None:
    """The AdminClient's describe and list calls that do not name a group."""
    from kstream.admin import ConfigResource, TopicCollection

    client.list_topics()
    client.list_groups()
    client.describe_cluster().result()
    for future in client.describe_topics(TopicCollection(["txn"])).values():
        future.result()
    for future in client.describe_configs([ConfigResource("topic", "txn")]).values():
        future.result()
    client.list_consumer_groups().result()


def test_the_admin_clients_describe_and_list_calls_write_nothing(stuck_with_group):
    from kstream.admin import AdminClient, ConsumerGroupTopicPartitions

    before = snapshot(stuck_with_group)
    with AdminClient({"cluster": stuck_with_group}) as client:
        _cluster_reads(client)
        client.describe_consumer_groups(["g"])["g"].result()
        for future in client.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g")]).values():
            future.result()
        client.describe_log_dirs()
    assert snapshot(stuck_with_group) == before


# -- a cluster that never had a group or a transaction: readers create no table -----------------------


@pytest.fixture
def fresh(tmp_path):
    """Topic "txn" (2 partitions) with plain records, and nothing else: no transaction ever
    ran and no group ever existed, so neither their tables nor the offsets table exist."""
    path = str(tmp_path / "c")
    with Admin({"cluster": path}) as admin:
        admin.create_topics([NewTopic("txn", 2)])["txn"].result()
    with Producer({"cluster": path, "linger.ms": 0, "enable.idempotence": False}) as plain:
        for partition in (0, 1):
            plain.produce("txn", b"plain-%d" % partition, partition=partition)
    assert consume_values(path, "txn", 2, "read_uncommitted")  # (any first open's derived files: made now)
    return path


def metadata_tables(path: str) -> set[str]:
    connection = sqlite3.connect(f"file:{os.path.join(path, 'metadata.db')}?mode=ro", uri=True)
    try:
        return {r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        connection.close()


GROUP_AND_TXN_TABLES = {"consumer_groups", "group_members", "transactions", "open_transaction_partitions",
                        "transaction_offsets", "sink_batches"}


def test_the_fixture_has_no_group_or_transaction_table(fresh):
    assert not metadata_tables(fresh) & GROUP_AND_TXN_TABLES


@pytest.mark.parametrize("command", READ_COMMANDS + GROUP_COMMANDS, ids=" ".join)
def test_read_only_commands_create_nothing_on_a_cluster_without_groups_or_transactions(fresh, command):
    before = snapshot(fresh)
    result = CliRunner().invoke(cli, ["--cluster", fresh, *command], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output  # `groups describe g`: no such group (exit 1)
    assert snapshot(fresh) == before
    assert not os.path.exists(os.path.join(fresh, "__consumer_offsets"))


def test_clients_create_nothing_on_a_cluster_without_groups_or_transactions(fresh):
    from kstream.admin import (
        AdminClient,
        ConsumerGroupTopicPartitions,
        IsolationLevel,
        OffsetSpec,
    )
    from kstream.groups import ConsumerGroups
    from kstream.source.planning import bounds

    before = snapshot(fresh)
    for level in ("read_committed", "read_uncommitted"):
        assert [consume_values(fresh, "txn", [p], level) for p in (0, 1)] == [[b"plain-0"], [b"plain-1"]]
    with Consumer({"cluster": fresh, "group.id": "g", "isolation.level": "read_committed",
                   "auto.offset.reset": "earliest", "enable.auto.commit": False}) as consumer:
        assert consumer.committed([TopicPartition("txn", 0)])[0].offset < 0
        consumer.assign([TopicPartition("txn", 1)])  # OFFSET_INVALID: the group's offset, none
        assert consumer.poll(1.0).value() == b"plain-1"
    with AdminClient({"cluster": fresh}) as client:
        _cluster_reads(client)
        with pytest.raises(GroupNotFoundError):  # no such group: said, not made
            client.describe_consumer_groups(["g"])["g"].result()
        client.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g")])["g"].result()
        for level in (IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED):
            for future in client.list_offsets({TopicPartition("txn", p): OffsetSpec.latest() for p in (0, 1)},
                                              isolation_level=level).values():
                future.result()
        client.describe_log_dirs()
    groups = ConsumerGroups(Cluster.open(fresh))
    try:
        assert groups.list_groups() == [] and groups.committed("g") == {} and groups.lag("g") == []
        assert groups.describe("g").state == "Dead"
        assert [bounds(groups.cluster, "txn", p, "read_committed") for p in (0, 1)] == [(0, 1), (0, 1)]
    finally:
        groups.close()
        groups.cluster.close()
    assert snapshot(fresh) == before
    assert not metadata_tables(fresh) & GROUP_AND_TXN_TABLES


def test_the_read_only_console_creates_nothing_on_a_cluster_without_groups_or_transactions(fresh):
    from fastapi.testclient import TestClient

    from kstream.tools.web.app import create_app
    from kstream.tools.web.clusters import ClusterRef, check_clusters

    before = snapshot(fresh)
    clusters = check_clusters([ClusterRef("main", fresh)])
    with TestClient(create_app(clusters, read_only=True)) as client:
        for page in ("/c/main/topics/txn", "/c/main/topics/txn/messages", "/c/main/groups"):
            assert client.get(page).status_code == 200, page
    assert snapshot(fresh) == before


def test_writers_still_create_the_tables_they_need(fresh):
    """The first transactional producer and the first group member make their tables (two at
    once: each waits for the other's creation, neither fails)."""
    import threading

    errors: list[BaseException] = []

    def transactional(n: int) -> None:
        try:
            with Producer({"cluster": fresh, "transactional.id": f"t{n}", "linger.ms": 0}) as producer:
                producer.init_transactions()
                producer.begin_transaction()
                producer.produce("txn", b"in-txn", partition=0)
                producer.commit_transaction()
        except BaseException as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=transactional, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with Consumer({"cluster": fresh, "group.id": "g", "enable.auto.commit": False,
                   "auto.offset.reset": "earliest"}) as member:
        member.subscribe(["txn"])
        message = member.poll(10.0)
        assert message is not None and message.error() is None
        member.commit(message=message, asynchronous=False)
    assert GROUP_AND_TXN_TABLES <= metadata_tables(fresh)
    assert consume_values(fresh, "txn", [0]) == [b"plain-0", b"in-txn", b"in-txn"]


def test_a_cluster_with_only_some_tables_reads_the_missing_ones_as_empty(fresh):
    """A cluster made by an older kstream has the tables of its day only: readers read the
    missing ones as empty and make none; the next writer makes them."""
    connection = sqlite3.connect(os.path.join(fresh, "metadata.db"), isolation_level=None)
    try:
        connection.execute("CREATE TABLE transactions (transactional_id TEXT PRIMARY KEY, producer_id INTEGER "
                           "NOT NULL, epoch INTEGER NOT NULL, state TEXT NOT NULL, partitions TEXT NOT NULL, "
                           "updated_ms INTEGER NOT NULL)")
        connection.execute("CREATE TABLE consumer_groups (group_id TEXT PRIMARY KEY)")  # (no group_members)
    finally:
        connection.close()
    before = snapshot(fresh)
    assert [consume_values(fresh, "txn", [p]) for p in (0, 1)] == [[b"plain-0"], [b"plain-1"]]
    for command in READ_COMMANDS + GROUP_COMMANDS:
        result = CliRunner().invoke(cli, ["--cluster", fresh, *command], catch_exceptions=False)
        assert result.exit_code in (0, 1), result.output
    assert snapshot(fresh) == before
    with Producer({"cluster": fresh, "transactional.id": "new", "linger.ms": 0}) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.produce("txn", b"in-txn", partition=1)
        producer.commit_transaction()
    assert {"transaction_offsets", "sink_batches", "open_transaction_partitions"} <= metadata_tables(fresh)
    assert consume_values(fresh, "txn", [1]) == [b"plain-1", b"in-txn"]

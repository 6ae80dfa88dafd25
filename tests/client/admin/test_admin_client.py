"""AdminClient, confluent-kafka's admin API on an embedded cluster: every call, its result
shapes, errors arriving through futures, request errors raised at once, and reads that
create nothing."""

from __future__ import annotations

import os
from concurrent.futures import Future

import pytest

from kstream import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ElectionType,
    IsolationLevel,
    Producer,
    TopicCollection,
    TopicPartition,
)
from kstream.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Admin,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    NotSupportedError,
    OffsetSpec,
    ResourcePatternType,
    ResourceType,
    cluster_metadata,
)
from kstream.errors import (
    ClusterNotFoundError,
    ConfigError,
    GroupBusyError,
    GroupNotFoundError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    OffsetOutOfRangeError,
    TopicExistsError,
    TopicNotFoundError,
)
from kstream.groups import ConsumerGroups


@pytest.fixture
def client(cluster_path):
    """An AdminClient on a cluster with two log dirs (created by the first create_topics)."""
    with AdminClient({"cluster": cluster_path, "log.dirs": "d0,d1"}) as admin:
        yield admin


def create(client, *topics, **kwargs):
    for name, future in client.create_topics(list(topics), **kwargs).items():
        assert future.result() is None, name


def log_dirs(client):
    return sorted(client.cluster.log_dir_paths())


def tree(path):
    """Every file and directory under ``path`` with its size (what a read must not change)."""
    found = {}
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            full = os.path.join(root, name)
            found[os.path.relpath(full, path)] = os.path.getsize(full) if name in files else None
    return found


def produce(cluster_path, topic, values, partition=0, timestamps=None):
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for i, value in enumerate(values):
            producer.produce(topic, value, partition=partition,
                             timestamp=timestamps[i] if timestamps else 0)
            producer.flush()  # one batch per record: several frames (and segments, when small)


# -- topics ------------------------------------------------------------------------------------

def test_create_topics_resolves_to_none_and_list_topics_shows_them(client):
    create(client, NewTopic("a", 3, 2), NewTopic("b", config={"retention.ms": "1000"}))
    md = client.list_topics()
    assert sorted(md.topics) == ["a", "b"]
    d0, d1 = log_dirs(client)
    assert sorted(md.brokers) == [d0, d1] and md.brokers[d1].host.endswith("d1")
    assert md.cluster_id == client.cluster.cluster_id and md.controller_id == -1
    partitions = md.topics["a"].partitions
    assert sorted(partitions) == [0, 1, 2]
    for p in partitions.values():
        assert p.error is None and p.leader == p.replicas[0] and sorted(p.isrs) == [d0, d1]
    assert {p.leader for p in partitions.values()} == {d0, d1}  # leaders spread over the log dirs
    assert md.topics["b"].error is None and len(md.topics["b"].partitions) == 1


def test_list_topics_of_an_unknown_topic_reports_it_and_creates_nothing(client, cluster_path):
    create(client, NewTopic("a", 1, 1))
    before = tree(cluster_path)
    md = client.list_topics("nope", timeout=1)
    assert list(md.topics) == ["nope"]
    assert md.topics["nope"].error.code() == 3 and md.topics["nope"].partitions == {}  # UNKNOWN_TOPIC_OR_PART
    assert client.cluster.list_topics() == ["a"]
    assert tree(cluster_path) == before


def test_an_offline_partition_has_no_leader_and_an_error(client):
    create(client, NewTopic("t", 2, 1))
    offline = client.cluster.topic("t").partitions[0].leader
    client.take_log_dir_offline(offline)
    md = cluster_metadata(client.cluster, "t")
    by_leader = {p.id: p for p in md.topics["t"].partitions.values()}
    assert by_leader[0].leader == -1 and by_leader[0].error.code() == 5  # LEADER_NOT_AVAILABLE
    assert by_leader[1].error is None and by_leader[1].leader != offline


def test_create_topics_errors_arrive_through_the_futures(client):
    create(client, NewTopic("a", 1, 1))
    fs = client.create_topics([NewTopic("a", 1, 1), NewTopic("bad/name", 1, 1), NewTopic("c", 1, 3),
                               NewTopic("d", 0), NewTopic("ok", 1, 1)])
    assert all(isinstance(f, Future) and f.done() for f in fs.values())
    with pytest.raises(TopicExistsError):
        fs["a"].result()
    with pytest.raises(ConfigError, match="illegal topic name"):
        fs["bad/name"].result()
    with pytest.raises(InvalidReplicationFactorError):
        fs["c"].result()
    with pytest.raises(InvalidPartitionsError):
        fs["d"].result()
    assert fs["ok"].result() is None
    assert client.cluster.list_topics() == ["a", "ok"]


def test_create_topics_validate_only_writes_nothing(client, cluster_path):
    create(client, NewTopic("a", 1, 1))
    before = tree(cluster_path)
    fs = client.create_topics([NewTopic("b", 2, 2), NewTopic("a", 1, 1), NewTopic("c", 1, 9)],
                              validate_only=True, operation_timeout=5, request_timeout=1.5)
    assert fs["b"].result() is None
    with pytest.raises(TopicExistsError):
        fs["a"].result()
    with pytest.raises(InvalidReplicationFactorError):
        fs["c"].result()
    assert client.cluster.list_topics() == ["a"] and tree(cluster_path) == before


def test_create_topics_validate_only_creates_no_cluster(tmp_path):
    path = str(tmp_path / "none")
    with AdminClient({"cluster": path}) as client:
        assert client.create_topics([NewTopic("x", 1)], validate_only=True)["x"].result() is None
    assert not os.path.exists(path)


def test_replica_assignment_places_replicas(client):
    create(client, NewTopic("first", 1, 1))
    d0, d1 = log_dirs(client)
    create(client, NewTopic("a", replica_assignment=[[d1, d0], [d1, d0]]))
    assert [p.replicas for p in client.cluster.topic("a").partitions] == [(d1, d0), (d1, d0)]
    fs = client.create_topics([NewTopic("b", replica_assignment=[[d0, 7]])])
    with pytest.raises(InvalidReplicationFactorError):
        fs["b"].result()
    create(client, NewTopic("c", 1, 1))
    client.create_partitions([NewPartitions("c", 2, replica_assignment=[[d1]])])["c"].result()
    assert client.cluster.topic("c").partitions[1].replicas == (d1,)


def test_new_topic_keeps_kstreams_older_positional_config(client):
    import pyarrow as pa

    schema = pa.schema([("id", pa.int64())])
    create(client, NewTopic("a", 1, 1, {"retention.ms": "1000"}), NewTopic("b", 1, 1, {}, schema))
    assert dict(client.cluster.topic("a").config) == {"retention.ms": "1000"}
    assert client.describe_topic("b").schema == schema
    with pytest.raises(TypeError):
        NewTopic("c", 1, 1, {"retention.ms": "1"}, {"retention.ms": "2"})


def test_request_errors_raise_at_once(client):
    with pytest.raises(TypeError):
        AdminClient()  # confluent's AdminClient needs a config
    for bad in (None, "t", ["t"], [None, NewTopic("t")]):
        with pytest.raises((TypeError, ValueError)):
            client.create_topics(bad)
    with pytest.raises(TypeError):
        client.create_topics([NewTopic("t", 1)], validate_only="maybe")
    with pytest.raises(ValueError):
        client.create_topics([NewTopic("t", 1)], request_timeout=-5)
    with pytest.raises(TypeError):
        client.create_topics([NewTopic("t", 1)], unknown_operation="it is")
    with pytest.raises(TypeError):
        NewTopic("t", 1, config=["not", "a", "dict"])
    with pytest.raises(ValueError):
        client.delete_topics([])
    with pytest.raises(ValueError):
        client.delete_topics([None, "t"])
    with pytest.raises(TypeError):
        client.create_partitions(None)
    assert not os.path.exists(client._path)  # none of it created the cluster


def test_delete_topics_and_create_partitions(client):
    create(client, NewTopic("a", 1, 1), NewTopic("b", 2, 1))
    fs = client.delete_topics(["a", "nope"], operation_timeout=30)
    assert fs["a"].result() is None
    with pytest.raises(TopicNotFoundError):
        fs["nope"].result()
    fs = client.create_partitions([NewPartitions("b", 4), NewPartitions("b2", 3)])
    assert fs["b"].result() is None
    with pytest.raises(TopicNotFoundError):
        fs["b2"].result()
    assert client.cluster.topic("b").num_partitions == 4
    with pytest.raises(InvalidPartitionsError):
        client.create_partitions([NewPartitions("b", 3)])["b"].result()
    assert client.create_partitions([NewPartitions("b", 9)], validate_only=True)["b"].result() is None
    assert client.cluster.list_topics() == ["b"] and client.cluster.topic("b").num_partitions == 4


def test_describe_topics(client):
    create(client, NewTopic("a", 2, 2))
    with pytest.raises(TypeError):
        client.describe_topics(["a"])
    with pytest.raises(ValueError):
        client.describe_topics(TopicCollection(["a", ""]))
    with pytest.raises(TypeError):
        client.describe_topics(TopicCollection([3]))
    with pytest.raises(TypeError):
        client.describe_topics(TopicCollection([]), include_authorized_operations="yes")
    assert client.describe_topics(TopicCollection([])) == {}
    fs = client.describe_topics(TopicCollection(["a", "nope"]), request_timeout=10)
    description = fs["a"].result()
    assert description.name == "a" and description.topic_id == client.cluster.topic("a").topic_id
    assert not description.is_internal and [p.id for p in description.partitions] == [0, 1]
    first = description.partitions[0]
    assert first.leader.id == first.replicas[0].id and sorted(n.id for n in first.isr) == log_dirs(client)
    with pytest.raises(TopicNotFoundError):
        fs["nope"].result()


def test_describe_cluster(client):
    create(client, NewTopic("a", 1, 1))
    result = client.describe_cluster(include_authorized_operations=True).result()
    assert result.cluster_id == client.cluster.cluster_id and result.controller is None
    assert [n.id for n in result.nodes] == log_dirs(client)
    with pytest.raises(TypeError):
        client.describe_cluster(unknown_operation="it is")


def test_authorized_operations_are_every_supported_operation_when_asked_as_kafka_without_an_authorizer(
        with_groups):
    # confluent's adminapi.py iterates authorized_operations after describe_* with
    # include_authorized_operations=True; Kafka with no authorizer lists every operation the
    # resource type supports, in enum order (librdkafka's); not asked for, it stays None.
    client = with_groups
    op = AclOperation
    topic = client.describe_topics(TopicCollection(["t"]), include_authorized_operations=True)["t"].result()
    assert topic.authorized_operations == [op.READ, op.WRITE, op.CREATE, op.DELETE, op.ALTER, op.DESCRIBE,
                                           op.DESCRIBE_CONFIGS, op.ALTER_CONFIGS]
    group = client.describe_consumer_groups(["committed"], include_authorized_operations=True)["committed"]
    assert group.result().authorized_operations == [op.READ, op.DELETE, op.DESCRIBE]
    cluster = client.describe_cluster(include_authorized_operations=True).result()
    assert cluster.authorized_operations == [op.CREATE, op.ALTER, op.DESCRIBE, op.CLUSTER_ACTION,
                                             op.DESCRIBE_CONFIGS, op.ALTER_CONFIGS, op.IDEMPOTENT_WRITE]
    assert client.describe_topics(TopicCollection(["t"]))["t"].result().authorized_operations is None
    assert client.describe_consumer_groups(["committed"])["committed"].result().authorized_operations is None
    assert client.describe_cluster().result().authorized_operations is None
    # each result has its own list
    again = client.describe_topics(TopicCollection(["t"]), include_authorized_operations=True)["t"].result()
    again.authorized_operations.clear()
    assert len(client.describe_topics(TopicCollection(["t"]), include_authorized_operations=True)["t"]
               .result().authorized_operations) == 8


def test_calls_on_a_missing_cluster_fail_through_futures_and_create_nothing(tmp_path):
    path = str(tmp_path / "missing")
    with AdminClient({"cluster": path}) as client:
        with pytest.raises(ClusterNotFoundError):
            client.list_topics()
        for future in (client.delete_topics(["t"])["t"], client.describe_cluster(),
                       client.describe_configs([ConfigResource("topic", "t")])[ConfigResource("topic", "t")],
                       client.list_consumer_groups()):
            with pytest.raises(ClusterNotFoundError):
                future.result()
    assert not os.path.exists(path)


# -- configs -----------------------------------------------------------------------------------

def test_config_resource_types():
    assert ConfigResource("broker", "2").restype is ResourceType.BROKER
    assert ConfigResource(ResourceType.TOPIC, "").name == ""
    with pytest.raises(ValueError):
        ConfigResource("doesnt exist", "hi")
    with pytest.raises(ValueError):
        ConfigResource(ResourceType.TOPIC, None)
    assert ConfigResource("topic", "a") == ConfigResource(ResourceType.TOPIC, "a")


def test_describe_configs_of_a_topic_and_the_broker(cluster_path):
    with AdminClient({"cluster": cluster_path, "log.retention.ms": "5000"}) as client:
        create(client, NewTopic("a", 1, 1, config={"segment.bytes": "4096"}))
        topic, broker = ConfigResource("topic", "a"), ConfigResource(ResourceType.BROKER, str(log_dirs(client)[0]))
        fs = client.describe_configs([topic, broker, ConfigResource("topic", "nope")])
        entries = fs[topic].result()
        assert entries["segment.bytes"].value == "4096"
        assert entries["segment.bytes"].source is ConfigSource.DYNAMIC_TOPIC_CONFIG
        assert not entries["segment.bytes"].is_default
        assert entries["retention.ms"].value == "5000"  # from the cluster, set at creation
        assert entries["retention.ms"].source is ConfigSource.STATIC_BROKER_CONFIG
        assert "log.retention.ms" in entries["retention.ms"].synonyms
        assert entries["min.insync.replicas"].is_default
        broker_entries = fs[broker].result()
        assert broker_entries["log.retention.ms"].value == "5000" and broker_entries["log.retention.ms"].is_read_only
        with pytest.raises(TopicNotFoundError):
            fs[ConfigResource("topic", "nope")].result()
        with pytest.raises(ConfigError):
            client.describe_configs([ConfigResource("broker", "7")])[ConfigResource("broker", "7")].result()
        with pytest.raises(NotSupportedError):
            client.describe_configs([ConfigResource("group", "g")])[ConfigResource("group", "g")].result()
        for bad in (None, "something", [], [None, topic]):
            with pytest.raises((TypeError, ValueError)):
                client.describe_configs(bad)


def test_alter_configs_replaces_the_overrides(client):
    create(client, NewTopic("a", 1, 1, config={"segment.bytes": "4096", "retention.ms": "1000"}))
    resource = ConfigResource("topic", "a", set_config={"retention.ms": "2000"})
    assert client.alter_configs([resource])[resource].result() is None
    assert dict(client.cluster.topic("a").config) == {"retention.ms": "2000"}
    bad = ConfigResource("topic", "a", set_config={"set": "this"})
    with pytest.raises(ConfigError, match="unknown option 'set'"):
        client.alter_configs([bad])[bad].result()
    broker = ConfigResource("broker", str(log_dirs(client)[0]), set_config={"num.partitions": "3"})
    with pytest.raises(ConfigError, match="fixed when the cluster is created"):
        client.alter_configs([broker])[broker].result()
    only_checked = ConfigResource("topic", "a", set_config={"retention.ms": "7"})
    assert client.alter_configs([only_checked], validate_only=True)[only_checked].result() is None
    assert dict(client.cluster.topic("a").config) == {"retention.ms": "2000"}
    with pytest.raises(ValueError):
        client.alter_configs([])


def test_cleanup_policy_is_a_list_for_append_and_subtract(client):
    # Kafka types cleanup.policy as a LIST: confluent's adminapi.py documents
    # "cleanup.policy=APPEND:compact"
    create(client, NewTopic("a", 1, 1))

    def incremental(operation, value):
        resource = ConfigResource("topic", "a", incremental_configs=[
            ConfigEntry("cleanup.policy", value, incremental_operation=operation)])
        return client.incremental_alter_configs([resource])[resource]

    def config():
        return client.cluster.log_config(client.cluster.topic("a"))

    def policy():
        return config().cleanup_policy

    assert incremental(AlterConfigOpType.SUBTRACT, "compact").result() is None  # from the default
    assert dict(client.cluster.topic("a").config) == {"cleanup.policy": "delete"}
    assert incremental(AlterConfigOpType.APPEND, "delete").result() is None
    assert dict(client.cluster.topic("a").config) == {"cleanup.policy": "delete"}
    assert incremental(AlterConfigOpType.APPEND, "compact").result() is None
    assert policy() == "compact,delete"
    assert incremental(AlterConfigOpType.SUBTRACT, "delete").result() is None
    assert policy() == "compact"
    with pytest.raises(ConfigError, match="allowed: compact, delete"):
        incremental(AlterConfigOpType.APPEND, "shred").result()
    assert incremental(AlterConfigOpType.SUBTRACT, "compact").result() is None
    assert policy() == "delete"  # nothing left: the override goes, the default is back
    replaced = ConfigResource("topic", "a", set_config={"cleanup.policy": "delete,compact",
                                                        "min.cleanable.dirty.ratio": "0.1"})
    assert client.alter_configs([replaced])[replaced].result() is None
    assert (policy(), config().min_cleanable_dirty_ratio) == ("compact,delete", 0.1)
    bad = ConfigResource("topic", "a", set_config={"min.cleanable.dirty.ratio": "2"})
    with pytest.raises(ConfigError, match="above the maximum 1"):
        client.alter_configs([bad])[bad].result()
    assert config().min_cleanable_dirty_ratio == 0.1


def test_create_topics_takes_compaction_configs_and_refuses_bad_ones(client):
    create(client, NewTopic("c", 1, 1, config={"cleanup.policy": "compact", "delete.retention.ms": "5",
                                               "min.compaction.lag.ms": "7"}))
    config = client.cluster.log_config(client.cluster.topic("c"))
    assert (config.cleanup_policy, config.delete_retention_ms, config.min_compaction_lag_ms) == (
        "compact", 5, 7)
    with pytest.raises(ConfigError, match="'max.compaction.lag.ms': 0 is below the minimum 1"):
        create(client, NewTopic("d", 1, 1, config={"cleanup.policy": "compact",
                                                   "max.compaction.lag.ms": "0"}))
    assert "d" not in client.list_topics().topics


def test_incremental_alter_configs(client):
    create(client, NewTopic("a", 1, 1, config={"segment.bytes": "4096", "retention.ms": "1000"}))
    resource = ConfigResource("topic", "a", incremental_configs=[
        ConfigEntry("retention.ms", "3000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("segment.bytes", None, incremental_operation=AlterConfigOpType.DELETE)])
    assert client.incremental_alter_configs([resource])[resource].result() is None
    assert dict(client.cluster.topic("a").config) == {"retention.ms": "3000"}
    appended = ConfigResource("topic", "a")
    appended.add_incremental_config(ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.APPEND))
    with pytest.raises(ConfigError, match="list-valued"):
        client.incremental_alter_configs([appended])[appended].result()
    twice = ConfigResource("topic", "a", incremental_configs=[
        ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
    with pytest.raises(ConfigError, match="duplicate"):
        client.incremental_alter_configs([twice])[twice].result()
    assert dict(client.cluster.topic("a").config) == {"retention.ms": "3000"}
    for entries, error in (([ConfigEntry("x", "1", incremental_operation="NEW")], TypeError),
                           ([ConfigEntry(None, "1", incremental_operation=AlterConfigOpType.SET)], TypeError),
                           ([], ValueError), ("something", TypeError)):
        with pytest.raises(error):
            client.incremental_alter_configs([ConfigResource("topic", "a", incremental_configs=entries)])


# -- consumer groups ---------------------------------------------------------------------------

@pytest.fixture
def with_groups(client, cluster_path):
    """Topic t (2 partitions, 5 records in p0); group "committed" has offsets, no members."""
    create(client, NewTopic("t", 2, 1))
    produce(cluster_path, "t", [b"%d" % i for i in range(5)])
    service = ConsumerGroups(client.cluster)
    service.commit("committed", {("t", 0): 3})
    service.close()
    return client


def test_list_and_describe_consumer_groups(with_groups, cluster_path):
    client = with_groups
    listed = client.list_consumer_groups(request_timeout=10).result()
    assert [(g.group_id, g.state, g.is_simple_consumer_group) for g in listed.valid] == [
        ("committed", ConsumerGroupState.EMPTY, True)]
    assert client.list_consumer_groups(states={ConsumerGroupState.STABLE}).result().valid == []
    with pytest.raises(TypeError):
        client.list_consumer_groups(states=[ConsumerGroupState.EMPTY])
    with pytest.raises(TypeError):
        client.list_consumer_groups(states={"EMPTY"})
    fs = client.describe_consumer_groups(["committed", "nope"])
    description = fs["committed"].result()
    assert description.group_id == "committed" and description.members == []
    assert description.state is ConsumerGroupState.EMPTY
    with pytest.raises(GroupNotFoundError):
        fs["nope"].result()
    with pytest.raises(TypeError):
        client.describe_consumer_groups("committed")
    with pytest.raises(ValueError):
        client.describe_consumer_groups([])
    assert [g.id for g in client.list_groups()] == ["committed"]


def test_describe_a_group_with_a_live_member_and_refuse_to_delete_it(with_groups, cluster_path):
    from kstream import Consumer

    client = with_groups
    consumer = Consumer({"cluster": cluster_path, "group.id": "live", "client.id": "me"})
    try:
        consumer.subscribe(["t"])
        for _ in range(50):
            consumer.poll(0.1)
            if consumer.assignment():
                break
        description = client.describe_consumer_groups(["live"])["live"].result()
        assert description.state is ConsumerGroupState.STABLE and description.partition_assignor == "range"
        [member] = description.members
        assert member.client_id == "me"
        assert sorted((tp.topic, tp.partition) for tp in member.assignment.topic_partitions) == [("t", 0), ("t", 1)]
        with pytest.raises(GroupBusyError):
            client.delete_consumer_groups(["live"])["live"].result()
        request = [ConsumerGroupTopicPartitions("live", [TopicPartition("t", 0, 1)])]
        with pytest.raises(GroupBusyError):
            client.alter_consumer_group_offsets(request)["live"].result()
    finally:
        consumer.close()


def test_a_group_whose_members_left_is_not_simple_one_that_only_committed_is(with_groups, cluster_path):
    # Kafka keeps a group's protocol type "consumer" after its members leave (Empty), and a
    # group that only committed offsets (assign + commit) has none: is_simple_consumer_group
    from kstream import Consumer

    client = with_groups
    consumer = Consumer({"cluster": cluster_path, "group.id": "joined"})
    consumer.subscribe(["t"])
    for _ in range(50):
        consumer.poll(0.1)
        if consumer.assignment():
            break
    consumer.close()
    listed = {g.group_id: g for g in client.list_consumer_groups().result().valid}
    assert listed["joined"].state is ConsumerGroupState.EMPTY
    assert listed["joined"].is_simple_consumer_group is False
    assert listed["committed"].is_simple_consumer_group is True
    described = client.describe_consumer_groups(["joined", "committed"])
    assert described["joined"].result().is_simple_consumer_group is False
    assert described["committed"].result().is_simple_consumer_group is True
    assert {g.id: g.protocol_type for g in client.list_groups()} == {"joined": "consumer", "committed": ""}


def test_consumer_group_offsets_list_alter_delete(with_groups):
    client = with_groups
    listed = client.list_consumer_group_offsets([ConsumerGroupTopicPartitions("committed")])["committed"].result()
    assert listed.group_id == "committed"
    assert [(tp.topic, tp.partition, tp.offset) for tp in listed.topic_partitions] == [("t", 0, 3)]
    asked = ConsumerGroupTopicPartitions("committed", [TopicPartition("t", 1), TopicPartition("gone", 0)])
    result = client.list_consumer_group_offsets([asked])["committed"].result().topic_partitions
    assert [(tp.partition, tp.offset) for tp in result] == [(1, -1001), (0, -1001)]
    assert result[0].error is None and result[1].error.code() == 3
    assert client.list_consumer_group_offsets([ConsumerGroupTopicPartitions("nope")])["nope"].result() \
        .topic_partitions == []
    altered = client.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions("committed", [TopicPartition("t", 0, 5), TopicPartition("t", 1, 0)])])
    assert [(tp.partition, tp.offset) for tp in altered["committed"].result().topic_partitions] == [(0, 5), (1, 0)]
    listed = client.list_consumer_group_offsets([ConsumerGroupTopicPartitions("committed")])["committed"].result()
    assert [(tp.partition, tp.offset) for tp in listed.topic_partitions] == [(0, 5), (1, 0)]
    with pytest.raises(OffsetOutOfRangeError):
        client.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions("committed", [TopicPartition("t", 0, 99)])])["committed"].result()
    fs = client.delete_consumer_groups(["committed", "nope"])
    assert fs["committed"].result() is None
    with pytest.raises(GroupNotFoundError):
        fs["nope"].result()
    assert client.list_consumer_groups().result().valid == []


def test_consumer_group_offsets_request_checks(with_groups):
    client = with_groups
    group = ConsumerGroupTopicPartitions
    for bad, error in ((None, TypeError), ("", TypeError), ([], ValueError),
                       ([group("a"), group("b")], ValueError), ([group(None)], TypeError),
                       ([group("")], ValueError), ([group("g", "t")], TypeError), ([group("g", [])], ValueError),
                       ([group("g", [None])], ValueError), ([group("g", ["t"])], TypeError),
                       ([group("g", [TopicPartition("t", -1)])], ValueError),
                       ([group("g", [TopicPartition("t", 1, 1)])], ValueError)):
        with pytest.raises(error):
            client.list_consumer_group_offsets(bad)
    for bad, error in (([group("g")], ValueError), ([group("g", [TopicPartition("t", 0)])], ValueError),
                       ([group("g", [TopicPartition("t", 1, -1001)])], ValueError)):
        with pytest.raises(error):
            client.alter_consumer_group_offsets(bad)


# -- offsets, records, elections ---------------------------------------------------------------

def test_list_offsets_by_spec(client, cluster_path):
    create(client, NewTopic("t", 1, 1))
    produce(cluster_path, "t", [b"a", b"b", b"c", b"d"], timestamps=[1000, 5000, 3000, 4000])
    tp = TopicPartition("t", 0)
    requests = {tp: OffsetSpec.earliest()}
    assert client.list_offsets(requests)[tp].result().offset == 0
    assert client.list_offsets({tp: OffsetSpec.latest()})[tp].result().offset == 4
    assert client.list_offsets({tp: OffsetSpec.latest()}, isolation_level=IsolationLevel.READ_COMMITTED
                               )[tp].result().offset == 4
    found = client.list_offsets({tp: OffsetSpec.for_timestamp(2000)})[tp].result()
    assert (found.offset, found.timestamp) == (1, 5000)
    assert client.list_offsets({tp: OffsetSpec.for_timestamp(9000)})[tp].result().offset == -1
    newest = client.list_offsets({tp: OffsetSpec.max_timestamp()})[tp].result()
    assert (newest.offset, newest.timestamp) == (1, 5000)
    fs = client.list_offsets({TopicPartition("t", 0, 10): OffsetSpec.earliest(),
                              TopicPartition("t", 0, 15): OffsetSpec.latest(),
                              TopicPartition("t", 3): OffsetSpec.latest()})
    assert len(fs) == 2
    assert fs[TopicPartition("t", 0, 10)].result().offset == 4  # the first key given, the last spec
    with pytest.raises(Exception, match="partition 3"):
        fs[TopicPartition("t", 3)].result()
    assert client.list_offsets({}) == {}
    for bad, error in ((None, TypeError), ({"t": OffsetSpec.latest()}, TypeError), ({tp: "x"}, TypeError),
                       ({TopicPartition("", 0): OffsetSpec.latest()}, ValueError),
                       ({TopicPartition("t", -1): OffsetSpec.latest()}, ValueError)):
        with pytest.raises(error):
            client.list_offsets(bad)
    with pytest.raises(TypeError):
        client.list_offsets(requests, isolation_level=10)


def test_list_offsets_latest_read_committed_stops_at_an_open_transaction(client, cluster_path):
    from helpers import open_transaction

    create(client, NewTopic("t", 1, 1))
    produce(cluster_path, "t", [b"a", b"b"])
    producer = open_transaction(cluster_path, "tx", "t", b"open")
    try:
        tp = TopicPartition("t", 0)
        assert client.list_offsets({tp: OffsetSpec.latest()}, isolation_level=IsolationLevel.READ_COMMITTED
                                   )[tp].result().offset == 2
        assert client.list_offsets({tp: OffsetSpec.latest()})[tp].result().offset == 3
    finally:
        producer.abort_transaction()
        producer.close()


def test_delete_records_moves_the_log_start_by_whole_segments(client, cluster_path):
    create(client, NewTopic("t", 1, 2, config={"segment.bytes": "1024"}))
    produce(cluster_path, "t", [bytes(600) for _ in range(6)])  # about one record per segment
    tp = TopicPartition("t", 0)
    fs = client.delete_records([TopicPartition("t", 0, 3)])
    low = fs[TopicPartition("t", 0, 3)].result().low_watermark
    assert 0 < low <= 3
    assert client.list_offsets({tp: OffsetSpec.earliest()})[tp].result().offset == low
    details = client.describe_topic("t").partitions[0]
    assert details.log_start_offset == low and details.log_end_offset == 6
    with pytest.raises(OffsetOutOfRangeError):
        client.delete_records([TopicPartition("t", 0, 7)])[TopicPartition("t", 0, 7)].result()
    everything = TopicPartition("t", 0, -1)
    assert client.delete_records([everything])[everything].result().low_watermark == 5  # the active segment stays
    with pytest.raises(TypeError, match="Expected Request to be a list, got 'NoneType'"):
        client.delete_records(None)
    with pytest.raises(TypeError, match="must be of type 'TopicPartition' got 'str'"):
        client.delete_records(["t"])
    with pytest.raises(ValueError):
        client.delete_records([TopicPartition("t")])


def test_elect_leaders(client):
    create(client, NewTopic("t", 2, 2))
    moved = client.cluster.topic("t").partitions[0]
    client.take_log_dir_offline(moved.leader)
    client.set_log_dir_online(moved.leader)
    client.sync_replicas()
    assert client.cluster.topic("t").partitions[0].leader != moved.leader
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    result = client.elect_leaders(ElectionType.PREFERRED, [tp0, tp1, TopicPartition("t", 5)]).result()
    assert result[tp0] is None
    assert result[TopicPartition("t", 5)].code() == 3
    assert client.cluster.topic("t").partitions[0].leader == moved.leader
    assert client.elect_leaders(ElectionType.PREFERRED).result() == {}  # nothing left to elect
    unclean = client.elect_leaders(ElectionType.UNCLEAN, [tp0]).result()
    assert unclean[tp0].code() == 84  # ELECTION_NOT_NEEDED: it has an online leader
    with pytest.raises(TypeError):
        client.elect_leaders("preferred")
    # request checks, with confluent-kafka's messages (code ported from it matches on them)
    with pytest.raises(TypeError, match="Expected 'partitions' to be a list, got 'str'"):
        client.elect_leaders(ElectionType.PREFERRED, "t")
    with pytest.raises(TypeError, match="list must be of type 'TopicPartition' got 'NoneType'"):
        client.elect_leaders(ElectionType.PREFERRED, [None])
    for bad in (TopicPartition("", 0), TopicPartition("t", -1)):
        with pytest.raises(ValueError):
            client.elect_leaders(ElectionType.PREFERRED, [bad])


def test_unclean_election_of_an_offline_partition(client, cluster_path):
    create(client, NewTopic("t", 1, 2))
    leader = client.cluster.topic("t").partitions[0].leader
    [follower] = [d for d in log_dirs(client) if d != leader]
    client.take_log_dir_offline(follower)  # the follower leaves the ISR
    client.take_log_dir_offline(leader)  # the last in-sync replica goes: offline
    client.set_log_dir_online(follower)
    tp = TopicPartition("t", 0)
    assert client.list_topics("t").topics["t"].partitions[0].error is not None
    assert client.elect_leaders(ElectionType.UNCLEAN, [tp]).result() == {tp: None}
    assert client.list_topics("t").topics["t"].partitions[0].leader == follower


# -- not supported on purpose, types still there -----------------------------------------------

def test_acls_scram_and_quotas_are_not_supported(client):
    binding = AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:u", "*",
                         AclOperation.WRITE, AclPermissionType.ALLOW)
    for call, args in (("create_acls", [binding]), ("describe_acls", None), ("delete_acls", []),
                       ("describe_user_scram_credentials", None), ("alter_user_scram_credentials", []),
                       ("describe_client_quotas", None)):
        with pytest.raises(NotSupportedError, match=f"{call} is not supported by kstream"):
            getattr(client, call)(args)


def test_acl_binding_checks_its_fields():
    attrs = [ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:u", "*", AclOperation.WRITE,
             AclPermissionType.ALLOW]
    AclBinding(*attrs)
    for i in range(len(attrs)):
        copy = list(attrs)
        copy[i] = None
        with pytest.raises(ValueError):
            AclBinding(*copy)
        if i in (1, 3, 4):
            AclBindingFilter(*copy)
    copy = list(attrs)
    copy[5] = AclOperation.ANY
    with pytest.raises(ValueError):
        AclBinding(*copy)
    AclBindingFilter(*copy)


def test_admin_keeps_working_without_a_config(tmp_path, monkeypatch):
    monkeypatch.setenv("KSTREAM_CLUSTER", str(tmp_path / "env"))
    with Admin() as admin:
        create(admin, NewTopic("t", 1))
        assert isinstance(admin, AdminClient) and list(admin.list_topics().topics) == ["t"]


def test_reads_create_no_state(with_groups, cluster_path):
    client = with_groups
    before = tree(cluster_path)
    client.list_topics()
    client.list_topics("nope")
    client.describe_cluster().result()
    client.describe_topics(TopicCollection(["t", "nope"]))
    client.describe_configs([ConfigResource("topic", "t"), ConfigResource("broker", "")])
    client.list_consumer_groups().result()
    client.describe_consumer_groups(["committed", "nope"])
    client.list_consumer_group_offsets([ConsumerGroupTopicPartitions("nope")])
    client.list_groups()
    tp = TopicPartition("t", 0)
    for spec in (OffsetSpec.earliest(), OffsetSpec.latest(), OffsetSpec.max_timestamp(), OffsetSpec.for_timestamp(0)):
        client.list_offsets({tp: spec}, isolation_level=IsolationLevel.READ_COMMITTED)[tp].result()
    after = tree(cluster_path)
    # the metadata store may grow its WAL on a read; nothing else may change or appear
    assert {k: v for k, v in after.items() if "metadata.db" not in k} == \
        {k: v for k, v in before.items() if "metadata.db" not in k}
    assert set(after) == set(before)


def test_errors_carry_librdkafkas_codes(client):
    pytest.importorskip("kstream.error", reason="the errors branch adds the confluent error model")
    from kstream import KafkaException

    create(client, NewTopic("a", 1, 1))
    results = {
        "TOPIC_ALREADY_EXISTS": client.create_topics([NewTopic("a", 1, 1)])["a"],
        "INVALID_REPLICATION_FACTOR": client.create_topics([NewTopic("b", 1, 5)])["b"],
        "INVALID_PARTITIONS": client.create_partitions([NewPartitions("a", 1)])["a"],
        "UNKNOWN_TOPIC_OR_PART": client.delete_topics(["nope"])["nope"],
        "GROUP_ID_NOT_FOUND": client.delete_consumer_groups(["nope"])["nope"],
    }
    for name, future in results.items():
        error = future.exception()
        assert isinstance(error, KafkaException) and error.args[0].name() == name, (name, error)
    with pytest.raises(KafkaException) as caught:
        client.create_acls([])
    assert caught.value.args[0].name() == "_NOT_IMPLEMENTED"


def test_a_closed_admin_client_refuses_every_call_as_confluents_does(cluster_path):
    with AdminClient({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result()
        assert admin.poll(0) == 0 and len(admin) == 0
    calls = [lambda: admin.poll(0), lambda: admin.create_topics([NewTopic("u", 1, 1)]),
             lambda: admin.delete_topics(["t"]), lambda: admin.describe_configs([ConfigResource("topic", "t")]),
             lambda: admin.describe_topics(TopicCollection(["t"])), admin.list_consumer_groups,
             lambda: admin.list_offsets({TopicPartition("t", 0): OffsetSpec.latest()}),
             lambda: admin.elect_leaders(ElectionType.PREFERRED), lambda: admin.create_acls([]),
             lambda: admin.describe_topic("t"), lambda: admin.cluster]
    for call in calls:
        with pytest.raises(RuntimeError, match="AdminClient has been closed"):
            call()
    for call in (admin.list_topics, admin.list_groups):  # confluent's shared-handle wording
        with pytest.raises(RuntimeError, match="Handle has been closed"):
            call()
    assert len(admin) == 0
    admin.close()  # a second close does nothing
    assert admin.__enter__() is admin and admin.__exit__(None, None, None) is None


def test_an_admin_client_whose_init_never_ran_counts_as_closed():
    class Uninitialized(AdminClient):
        def __init__(self, conf):
            pass  # skips AdminClient.__init__: nothing is open

    admin = Uninitialized({})
    with pytest.raises(RuntimeError, match="AdminClient has been closed"):
        admin.create_topics([NewTopic("t", 1, 1)])
    with pytest.raises(RuntimeError, match="AdminClient has been closed"):
        admin.poll(0)
    assert len(admin) == 0


def test_node_prints_as_confluent_kafkas():
    """Found by the dual-run harness (tests/dual, example_adminapi): describe_topics' leader and
    replicas print as confluent-kafka's Node does, "(id) host:port " (rack appended when set)."""
    from kstream import Node

    assert str(Node(1, "/data/logs", -1)) == "(1) /data/logs:-1 "
    assert str(Node(2, "host", 9092, rack="r1")) == "(2) host:9092 (Rack - r1)"


@pytest.mark.parametrize("name, value", [("no.such.config", "1"), ("retention.ms", "soon")])
def test_a_bad_topic_config_is_kafkas_invalid_config(admin, make_topic, name, value):
    """Found by the dual-run harness (tests/dual, topic_configs): a broker answers an alteration
    with an unknown config or a bad value with INVALID_CONFIG (40); it is still a ConfigError."""
    from kstream.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    from kstream.errors import ConfigError

    make_topic("t")
    for alter, resource in (
            (admin.incremental_alter_configs, ConfigResource("topic", "t", incremental_configs=[
                ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])),
            (admin.alter_configs, ConfigResource("topic", "t", set_config={name: value}))):
        with pytest.raises(ConfigError) as caught:
            alter([resource])[resource].result()
        assert caught.value.args[0].name() == "INVALID_CONFIG", caught.value
        assert name in str(caught.value)


def test_config_resource_repr_is_confluent_kafkas():
    """Found by the dual-run harness (tests/dual, example_adminapi): adminapi.py prints
    "ConfigResource(ResourceType.TOPIC,name) configuration successfully altered" with either library."""
    from kstream.admin import ConfigResource, ResourceType

    assert repr(ConfigResource("topic", "orders")) == "ConfigResource(ResourceType.TOPIC,orders)"
    assert repr(ConfigResource(ResourceType.BROKER, "1")) == "ConfigResource(ResourceType.BROKER,1)"

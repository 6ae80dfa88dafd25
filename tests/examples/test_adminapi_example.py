"""examples/confluent/adminapi.py, run as a user runs confluent's example: one operation per
process, a cluster path where confluent's takes brokers. (Kept apart from
test_confluent_examples.py so the branches merge cleanly; same conventions.)"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ADMINAPI = os.path.join(ROOT, "examples", "confluent", "adminapi.py")
TIMEOUT_S = 120


def adminapi(*args: str, expect_exit: int = 0) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.path.join(ROOT, "src"),
                                                                      os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, ADMINAPI, *args], env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert done.returncode == expect_exit, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def test_adminapi_example_runs_its_operations(cluster_path):
    import kstream

    if not hasattr(kstream, "KafkaException"):
        pytest.skip("kstream.KafkaException is not in this build (the errors branch adds it)")
    from kstream import ConsumerGroupTopicPartitions, Producer
    from kstream.admin import AdminClient

    assert "Usage:" in adminapi(expect_exit=1)
    out = adminapi(cluster_path, "create_topics", "orders", "audit")
    assert "Topic orders created" in out and "Topic audit created" in out
    assert "Failed to create topic orders" in adminapi(cluster_path, "create_topics", "orders")
    out = adminapi(cluster_path, "list")
    assert '"orders" with 3 partition(s)' in out and "1 brokers:" in out and "0 consumer groups" in out
    assert "Additional partitions created for topic orders" in adminapi(cluster_path, "create_partitions",
                                                                        "orders", "4")
    out = adminapi(cluster_path, "describe_topics", "0", "orders", "nope")
    assert "Topic name             : orders" in out and out.count("    Id                :") == 4
    assert "Error while describing topic 'nope'" in out
    out = adminapi(cluster_path, "describe_topics", "1", "orders")  # Kafka with no authorizer: all
    assert "READ  WRITE  CREATE  DELETE  ALTER  DESCRIBE  DESCRIBE_CONFIGS  ALTER_CONFIGS" in out

    assert "configuration successfully altered" in adminapi(
        cluster_path, "alter_configs", "TOPIC", "orders", "retention.ms=60000,segment.bytes=1048576")
    assert "configuration successfully altered" in adminapi(
        cluster_path, "incremental_alter_configs", "TOPIC", "orders", "retention.ms=SET:120000;segment.bytes=DELETE")
    assert "Config for ConfigResource(ResourceType.TOPIC,orders) updated" in adminapi(
        cluster_path, "delta_alter_configs", "TOPIC", "orders", "flush.messages=1000")
    out = adminapi(cluster_path, "describe_configs", "TOPIC", "orders")
    assert "retention.ms = 120000" in " ".join(out.split()) and "DYNAMIC_TOPIC_CONFIG" in out
    with AdminClient({"cluster": cluster_path}) as admin:
        assert dict(admin.cluster.topic("orders").config) == {"retention.ms": "120000", "flush.messages": "1000"}

    with Producer({"cluster": cluster_path}) as producer:
        for i in range(5):
            producer.produce("orders", b"x%d" % i, partition=0, timestamp=1000 + i)
    out = adminapi(cluster_path, "list_offsets", "READ_COMMITTED", "orders", "0", "EARLIEST",
                   "orders", "0", "LATEST", "orders", "1", "TIMESTAMP", "1")
    assert "Offset : 5" in out and "Offset : -1" in out  # partition 1 is empty
    out = adminapi(cluster_path, "list_offsets", "READ_UNCOMMITTED", "orders", "0", "MAX_TIMESTAMP")
    assert "Offset : 4 Timestamp : 1004" in out
    out = adminapi(cluster_path, "delete_records", "orders", "0", "-1")
    assert "All records deleted in topic orders partition 0. The minimum offset in this partition is now 0" in out

    out = adminapi(cluster_path, "alter_consumer_group_offsets", "billing", "orders", "0", "2")
    assert "Group: billing" in out and "orders [0]: 2" in out
    out = adminapi(cluster_path, "list_consumer_group_offsets", "billing")
    assert "orders [0]: 2" in out
    out = adminapi(cluster_path, "list_consumer_groups", "-states", "EMPTY")
    assert "1 consumer groups" in out and "id: billing" in out
    out = adminapi(cluster_path, "describe_consumer_groups", "0", "billing", "nope")
    assert "Group Id: billing" in out and "Error while describing group id 'nope'" in out
    assert "Is Simple          : True" in out  # offsets only, never joined
    assert "READ  DELETE  DESCRIBE" in adminapi(cluster_path, "describe_consumer_groups", "1", "billing")
    assert "Deleted group with id 'billing' successfully" in adminapi(cluster_path, "delete_consumer_groups",
                                                                      "billing")
    with AdminClient({"cluster": cluster_path}) as admin:
        fs = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("billing")])
        assert fs["billing"].result().topic_partitions == []

    out = adminapi(cluster_path, "describe_cluster", "0")
    assert "Cluster_id" in out and "No Controller Information Available" in out and "Node:" in out
    assert "CREATE  ALTER  DESCRIBE  CLUSTER_ACTION" in adminapi(cluster_path, "describe_cluster", "1")
    out = adminapi(cluster_path, "elect_leaders", "PREFERRED", "orders", "0")
    assert "Leader election failed for partition orders [0]" in out and "ELECTION_NOT_NEEDED" in out
    assert "not supported by kstream" in adminapi(cluster_path, "create_acls", "TOPIC", "t", "LITERAL", "User:u",
                                                  "*", "READ", "ALLOW", expect_exit=1)
    assert "Topic audit deleted" in adminapi(cluster_path, "delete_topics", "audit")
    with AdminClient({"cluster": cluster_path}) as admin:
        assert admin.cluster.list_topics() == ["orders"]

"""Topic configs: set at creation, described, altered (whole and incrementally), reset.

    topic_configs.py <bootstrap> <topic>

A topic created with retention.ms=3600000; describe_configs shows a few configs both
systems have (value, source, is_default, read-only); incremental_alter_configs sets
retention.bytes and deletes retention.ms; alter_configs (the whole-set call) sets
retention.ms and thereby resets what it does not name (retention.bytes). A config Kafka does not have
and a bad value are refused: the error code is printed (each library words it its own way).
Values that are each system's own defaults are printed as ``default`` (docs/COMPAT.md,
"Side by side", topic config defaults).
"""

import sys

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewTopic

SHOWN = ("retention.ms", "retention.bytes", "max.message.bytes", "cleanup.policy", "min.insync.replicas",
         "segment.bytes")


def describe(admin, topic, label):
    resource = ConfigResource("topic", topic)
    entries = admin.describe_configs([resource])[resource].result(10)
    print(label)
    for name in SHOWN:
        entry = entries.get(name)
        if entry is None:
            print(f"  {name}: not described")
            continue
        value = "default" if entry.is_default else entry.value
        print(f"  {name} = {value} [{ConfigSource(entry.source).name}, default={entry.is_default}, "
              f"read-only={entry.is_read_only}]")


def main(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1,
                                  config={"retention.ms": "3600000"})])[topic].result(10)
    describe(admin, topic, "created with retention.ms=3600000:")

    resource = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("retention.bytes", "1048576", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
    admin.incremental_alter_configs([resource])[resource].result(10)
    describe(admin, topic, "incremental: retention.bytes set, retention.ms deleted:")

    resource = ConfigResource("topic", topic, set_config={"retention.ms": "7200000"})
    admin.alter_configs([resource])[resource].result(10)
    describe(admin, topic, "alter_configs with retention.ms only:")

    for name, value in (("no.such.config", "1"), ("retention.ms", "soon")):
        resource = ConfigResource("topic", topic, incremental_configs=[
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])
        try:
            admin.incremental_alter_configs([resource])[resource].result(10)
            print(f"{name}={value}: accepted")
        except KafkaException as err:
            print(f"{name}={value}: refused, {err.args[0].name()}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

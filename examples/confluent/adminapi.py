#!/usr/bin/env python
"""kstream's take on confluent-kafka's examples/adminapi.py: one admin operation per run.

    adminapi.py <cluster> <operation> <args..>

Same operations and arguments as confluent's example, with a kstream cluster
path where it takes bootstrap brokers (log dirs play the brokers). Run it with
no arguments for the list. ACL and SCRAM operations exist in the API but
kstream does not support them (they say so and exit 1).
"""

import sys

from kstream import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    ElectionType,
    IsolationLevel,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from kstream.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)

USAGE = """\
Usage: {prog} <cluster> <operation> <args..>

operations:
 create_topics <topic1> <topic2> ..
 delete_topics <topic1> <topic2> ..
 create_partitions <topic1> <new_total_count1> <topic2> <new_total_count2> ..
 describe_configs <resource_type1> <resource_name1> <resource2> <resource_name2> ..
 alter_configs <resource_type1> <resource_name1> <config=val,config2=val2> <resource_type2> ..
 incremental_alter_configs <resource_type1> <resource_name1> <config1=op1:val1;config2=DELETE> ..
 delta_alter_configs <resource_type1> <resource_name1> <config=val,config2=val2> ..
 list [<all|topics|brokers|groups>]
 list_consumer_groups [-states <state1> <state2> ..] [-types <grouptype1> <grouptype2> ..]
 describe_consumer_groups <include_authorized_operations> <group1> <group2> ..
 describe_topics <include_authorized_operations> <topic1> <topic2> ..
 describe_cluster <include_authorized_operations>
 delete_consumer_groups <group1> <group2> ..
 list_consumer_group_offsets <group> [<topic1> <partition1> <topic2> <partition2> ..]
 alter_consumer_group_offsets <group> <topic1> <partition1> <offset1> <topic2> <partition2> <offset2> ..
 list_offsets <isolation_level> <topic1> <partition1> <offset_spec1> [<topic2> <partition2> <offset_spec2> ..]
 delete_records <topic1> <partition1> <offset1> [<topic2> <partition2> <offset2> ..]
 elect_leaders <PREFERRED|UNCLEAN> [<topic1> <partition1> ..]
 create_acls / describe_acls / delete_acls / describe_user_scram_credentials /
 alter_user_scram_credentials: not supported by kstream
"""


def groups_of(args, size, operation):
    """args in consecutive groups of ``size`` (a usage error if they do not divide)."""
    if len(args) % size:
        raise SystemExit(f"{operation}: expected groups of {size} arguments, got {len(args)}")
    return [args[i:i + size] for i in range(0, len(args), size)]


def report(futures, done, failed):
    """Print ``done(key, result)`` or ``failed(key, error)`` for every future, in order."""
    for key, future in futures.items():
        try:
            print(done(key, future.result()))
        except KafkaException as err:
            print(failed(key, err))


# -- topics ------------------------------------------------------------------------------------

def create_topics(admin, args):
    new = [NewTopic(name, num_partitions=3, replication_factor=1) for name in args]
    report(admin.create_topics(new), lambda t, _: f"Topic {t} created",
           lambda t, e: f"Failed to create topic {t}: {e}")


def delete_topics(admin, args):
    report(admin.delete_topics(args, operation_timeout=30), lambda t, _: f"Topic {t} deleted",
           lambda t, e: f"Failed to delete topic {t}: {e}")


def create_partitions(admin, args):
    new = [NewPartitions(topic, int(count)) for topic, count in groups_of(args, 2, "create_partitions")]
    report(admin.create_partitions(new, validate_only=False),
           lambda t, _: f"Additional partitions created for topic {t}",
           lambda t, e: f"Failed to add partitions to topic {t}: {e}")


def print_operations(label, operations):
    """authorized_operations, asked for with include_authorized_operations=1."""
    print(label)
    print("    " + "  ".join(op.name for op in operations))


def describe_topics(admin, args):
    with_operations = bool(int(args[0]))
    futures = admin.describe_topics(TopicCollection(args[1:]), request_timeout=10,
                                    include_authorized_operations=with_operations)
    for name, future in futures.items():
        try:
            topic = future.result()
        except KafkaException as err:
            print(f"Error while describing topic '{name}': {err}")
            continue
        print(f"Topic name             : {topic.name}")
        print(f"Topic id               : {topic.topic_id}")
        if with_operations:
            print_operations("Authorized operations  : ", topic.authorized_operations)
        print("Partition Information")
        for partition in topic.partitions:
            print(f"    Id                : {partition.id}")
            print(f"    Leader            : {partition.leader}")
            print(f"    Replicas          : {len(partition.replicas)}")
            for replica in partition.replicas:
                print(f"         Replica            : {replica}")
            print(f"    In-Sync Replicas  : {len(partition.isr)}")
            for replica in partition.isr:
                print(f"         In-Sync Replica    : {replica}")
        print("")


# -- configs -----------------------------------------------------------------------------------

def print_config(entry, depth):
    synonyms = [f"{s.name}:{ConfigSource(s.source)}" for s in entry.synonyms.values()]
    print(f"{' ' * depth + entry.name:>40} = {entry.value!s:<50}  [{ConfigSource(entry.source)},"
          f"is:read-only={entry.is_read_only},default={entry.is_default},sensitive={entry.is_sensitive},"
          f"synonym={entry.is_synonym},synonyms={synonyms}]")


def describe_configs(admin, args):
    resources = [ConfigResource(kind, name) for kind, name in groups_of(args, 2, "describe_configs")]
    for resource, future in admin.describe_configs(resources).items():
        try:
            for entry in future.result().values():
                print_config(entry, 1)
        except KafkaException as err:
            print(f"Failed to describe {resource}: {err}")


def settings_resources(args, operation):
    resources = []
    for kind, name, settings in groups_of(args, 3, operation):
        resource = ConfigResource(kind, name)
        for pair in settings.split(","):
            key, value = pair.split("=", 1)
            resource.set_config(key, value)
        resources.append(resource)
    return resources


def alter_configs(admin, args):
    for resource, future in admin.alter_configs(settings_resources(args, "alter_configs")).items():
        future.result()  # raises on failure, as confluent's example lets it
        print(f"{resource} configuration successfully altered")


def incremental_alter_configs(admin, args):
    resources = []
    for kind, name, changes in groups_of(args, 3, "incremental_alter_configs"):
        entries = []
        for change in changes.split(";"):
            key, operation_value = change.split("=", 1)
            operation, _, value = operation_value.partition(":")
            entries.append(ConfigEntry(key, value if operation != "DELETE" else None,
                                       incremental_operation=AlterConfigOpType[operation]))
        resources.append(ConfigResource(kind, name, incremental_configs=entries))
    for resource, future in admin.incremental_alter_configs(resources).items():
        future.result()
        print(f"{resource} configuration successfully altered")


def delta_alter_configs(admin, args):
    """Set the given configs and keep every other non-default one (read, merge, write)."""
    resources = settings_resources(args, "delta_alter_configs")
    described = admin.describe_configs(resources)
    for resource in resources:
        current = described[resource].result()
        kept = {k: e for k, e in current.items() if not e.is_default and not e.is_read_only}
        print(f"Updating {len(resource)} supplied config entries {resource} with {len(kept)} config "
              "entries read from cluster")
        for key, entry in kept.items():
            resource.set_config(key, entry.value, overwrite=False)
        admin.alter_configs([resource])[resource].result()
        print(f"Config for {resource} updated")


# -- cluster and groups ------------------------------------------------------------------------

def list_metadata(admin, args):
    what = args[0] if args else "all"
    md = admin.list_topics(timeout=10)
    print(f"Cluster {md.cluster_id} metadata (response from broker {md.orig_broker_name}):")
    if what in ("all", "brokers"):
        print(f" {len(md.brokers)} brokers:")
        for broker in md.brokers.values():
            print(f"  {broker}{'  (controller)' if broker.id == md.controller_id else ''}")
    if what in ("all", "topics"):
        print(f" {len(md.topics)} topics:")
        for topic in md.topics.values():
            error = f": {topic.error}" if topic.error is not None else ""
            print(f"  \"{topic}\" with {len(topic.partitions)} partition(s){error}")
            for p in topic.partitions.values():
                error = f": {p.error}" if p.error is not None else ""
                print(f"partition {p.id} leader: {p.leader}, replicas: {p.replicas}, isrs: {p.isrs} "
                      f"errstr: {error}")
    if what in ("all", "groups"):
        groups = admin.list_groups(timeout=10)
        print(f" {len(groups)} consumer groups")
        for group in groups:
            print(f" \"{group}\" with {len(group.members)} member(s), protocol: {group.protocol}, "
                  f"protocol_type: {group.protocol_type}")
            for member in group.members:
                print(f"id {member.id} client_id: {member.client_id} client_host: {member.client_host}")


def list_consumer_groups(admin, args):
    states, types, target = set(), set(), None
    for arg in args:
        if arg in ("-states", "-types"):
            if (arg == "-states" and states) or (arg == "-types" and types) or target == arg:
                raise SystemExit("Invalid Arguments\n Usage: list_consumer_groups [-states <state1> ..] "
                                 "[-types <grouptype1> ..]")
            target = arg
        elif target == "-states":
            states.add(ConsumerGroupState[arg] if arg in ConsumerGroupState.__members__
                       else ConsumerGroupState.UNKNOWN)
        elif target == "-types":
            types.add(ConsumerGroupType[arg] if arg in ConsumerGroupType.__members__
                      else ConsumerGroupType.UNKNOWN)
        else:
            raise SystemExit("Invalid Arguments\n Usage: list_consumer_groups [-states <state1> ..] "
                             "[-types <grouptype1> ..]")
    result = admin.list_consumer_groups(request_timeout=10, states=states, group_types=types).result()
    print(f"{len(result.valid)} consumer groups")
    for group in result.valid:
        print(f"    id: {group.group_id} is_simple: {group.is_simple_consumer_group} state: {group.state} "
              f"group_type: {group.group_type}")
    print(f"{len(result.errors)} errors")
    for error in result.errors:
        print(f"    error: {error}")


def describe_consumer_groups(admin, args):
    with_operations = bool(int(args[0]))
    futures = admin.describe_consumer_groups(args[1:], include_authorized_operations=with_operations,
                                             request_timeout=10)
    for group_id, future in futures.items():
        try:
            group = future.result()
        except KafkaException as err:
            print(f"Error while describing group id '{group_id}': {err}")
            continue
        print(f"Group Id: {group.group_id}")
        print(f"  Is Simple          : {group.is_simple_consumer_group}")
        print(f"  State              : {group.state}")
        print(f"  Partition Assignor : {group.partition_assignor}")
        print(f"  Coordinator        : {group.coordinator}")
        print("  Members: ")
        for member in group.members:
            print(f"    Id                : {member.member_id}")
            print(f"    Host              : {member.host}")
            print(f"    Client Id         : {member.client_id}")
            print(f"    Group Instance Id : {member.group_instance_id}")
            for tp in member.assignment.topic_partitions:
                print(f"      {tp.topic} [{tp.partition}]")
        if with_operations:
            print_operations("  Authorized operations: ", group.authorized_operations)


def describe_cluster(admin, args):
    with_operations = bool(int(args[0])) if args else False
    cluster = admin.describe_cluster(request_timeout=10, include_authorized_operations=with_operations).result()
    print(f"Cluster_id           : {cluster.cluster_id}")
    print(f"Controller: {cluster.controller}" if cluster.controller else "No Controller Information Available")
    print("Nodes                :")
    for node in cluster.nodes:
        print(f"  Node: {node}")
    if with_operations:
        print_operations("Authorized operations: ", cluster.authorized_operations)


def delete_consumer_groups(admin, args):
    report(admin.delete_consumer_groups(args, request_timeout=10),
           lambda g, _: f"Deleted group with id '{g}' successfully",
           lambda g, e: f"Error deleting group id '{g}': {e}")


def print_group_offsets(futures, verb):
    for group_id, future in futures.items():
        try:
            result = future.result()
        except KafkaException as err:
            print(f"Failed to {verb} {group_id}: {err}")
            continue
        print(f"Group: {result.group_id}")
        for tp in result.topic_partitions:
            if tp.error:
                print(f"    Error: {tp.error.str()} occurred with {tp.topic} [{tp.partition}]")
            else:
                print(f"    {tp.topic} [{tp.partition}]: {tp.offset}")


def list_consumer_group_offsets(admin, args):
    partitions = [TopicPartition(t, int(p)) for t, p in groups_of(args[1:], 2, "list_consumer_group_offsets")]
    request = ConsumerGroupTopicPartitions(args[0], partitions or None)
    print_group_offsets(admin.list_consumer_group_offsets([request]), "list")


def alter_consumer_group_offsets(admin, args):
    partitions = [TopicPartition(t, int(p), int(o))
                  for t, p, o in groups_of(args[1:], 3, "alter_consumer_group_offsets")]
    request = ConsumerGroupTopicPartitions(args[0], partitions or None)
    print_group_offsets(admin.alter_consumer_group_offsets([request]), "alter")


# -- offsets, records, leaders -----------------------------------------------------------------

def list_offsets(admin, args):
    if not args:
        raise SystemExit("list_offsets: expected <isolation_level> <topic> <partition> <offset_spec> ..")
    isolation_level = IsolationLevel[args[0]]
    requests, rest = {}, list(args[1:])
    while rest:
        if len(rest) < 3:
            raise SystemExit(f"list_offsets: incomplete partition {rest}")
        topic, partition, spec = rest[0], int(rest[1]), rest[2]
        rest = rest[3:]
        if spec == "TIMESTAMP":
            if not rest:
                raise SystemExit("list_offsets: TIMESTAMP needs a timestamp")
            offset_spec, rest = OffsetSpec.for_timestamp(int(rest[0])), rest[1:]
        elif spec in ("EARLIEST", "LATEST", "MAX_TIMESTAMP"):
            offset_spec = getattr(OffsetSpec, spec.lower())()
        else:
            raise SystemExit("Invalid OffsetSpec, must be EARLIEST, LATEST, MAX_TIMESTAMP or TIMESTAMP")
        requests[TopicPartition(topic, partition)] = offset_spec
    futures = admin.list_offsets(requests, isolation_level=isolation_level, request_timeout=30)
    report(futures, lambda tp, r: f"Topicname : {tp.topic} Partition_Index : {tp.partition} "
                                  f"Offset : {r.offset} Timestamp : {r.timestamp}",
           lambda tp, e: f"Topicname : {tp.topic} Partition_Index : {tp.partition} Error : {e}")


def delete_records(admin, args):
    if not args:
        raise SystemExit("delete_records: expected <topic1> <partition1> <offset1> ..")
    partitions = [TopicPartition(t, int(p), int(o)) for t, p, o in groups_of(args, 3, "delete_records")]

    def done(tp, result):
        before = "All records deleted" if tp.offset == -1 else f"All records deleted before offset {tp.offset}"
        return (f"{before} in topic {tp.topic} partition {tp.partition}. The minimum offset in this "
                f"partition is now {result.low_watermark}")

    report(admin.delete_records(partitions), done,
           lambda tp, e: f"Error deleting records in topic {tp.topic} partition {tp.partition} "
                         f"before offset {tp.offset}: {e}")


def elect_leaders(admin, args):
    if not args:
        raise SystemExit("elect_leaders: expected <PREFERRED|UNCLEAN> [<topic> <partition> ..]")
    partitions = [TopicPartition(t, int(p)) for t, p in groups_of(args[1:], 2, "elect_leaders")] or None
    try:
        results = admin.elect_leaders(ElectionType[args[0]], partitions).result()
    except KafkaException as err:
        print(f"Error electing leaders: {err}")
        return
    for tp, error in results.items():
        print(f"Leader election succeeded for partition {tp.topic} [{tp.partition}]" if error is None
              else f"Leader election failed for partition {tp.topic} [{tp.partition}]: {error}")


def unsupported(name):
    def run(admin, args):
        try:
            getattr(admin, name)(args)
        except KafkaException as err:
            print(f"{name} failed: {err}", file=sys.stderr)
            raise SystemExit(1) from err
    return run


OPERATIONS = {
    "create_topics": create_topics,
    "delete_topics": delete_topics,
    "create_partitions": create_partitions,
    "describe_configs": describe_configs,
    "alter_configs": alter_configs,
    "incremental_alter_configs": incremental_alter_configs,
    "delta_alter_configs": delta_alter_configs,
    "list": list_metadata,
    "list_consumer_groups": list_consumer_groups,
    "describe_consumer_groups": describe_consumer_groups,
    "describe_topics": describe_topics,
    "describe_cluster": describe_cluster,
    "delete_consumer_groups": delete_consumer_groups,
    "list_consumer_group_offsets": list_consumer_group_offsets,
    "alter_consumer_group_offsets": alter_consumer_group_offsets,
    "list_offsets": list_offsets,
    "delete_records": delete_records,
    "elect_leaders": elect_leaders,
    **{name: unsupported(name) for name in ("create_acls", "describe_acls", "delete_acls",
                                            "describe_user_scram_credentials", "alter_user_scram_credentials")},
}


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(USAGE.format(prog=argv[0]))
        return 1
    cluster, operation, args = argv[1], argv[2], argv[3:]
    if operation not in OPERATIONS:
        sys.stderr.write(f"Unknown operation: {operation}\n")
        return 1
    with AdminClient({"cluster": cluster}) as admin:
        OPERATIONS[operation](admin, args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Consumer groups as confluent's AdminClient reports and changes them.

Backed by :class:`kstream.groups.ConsumerGroups` (member rows in the metadata
store, committed offsets in the Delta table); nothing here writes except
delete and alter. A group exists when it has member rows or committed offsets.
Describing or deleting a group that does not exist is GROUP_ID_NOT_FOUND (as
in Kafka 4); listing a missing group's offsets returns no offsets, as Kafka does.
Deleting or altering a group with live members is refused (GroupBusyError).
kstream groups use the classic (eager) protocol; no coordinator node exists
(``coordinator`` is None).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kstream._model import ConsumerGroupState, ConsumerGroupTopicPartitions, ConsumerGroupType
from kstream.client.admin._futures import check_name, kafka_error
from kstream.client.cluster_metadata import GroupMember, GroupMetadata
from kstream.errors import GroupNotFoundError
from kstream.message import OFFSET_INVALID, TopicPartition

if TYPE_CHECKING:
    from kstream.groups import ConsumerGroups, GroupDescription


class ConsumerGroupListing:
    def __init__(self, group_id: str, is_simple_consumer_group: bool,
                 state: ConsumerGroupState | None = None, group_type: ConsumerGroupType | None = None):
        self.group_id = group_id
        self.is_simple_consumer_group = is_simple_consumer_group
        self.state = state
        self.group_type = group_type

    def __repr__(self) -> str:
        return f"ConsumerGroupListing({self.group_id!r}, {self.state})"


class ListConsumerGroupsResult:
    def __init__(self, valid: list[ConsumerGroupListing] | None = None, errors: list[Any] | None = None):
        self.valid = valid if valid is not None else []
        self.errors = errors if errors is not None else []


class MemberAssignment:
    def __init__(self, topic_partitions: list[TopicPartition] | None = None):
        self.topic_partitions = topic_partitions if topic_partitions is not None else []


class MemberDescription:
    def __init__(self, member_id: str, client_id: str, host: str, assignment: MemberAssignment,
                 group_instance_id: str | None = None, target_assignment: MemberAssignment | None = None):
        self.member_id = member_id
        self.client_id = client_id
        self.host = host
        self.assignment = assignment
        self.group_instance_id = group_instance_id
        self.target_assignment = target_assignment


class ConsumerGroupDescription:
    def __init__(self, group_id: str, is_simple_consumer_group: bool, members: list[MemberDescription],
                 partition_assignor: str, state: ConsumerGroupState, coordinator: Any = None,
                 authorized_operations: list[Any] | None = None,
                 group_type: ConsumerGroupType = ConsumerGroupType.CLASSIC):
        self.group_id = group_id
        self.is_simple_consumer_group = is_simple_consumer_group
        self.members = members
        self.partition_assignor = partition_assignor
        self.state = state
        self.coordinator = coordinator
        self.authorized_operations = authorized_operations
        self.group_type = group_type

    def __repr__(self) -> str:
        return f"ConsumerGroupDescription({self.group_id!r}, {self.state}, {len(self.members)} members)"


# -- request checks ------------------------------------------------------------------------

def check_enum_set(value: Any, enum: type, what: str) -> set[Any]:
    """``states`` / ``group_types``: a set of ``enum`` members (no UNKNOWN), or None."""
    if value is None:
        return set()
    if not isinstance(value, set):
        raise TypeError(f"{what} must be a set of {enum.__name__}, got {type(value).__name__}")
    for item in value:
        if not isinstance(item, enum):
            raise TypeError(f"{what} must hold {enum.__name__} values, got {item!r}")
        if enum is ConsumerGroupType and item is ConsumerGroupType.UNKNOWN:
            raise TypeError(f"{what} cannot hold {item}")
    return value


def check_offsets_request(request: Any, alter: bool) -> ConsumerGroupTopicPartitions:
    """The one ConsumerGroupTopicPartitions of list/alter_consumer_group_offsets, checked as
    confluent checks it (TypeError for wrong types, ValueError for wrong values)."""
    if not isinstance(request, list):
        raise TypeError(f"request must be a list of ConsumerGroupTopicPartitions, got {type(request).__name__}")
    if len(request) != 1:
        raise ValueError("give exactly one ConsumerGroupTopicPartitions (one group per call)")
    item = request[0]
    if not isinstance(item, ConsumerGroupTopicPartitions):
        raise TypeError(f"expected a ConsumerGroupTopicPartitions, got {item!r}")
    check_name(item.group_id, "group_id")
    partitions = item.topic_partitions
    if partitions is None:
        if alter:
            raise ValueError("alter_consumer_group_offsets needs topic_partitions with offsets")
        return item
    if not isinstance(partitions, list):
        raise TypeError("topic_partitions must be a list of TopicPartition")
    if not partitions:
        raise ValueError("topic_partitions must not be empty (None means all)")
    for tp in partitions:
        if tp is None:
            raise ValueError("topic_partitions must not hold None")
        if not isinstance(tp, TopicPartition):
            raise TypeError(f"topic_partitions must hold TopicPartition, got {tp!r}")
        check_name(tp.topic, "a TopicPartition's topic")
        if tp.partition < 0:
            raise ValueError(f"{tp}: the partition must be >= 0")
        if alter and tp.offset < 0:
            raise ValueError(f"{tp}: the offset to set must be >= 0")
        if not alter and tp.offset != OFFSET_INVALID:
            raise ValueError(f"{tp}: give no offset when listing offsets")
    return item


# -- the operations ------------------------------------------------------------------------

def _exists(groups: ConsumerGroups, group: str) -> bool:
    return groups.exists(group)


def _state(description: GroupDescription) -> ConsumerGroupState:
    return ConsumerGroupState.from_kstream(description.state)


def list_groups(groups: ConsumerGroups, states: set[ConsumerGroupState],
                group_types: set[ConsumerGroupType]) -> ListConsumerGroupsResult:
    valid = []
    if group_types and ConsumerGroupType.CLASSIC not in group_types:
        return ListConsumerGroupsResult([])
    for group in groups.list_groups():
        description = groups.describe(group)
        state = _state(description)
        if states and state not in states:
            continue
        valid.append(ConsumerGroupListing(group, not description.protocol_type, state,
                                          ConsumerGroupType.CLASSIC))
    return ListConsumerGroupsResult(valid)


def describe_group(groups: ConsumerGroups, group: str) -> ConsumerGroupDescription:
    if not _exists(groups, group):
        raise GroupNotFoundError(f"consumer group {group!r} does not exist (no members, no "
                                 "committed offsets); list groups with list_consumer_groups()")
    description = groups.describe(group)
    members = [MemberDescription(m.member_id, m.client_id, m.host,
                                 MemberAssignment([TopicPartition(t, p) for t, p in m.assignment]),
                                 m.instance_id)
               for m in description.members]
    return ConsumerGroupDescription(group, not description.protocol_type, members,
                                    description.protocol or "", _state(description))


def delete_group(groups: ConsumerGroups, group: str) -> None:
    if not _exists(groups, group):
        raise GroupNotFoundError(f"consumer group {group!r} does not exist; nothing to delete")
    groups.delete(group)


def committed_offsets(groups: ConsumerGroups, request: ConsumerGroupTopicPartitions,
                      require_stable: bool = False) -> ConsumerGroupTopicPartitions:
    """The group's committed offsets (all, or those asked for; OFFSET_INVALID if none). With
    ``require_stable``, an open transaction carrying offsets for the group is waited for
    (Kafka's UNSTABLE_OFFSET_COMMIT). Decided ones read as committed; nothing is written."""
    committed = (groups.committed(request.group_id, require_stable=require_stable)
                 if _exists(groups, request.group_id) else {})
    wanted = request.topic_partitions
    keys = sorted(committed) if wanted is None else [(tp.topic, tp.partition) for tp in wanted]
    existing = set(groups.cluster.list_topics())
    result = []
    for topic, partition in keys:
        row = committed.get((topic, partition))
        tp = TopicPartition(topic, partition, row.offset if row else OFFSET_INVALID,
                            row.metadata if row else None, row.leader_epoch if row else None)
        if topic not in existing:
            tp.error = kafka_error("UNKNOWN_TOPIC_OR_PART", f"topic {topic!r} does not exist")
        result.append(tp)
    return ConsumerGroupTopicPartitions(request.group_id, result)


def alter_offsets(groups: ConsumerGroups, request: ConsumerGroupTopicPartitions
                  ) -> ConsumerGroupTopicPartitions:
    """Set the group's offsets (an operator's reset: refused while members are active)."""
    assert request.topic_partitions is not None  # checked by check_offsets_request
    for tp in request.topic_partitions:
        groups.cluster.topic(tp.topic)  # TopicNotFoundError before anything is written
    groups.reset_offsets(request.group_id, {(tp.topic, tp.partition): tp.offset
                                            for tp in request.topic_partitions})
    return ConsumerGroupTopicPartitions(
        request.group_id, [TopicPartition(tp.topic, tp.partition, tp.offset) for tp in request.topic_partitions])


def group_metadata(groups: ConsumerGroups, group: str | None) -> list[GroupMetadata]:
    """The deprecated ``list_groups`` shape: every group (or the one named)."""
    names = groups.list_groups() if group is None else [group]
    result = []
    for name in names:
        if group is not None and not _exists(groups, name):
            raise GroupNotFoundError(f"consumer group {name!r} does not exist")
        description = groups.describe(name)
        members = [GroupMember(m.member_id, m.client_id, m.host) for m in description.members]
        result.append(GroupMetadata(None, name, None, description.state, description.protocol_type,
                                    description.protocol or "", members))
    return result

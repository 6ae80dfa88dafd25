"""kstream.admin: confluent-kafka's ``confluent_kafka.admin`` for an embedded cluster.

``AdminClient`` (and kstream's older name ``Admin``) with the value types its
calls take and return. Modules: ``client`` (the AdminClient), ``metadata``
(list_topics: ClusterMetadata and friends; ``cluster_metadata`` for the
Producer and Consumer), ``topics``, ``config``, ``groups``, ``offsets``,
``elections``, ``resource``, and ``acl`` / ``scram`` (types of calls kstream
does not support on purpose). Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kstream._lazy import lazy_exports

if TYPE_CHECKING:
    from kstream._model import (
        ConsumerGroupState,
        ConsumerGroupTopicPartitions,
        ConsumerGroupType,
        ElectionType,
        IsolationLevel,
        Node,
        TopicCollection,
        TopicPartitionInfo,
    )
    from kstream.client.admin.acl import AclBinding, AclBindingFilter, AclOperation, AclPermissionType
    from kstream.client.admin.client import Admin, AdminClient
    from kstream.client.admin.config import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource
    from kstream.client.admin.groups import (
        ConsumerGroupDescription,
        ConsumerGroupListing,
        ListConsumerGroupsResult,
        MemberAssignment,
        MemberDescription,
    )
    from kstream.client.admin.offsets import DeletedRecords, ListOffsetsResultInfo, OffsetSpec
    from kstream.client.admin.resource import ResourcePatternType, ResourceType
    from kstream.client.admin.scram import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialAlteration,
        UserScramCredentialDeletion,
        UserScramCredentialsDescription,
        UserScramCredentialUpsertion,
    )
    from kstream.client.admin.topics import (
        LogDirDescription,
        NewPartitions,
        NewTopic,
        PartitionDetails,
        TopicDescription,
        TopicDetails,
    )
    from kstream.client.cluster_metadata import (
        BrokerMetadata,
        ClusterMetadata,
        DescribeClusterResult,
        GroupMember,
        GroupMetadata,
        PartitionMetadata,
        TopicMetadata,
        cluster_metadata,
    )
    from kstream.error import KafkaError, KafkaException
    from kstream.errors import NotSupportedError
    from kstream.message import TopicPartition

_MODULES = {
    "kstream._model": ["ConsumerGroupState", "ConsumerGroupTopicPartitions", "ConsumerGroupType",
                       "ElectionType", "IsolationLevel", "Node", "TopicCollection", "TopicPartitionInfo"],
    "kstream.error": ["KafkaError", "KafkaException"],
    "kstream.errors": ["NotSupportedError"],
    "kstream.client.admin.acl": ["AclBinding", "AclBindingFilter", "AclOperation", "AclPermissionType"],
    "kstream.client.admin.client": ["Admin", "AdminClient"],
    "kstream.client.admin.config": ["AlterConfigOpType", "ConfigEntry", "ConfigResource", "ConfigSource"],
    "kstream.client.admin.groups": ["ConsumerGroupDescription", "ConsumerGroupListing", "ListConsumerGroupsResult",
                             "MemberAssignment", "MemberDescription"],
    "kstream.client.cluster_metadata": ["BrokerMetadata", "ClusterMetadata", "DescribeClusterResult", "GroupMember",
                               "GroupMetadata", "PartitionMetadata", "TopicMetadata", "cluster_metadata"],
    "kstream.client.admin.offsets": ["DeletedRecords", "ListOffsetsResultInfo", "OffsetSpec"],
    "kstream.client.admin.resource": ["ResourcePatternType", "ResourceType"],
    "kstream.client.admin.scram": ["ScramCredentialInfo", "ScramMechanism", "UserScramCredentialAlteration",
                            "UserScramCredentialDeletion", "UserScramCredentialUpsertion",
                            "UserScramCredentialsDescription"],
    "kstream.client.admin.topics": ["LogDirDescription", "NewPartitions", "NewTopic", "PartitionDetails",
                             "TopicDescription", "TopicDetails"],
    "kstream.message": ["TopicPartition"],
}
# confluent's admin module also exposes some model names under underscore names (its
# tests import ``_ElectionType``).
_ALIASES = {"_ConsumerGroupType": ("kstream._model", "ConsumerGroupType"),
            "_ConsumerGroupState": ("kstream._model", "ConsumerGroupState"),
            "_ElectionType": ("kstream._model", "ElectionType"),
            "_TopicCollection": ("kstream._model", "TopicCollection"),
            "_IsolationLevel": ("kstream._model", "IsolationLevel"),
            "_TopicPartition": ("kstream.message", "TopicPartition")}

__all__ = [
    "AclBinding", "AclBindingFilter", "AclOperation", "AclPermissionType", "Admin", "AdminClient",
    "AlterConfigOpType", "BrokerMetadata", "ClusterMetadata", "ConfigEntry", "ConfigResource",
    "ConfigSource", "ConsumerGroupDescription", "ConsumerGroupListing", "ConsumerGroupState",
    "ConsumerGroupTopicPartitions", "ConsumerGroupType", "DeletedRecords", "DescribeClusterResult",
    "ElectionType", "GroupMember", "GroupMetadata", "IsolationLevel", "KafkaError", "KafkaException",
    "ListConsumerGroupsResult", "ListOffsetsResultInfo", "LogDirDescription", "MemberAssignment",
    "MemberDescription", "NewPartitions", "NewTopic", "Node", "NotSupportedError", "OffsetSpec",
    "PartitionDetails", "PartitionMetadata", "ResourcePatternType", "ResourceType",
    "ScramCredentialInfo", "ScramMechanism", "TopicCollection", "TopicDescription", "TopicDetails",
    "TopicMetadata", "TopicPartition", "TopicPartitionInfo", "UserScramCredentialAlteration",
    "UserScramCredentialDeletion", "UserScramCredentialUpsertion",
    "UserScramCredentialsDescription", "cluster_metadata",
]

_lazy_getattr, __dir__ = lazy_exports(
    __name__, {name: module for module, names in _MODULES.items() for name in names}, __all__)


def __getattr__(name: str) -> object:
    if name in _ALIASES:
        import importlib

        module, real = _ALIASES[name]
        return getattr(importlib.import_module(module), real)
    return _lazy_getattr(name)

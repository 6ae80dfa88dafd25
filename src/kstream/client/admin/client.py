"""AdminClient: confluent-kafka's admin API over an embedded kstream cluster.

Every call works on the cluster's files and metadata store before it returns;
results come as confluent's do (``{key: Future}`` or one Future, already done:
``result()`` returns the value or raises the operation's error). Request errors
(wrong types, empty lists, negative timeouts) raise at once, as confluent's
TypeError/ValueError. ``request_timeout`` / ``operation_timeout`` are checked and
otherwise unused (nothing waits on a network). Reads never create anything.

Only :meth:`create_topics` creates a cluster: the first one on a new path
creates it with the broker-side settings in the config (``log.dirs``,
``num.partitions``, ...). Every other call on a path that holds no cluster
fails with :class:`ClusterNotFoundError` and writes nothing.

Besides confluent's calls, kstream's operator calls: :meth:`describe_topic`,
:meth:`describe_log_dirs`, log dirs offline/online, preferred leaders,
replica sync, reassignment and verification (what the ``kstream`` CLI runs).
Not thread-safe: use one AdminClient per thread.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

import pyarrow as pa

from kstream._model import ConsumerGroupState, ConsumerGroupType, ElectionType, IsolationLevel, TopicCollection
from kstream.client.admin import config as configs
from kstream.client.admin import elections, groups, offsets
from kstream.client.admin import topics as topic_ops
from kstream.client.admin._futures import check_bool, check_list, check_name, check_timeout, completed, futures_for
from kstream.client.admin._unsupported import unsupported_method
from kstream.client.admin.acl import AclOperation, supported_operations
from kstream.client.admin.config import ConfigResource
from kstream.client.admin.offsets import OffsetSpec
from kstream.client.admin.resource import ResourceType
from kstream.client.admin.topics import NewPartitions, NewTopic
from kstream.client.callbacks import check_sasl_credentials
from kstream.client.cluster_metadata import (
    ClusterMetadata,
    DescribeClusterResult,
    GroupMetadata,
    cluster_metadata,
    log_dir_nodes,
)
from kstream.client.config import client_options
from kstream.config.options import Option
from kstream.errors import ClusterNotFoundError
from kstream.groups import ConsumerGroups
from kstream.log.cluster import replica_ops
from kstream.log.cluster.cluster import Cluster, check_partition_count, check_topic_name
from kstream.log.cluster.metadata import PartitionInfo, TopicInfo
from kstream.message import TopicPartition

_ADMIN_OPTIONS = {
    "cluster": Option("cluster", "str", None, "Cluster path (default: $KSTREAM_CLUSTER or ./data)."),
    "client.id": Option("client.id", "str", "kstream", "Name of this client."),
}

# confluent-kafka's messages for a call on a closed client (its list_topics and list_groups
# come from the handle the Producer and Consumer share, hence the other wording).
_CLOSED = "AdminClient has been closed"
_HANDLE_CLOSED = "Handle has been closed"

_Method = TypeVar("_Method", bound=Callable[..., Any])


def _when_open(message: str) -> Callable[[_Method], _Method]:
    """Decorate a public call: RuntimeError(``message``) once the client is closed, before
    the call checks its arguments (as confluent-kafka's AdminClient does)."""
    def decorate(method: _Method) -> _Method:
        @functools.wraps(method)
        def checked(self: AdminClient, *args: Any, **kwargs: Any) -> Any:
            if self._closed:
                raise RuntimeError(message)
            return method(self, *args, **kwargs)
        return checked  # type: ignore[return-value]
    return decorate


class AdminClient:
    """Administration of one cluster, confluent-kafka's ``AdminClient`` (see the module doc).

    After :meth:`close` (or leaving a ``with`` block) every call raises RuntimeError, as
    confluent-kafka's does; so does a subclass's instance whose ``__init__`` never called
    this one (the class-level ``_closed`` below: nothing was opened)."""

    _closed = True

    def __init__(self, conf: Mapping[str, Any] | None, **kwargs: Any):
        options, self._broker = client_options(_ADMIN_OPTIONS, conf, kwargs, "an AdminClient")
        self._path: str | None = options["cluster"]
        self._config: dict[str, str] = options["config"]
        self._opened: Cluster | None = None
        self._groups: ConsumerGroups | None = None
        try:
            self._opened = Cluster.open(self._path, self._broker)
        except ClusterNotFoundError:
            pass  # create_topics may create it; any other call raises (see `cluster`)
        self._closed = False

    @property
    @_when_open(_CLOSED)
    def cluster(self) -> Cluster:
        """The open cluster; ClusterNotFoundError if there is none (yet) at the path."""
        if self._opened is None:
            self._opened = Cluster.open(self._path, self._broker)
        return self._opened

    def _consumer_groups(self) -> ConsumerGroups:
        if self._groups is None:
            self._groups = ConsumerGroups(self.cluster)
        return self._groups

    @property
    def config(self) -> dict[str, str]:
        """The effective configuration, as confluent-kafka's read-only ``config``: a new dict
        of strings (defaults included, callbacks left out; see kstream.client.config.config_dump)."""
        return dict(self._config)

    @_when_open(_CLOSED)
    def poll(self, timeout: float | None = None) -> int:
        """Serve callbacks: an AdminClient has none (its futures are done when returned)."""
        return 0

    # -- metadata ----------------------------------------------------------------------------

    @_when_open(_HANDLE_CLOSED)
    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        """The cluster's topics (or one topic, UNKNOWN_TOPIC_OR_PART if missing) and log dirs."""
        return cluster_metadata(self.cluster, topic)

    @_when_open(_HANDLE_CLOSED)
    def list_groups(self, group: str | None = None, timeout: float = -1) -> list[GroupMetadata]:
        """Deprecated in confluent (use list_consumer_groups); every group, or the one named."""
        return groups.group_metadata(self._consumer_groups(), group)

    @_when_open(_CLOSED)
    def describe_cluster(self, request_timeout: float | None = None,
                         include_authorized_operations: bool = False) -> Future[DescribeClusterResult]:
        check_timeout(request_timeout, "request_timeout")
        check_bool(include_authorized_operations, "include_authorized_operations")
        return completed(lambda: DescribeClusterResult(
            None, list(log_dir_nodes(self.cluster).values()), self.cluster.cluster_id,
            _operations(ResourceType.BROKER, include_authorized_operations)))

    # -- topics ------------------------------------------------------------------------------

    @_when_open(_CLOSED)
    def create_topics(self, new_topics: list[NewTopic], operation_timeout: float | None = None,
                      request_timeout: float | None = None, validate_only: bool = False
                      ) -> dict[str, Future[None]]:
        """Create topics (and the cluster, with this client's broker-side settings, if the path
        holds none and a topic passes the checks that need no cluster). Futures hold None."""
        check_list(new_topics, "new_topics", NewTopic)
        _check_request(operation_timeout, request_timeout, validate_only)
        return futures_for([t.topic for t in new_topics],
                           lambda name: self._create_topic(next(t for t in new_topics if t.topic == name),
                                                           validate_only))

    def _create_topic(self, new: NewTopic, validate_only: bool) -> None:
        if self._opened is None:
            check_topic_name(new.topic)  # refuse what needs no cluster to refuse before making one
            if new.num_partitions != -1:
                check_partition_count(new.num_partitions, "num_partitions")
            if validate_only:
                return  # the rest needs a cluster; validation creates none
            self._opened = Cluster.open(self._path, self._broker, create=True)
        self._opened.create_topic(new.topic, new.num_partitions, new.replication_factor, new.config,
                                  new.schema, placements=new.placements(), validate_only=validate_only)

    @_when_open(_CLOSED)
    def delete_topics(self, topics: list[str], operation_timeout: float | None = None,
                      request_timeout: float | None = None) -> dict[str, Future[None]]:
        check_list(topics, "topics", str)
        _check_request(operation_timeout, request_timeout, False)
        return futures_for(topics, lambda name: self.cluster.delete_topic(name))

    @_when_open(_CLOSED)
    def create_partitions(self, new_partitions: list[NewPartitions], operation_timeout: float | None = None,
                          request_timeout: float | None = None, validate_only: bool = False
                          ) -> dict[str, Future[None]]:
        check_list(new_partitions, "new_partitions", NewPartitions)
        _check_request(operation_timeout, request_timeout, validate_only)
        by_topic = {p.topic: p for p in new_partitions}
        return futures_for(by_topic, lambda name: self._create_partitions(by_topic[name], validate_only))

    def _create_partitions(self, new: NewPartitions, validate_only: bool) -> None:
        self.cluster.create_partitions(new.topic, new.new_total_count, placements=new.placements(),
                                       validate_only=validate_only)

    @_when_open(_CLOSED)
    def describe_topics(self, topics: TopicCollection, request_timeout: float | None = None,
                        include_authorized_operations: bool = False
                        ) -> dict[str, Future[topic_ops.TopicDescription]]:
        if not isinstance(topics, TopicCollection):
            raise TypeError(f"describe_topics takes a TopicCollection, got {type(topics).__name__}")
        check_timeout(request_timeout, "request_timeout")
        check_bool(include_authorized_operations, "include_authorized_operations")
        names = [check_name(name, "a topic name") for name in topics.topic_names]
        operations = _operations(ResourceType.TOPIC, include_authorized_operations)
        return futures_for(names, lambda name: _with_operations(topic_ops.describe(self.cluster, name),
                                                                operations))

    # -- configs -----------------------------------------------------------------------------

    @_when_open(_CLOSED)
    def describe_configs(self, resources: list[ConfigResource], request_timeout: float | None = None
                         ) -> dict[ConfigResource, Future[dict[str, configs.ConfigEntry]]]:
        check_list(resources, "resources", ConfigResource)
        check_timeout(request_timeout, "request_timeout")
        return futures_for(resources, lambda r: configs.describe(self.cluster, r))

    @_when_open(_CLOSED)
    def alter_configs(self, resources: list[ConfigResource], request_timeout: float | None = None,
                      validate_only: bool = False) -> dict[ConfigResource, Future[None]]:
        """Replace each resource's settings with its ``set_config`` values (the rest revert)."""
        check_list(resources, "resources", ConfigResource)
        _check_request(None, request_timeout, validate_only)
        return futures_for(resources, lambda r: configs.alter(self.cluster, r, validate_only))

    @_when_open(_CLOSED)
    def incremental_alter_configs(self, resources: list[ConfigResource], request_timeout: float | None = None,
                                  validate_only: bool = False) -> dict[ConfigResource, Future[None]]:
        check_list(resources, "resources", ConfigResource)
        _check_request(None, request_timeout, validate_only)
        for resource in resources:
            configs.check_incremental(resource)
        return futures_for(resources, lambda r: configs.alter_incremental(self.cluster, r, validate_only))

    # -- consumer groups ---------------------------------------------------------------------

    @_when_open(_CLOSED)
    def list_consumer_groups(self, request_timeout: float | None = None,
                             states: set[ConsumerGroupState] | None = None,
                             group_types: set[ConsumerGroupType] | None = None
                             ) -> Future[groups.ListConsumerGroupsResult]:
        check_timeout(request_timeout, "request_timeout")
        wanted_states = groups.check_enum_set(states, ConsumerGroupState, "states")
        wanted_types = groups.check_enum_set(group_types, ConsumerGroupType, "group_types")
        return completed(lambda: groups.list_groups(self._consumer_groups(), wanted_states, wanted_types))

    @_when_open(_CLOSED)
    def describe_consumer_groups(self, group_ids: list[str], request_timeout: float | None = None,
                                 include_authorized_operations: bool = False
                                 ) -> dict[str, Future[groups.ConsumerGroupDescription]]:
        check_list(group_ids, "group_ids", str)
        check_timeout(request_timeout, "request_timeout")
        check_bool(include_authorized_operations, "include_authorized_operations")
        operations = _operations(ResourceType.GROUP, include_authorized_operations)
        return futures_for(group_ids, lambda g: _with_operations(
            groups.describe_group(self._consumer_groups(), g), operations))

    @_when_open(_CLOSED)
    def delete_consumer_groups(self, group_ids: list[str], request_timeout: float | None = None
                               ) -> dict[str, Future[None]]:
        check_list(group_ids, "group_ids", str)
        check_timeout(request_timeout, "request_timeout")
        return futures_for(group_ids, lambda g: groups.delete_group(self._consumer_groups(), g))

    @_when_open(_CLOSED)
    def list_consumer_group_offsets(self, list_consumer_group_offsets_request: list[Any],
                                    require_stable: bool = False, request_timeout: float | None = None
                                    ) -> dict[str, Future[Any]]:
        request = groups.check_offsets_request(list_consumer_group_offsets_request, alter=False)
        check_bool(require_stable, "require_stable")
        check_timeout(request_timeout, "request_timeout")
        return futures_for([request.group_id],
                           lambda _: groups.committed_offsets(self._consumer_groups(), request, require_stable))

    @_when_open(_CLOSED)
    def alter_consumer_group_offsets(self, alter_consumer_group_offsets_request: list[Any],
                                     request_timeout: float | None = None) -> dict[str, Future[Any]]:
        request = groups.check_offsets_request(alter_consumer_group_offsets_request, alter=True)
        check_timeout(request_timeout, "request_timeout")
        return futures_for([request.group_id], lambda _: groups.alter_offsets(self._consumer_groups(), request))

    # -- offsets and records -----------------------------------------------------------------

    @_when_open(_CLOSED)
    def list_offsets(self, topic_partition_offsets: dict[TopicPartition, OffsetSpec],
                     isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
                     request_timeout: float | None = None
                     ) -> dict[TopicPartition, Future[offsets.ListOffsetsResultInfo]]:
        check_timeout(request_timeout, "request_timeout")
        requests = offsets.check_list_offsets(topic_partition_offsets, isolation_level)
        return futures_for(requests, lambda tp: offsets.list_offset(self.cluster, tp, requests[tp],
                                                                    isolation_level))

    @_when_open(_CLOSED)
    def delete_records(self, topic_partition_offsets: list[TopicPartition], request_timeout: float | None = None,
                       operation_timeout: float | None = None
                       ) -> dict[TopicPartition, Future[offsets.DeletedRecords]]:
        """Move each partition's log start up to its offset (whole segments; see offsets.py)."""
        requests = offsets.check_delete_records(topic_partition_offsets)
        _check_request(operation_timeout, request_timeout, False)
        return futures_for(requests, lambda tp: offsets.delete_records(self.cluster, tp))

    @_when_open(_CLOSED)
    def elect_leaders(self, election_type: ElectionType, partitions: list[TopicPartition] | None = None,
                      request_timeout: float | None = None, operation_timeout: float | None = None
                      ) -> Future[dict[TopicPartition, Any]]:
        """PREFERRED or UNCLEAN election on ``partitions`` (None: all); see elections.py."""
        if not isinstance(election_type, ElectionType):
            raise TypeError(f"election_type must be an ElectionType, got {election_type!r}")
        if partitions is not None:
            elections.check_partitions(partitions)
        _check_request(operation_timeout, request_timeout, False)
        return completed(lambda: elections.elect(self.cluster, election_type, partitions))

    # -- not supported by kstream on purpose (see _unsupported.py) ----------------------------

    create_acls = _when_open(_CLOSED)(unsupported_method("create_acls"))
    describe_acls = _when_open(_CLOSED)(unsupported_method("describe_acls"))
    delete_acls = _when_open(_CLOSED)(unsupported_method("delete_acls"))
    describe_user_scram_credentials = _when_open(_CLOSED)(unsupported_method("describe_user_scram_credentials"))
    alter_user_scram_credentials = _when_open(_CLOSED)(unsupported_method("alter_user_scram_credentials"))
    describe_client_quotas = _when_open(_CLOSED)(unsupported_method("describe_client_quotas"))
    alter_client_quotas = _when_open(_CLOSED)(unsupported_method("alter_client_quotas"))

    @_when_open(_CLOSED)
    def set_sasl_credentials(self, username: str, password: str) -> None:
        """Accepted and ignored, as on the Producer and Consumer: an embedded log has no broker
        to authenticate to (access is the file system's)."""
        check_sasl_credentials(username, password)

    # -- kstream's operator calls ------------------------------------------------------------

    @_when_open(_CLOSED)
    def describe_topic(self, name: str) -> topic_ops.TopicDetails:
        """kstream's fuller description: offsets, sizes, per-replica log ends, config, schema."""
        return topic_ops.details(self.cluster, name)

    @_when_open(_CLOSED)
    def alter_topic_config(self, topic: str, config: Mapping[str, Any]) -> TopicInfo:
        """Set topic overrides; a value of None removes one (back to the cluster default)."""
        return self.cluster.alter_topic_config(topic, config)

    @_when_open(_CLOSED)
    def evolve_schema(self, topic: str, schema: pa.Schema) -> TopicInfo:
        """Add nullable columns at the end of a typed topic's schema."""
        return self.cluster.evolve_schema(topic, schema)

    @_when_open(_CLOSED)
    def describe_log_dirs(self) -> list[topic_ops.LogDirDescription]:
        return topic_ops.log_dirs(self.cluster)

    @_when_open(_CLOSED)
    def take_log_dir_offline(self, log_dir_id: int) -> int:
        """Controlled shutdown of a log dir; returns partitions moved off it."""
        return self.cluster.take_log_dir_offline(log_dir_id)

    @_when_open(_CLOSED)
    def set_log_dir_online(self, log_dir_id: int) -> None:
        self.cluster.set_log_dir_online(log_dir_id)

    @_when_open(_CLOSED)
    def elect_preferred_leaders(self, topics: list[str] | None = None) -> int:
        """Preferred leader election by topic; returns partitions whose leader changed."""
        return replica_ops.elect_preferred_leaders(self.cluster, topics)

    @_when_open(_CLOSED)
    def sync_replicas(self, topics: list[str] | None = None) -> dict[str, int]:
        """Catch up out-of-sync replicas on online log dirs (what `kstream replicator` runs)."""
        return replica_ops.sync_all(self.cluster, topics)

    @_when_open(_CLOSED)
    def reassign_partition(self, topic: str, partition: int, replicas: list[int]) -> PartitionInfo:
        return replica_ops.reassign(self.cluster, topic, partition, replicas)

    @_when_open(_CLOSED)
    def verify_replicas(self, topics: list[str] | None = None) -> list[replica_ops.ReplicaMismatch]:
        return replica_ops.verify_replicas(self.cluster, topics)

    def close(self) -> None:
        """Release the cluster's files; every later call raises RuntimeError. A second
        close() does nothing."""
        if self._closed:
            return
        self._closed = True
        if self._groups is not None:
            self._groups.close()
            self._groups = None
        if self._opened is not None:
            self._opened.close()

    def __len__(self) -> int:
        """Requests still waiting for an answer: none, every call is done when it returns."""
        return 0

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Admin(AdminClient):
    """kstream's original name for :class:`AdminClient`; its config may be left out
    (then $KSTREAM_CLUSTER or ./data), where confluent's AdminClient requires one."""

    def __init__(self, conf: Mapping[str, Any] | None = None, **kwargs: Any):
        super().__init__(conf, **kwargs)



def _operations(resource_type: ResourceType, include: bool) -> list[AclOperation] | None:
    """``authorized_operations`` of a describe result: None unless asked for, as in confluent."""
    return supported_operations(resource_type) if include else None


_Described = TypeVar("_Described", topic_ops.TopicDescription, groups.ConsumerGroupDescription)


def _with_operations(described: _Described, operations: list[AclOperation] | None) -> _Described:
    described.authorized_operations = None if operations is None else list(operations)
    return described


def _check_request(operation_timeout: Any, request_timeout: Any, validate_only: Any) -> None:
    check_timeout(operation_timeout, "operation_timeout")
    check_timeout(request_timeout, "request_timeout")
    check_bool(validate_only, "validate_only")

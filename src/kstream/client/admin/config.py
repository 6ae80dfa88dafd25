"""Configs as confluent's describe_configs / alter_configs / incremental_alter_configs see them.

Two kinds of resource have configs in kstream:

* ``TOPIC`` *name*: the topic's settings (``retention.ms``, ``segment.bytes``...).
  An override is a DYNAMIC_TOPIC_CONFIG; an unset one shows the cluster setting
  it falls back to (STATIC_BROKER_CONFIG when the cluster was created with it,
  else DEFAULT_CONFIG). ``alter_configs`` replaces the overrides (what it leaves
  out goes back to the default, as Kafka's AlterConfigs does);
  ``incremental_alter_configs`` SETs and DELETEs single ones (APPEND/SUBTRACT only
  for list-valued settings, and kstream's topic settings have none).
* ``BROKER`` *log dir id*: the cluster's broker-side settings, shared by every log
  dir and fixed when the cluster is created: described as read-only; altering
  them is refused with a ConfigError saying so.

GROUP configs are not supported (NotSupportedError through the future).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any

from kstream.client.admin._unsupported import NotSupportedError
from kstream.client.admin.resource import ResourceType
from kstream.config.options import CLUSTER_OPTIONS, TOPIC_DEFAULTS_FROM_CLUSTER, TOPIC_OPTIONS
from kstream.errors import ConfigError, InvalidConfigError
from kstream.log.cluster.cluster import raw_value, read_properties
from kstream.log.storage import format as fmt
from kstream.log.storage.log_config import LogConfig
from kstream.message import KafkaError

if TYPE_CHECKING:
    from kstream.log.cluster.cluster import Cluster


class ConfigSource(Enum):
    """Where a config value comes from (librdkafka's numbering)."""

    UNKNOWN_CONFIG = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    GROUP_CONFIG = 8


class AlterConfigOpType(Enum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class ConfigEntry:
    """One config: name, value and where it comes from; or, in incremental_alter_configs,
    one change (``incremental_operation``). Built without checks, as confluent's is: the
    call that takes it checks it."""

    def __init__(self, name: Any, value: Any, source: ConfigSource = ConfigSource.UNKNOWN_CONFIG,
                 is_read_only: bool = False, is_default: bool = False, is_sensitive: bool = False,
                 is_synonym: bool = False, synonyms: Mapping[str, ConfigEntry] | None = None,
                 incremental_operation: Any = None):
        self.name = name
        self.value = value
        self.source = source
        self.is_read_only = is_read_only
        self.is_default = is_default
        self.is_sensitive = is_sensitive
        self.is_synonym = is_synonym
        self.synonyms = dict(synonyms or {})
        self.incremental_operation = incremental_operation

    def __repr__(self) -> str:
        return f"ConfigEntry({self.name}=\"{self.value}\")"

    def __str__(self) -> str:
        return f"{self.name}=\"{self.value}\""


class ConfigResource:
    """A resource (type and name) with configs to set (alter_configs), changes to make
    (incremental_alter_configs), or, in results, the configs described."""

    def __init__(self, restype: Any, name: Any, set_config: Mapping[str, Any] | None = None,
                 described_configs: Mapping[str, ConfigEntry] | None = None,
                 error: KafkaError | None = None, incremental_configs: Any = None):
        self.restype = ResourceType.parse(restype, "ConfigResource restype")
        if name is None:
            raise ValueError("ConfigResource name must not be None")
        self.name = name
        self.set_config_dict: dict[str, Any] = dict(set_config or {})
        self.configs = dict(described_configs or {})
        self.error = error
        self.incremental_configs: Any = list(incremental_configs) if isinstance(
            incremental_configs, list) else (incremental_configs if incremental_configs is not None else [])

    def set_config(self, name: str, value: Any, overwrite: bool = True) -> None:
        if not overwrite and name in self.set_config_dict:
            return
        self.set_config_dict[name] = value

    def add_incremental_config(self, config_entry: Any) -> None:
        self.incremental_configs.append(config_entry)

    def __hash__(self) -> int:
        return hash((self.restype, self.name))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConfigResource) and (self.restype, self.name) == (other.restype, other.name)

    def __lt__(self, other: ConfigResource) -> bool:
        return (self.restype.value, str(self.name)) < (other.restype.value, str(other.name))

    def __len__(self) -> int:
        return len(self.set_config_dict)

    def __repr__(self) -> str:
        # confluent-kafka's shape: the enum as str() of a Python Enum prints it, ResourceType.TOPIC
        restype = f"ResourceType.{self.restype.name}"
        if self.error is not None:
            return f"ConfigResource({restype},{self.name},{self.error!r})"
        return f"ConfigResource({restype},{self.name})"


# -- request checks (raised at once, as confluent's TypeError/ValueError) --------------------

def check_incremental(resource: ConfigResource) -> None:
    """A resource's incremental changes must be a non-empty list of well-formed ConfigEntry."""
    changes = resource.incremental_configs
    if not isinstance(changes, list) or any(not isinstance(c, ConfigEntry) for c in changes):
        raise TypeError(f"{resource!r}: incremental_configs must be a list of ConfigEntry")
    if not changes:
        raise ValueError(f"{resource!r} has no incremental configs to apply")
    for change in changes:
        if not isinstance(change.name, str):
            raise TypeError(f"{resource!r}: a ConfigEntry name must be a string, got {change.name!r}")
        if not isinstance(change.incremental_operation, AlterConfigOpType):
            raise TypeError(f"{resource!r}: ConfigEntry {change.name!r} needs an incremental_operation "
                            f"of type AlterConfigOpType, got {change.incremental_operation!r}")


# -- the operations (their errors go through the futures) ------------------------------------

def _broker_settings(cluster: Cluster) -> set[str]:
    """The broker-side settings the cluster was created with (the rest are defaults)."""
    stored = read_properties(os.path.join(cluster.path, fmt.CLUSTER_PROPERTIES))
    return {name for name in stored if name in CLUSTER_OPTIONS}


def _check_broker(cluster: Cluster, resource: ConfigResource) -> None:
    ids = sorted(cluster.log_dir_paths())
    if str(resource.name) not in {str(i) for i in ids} | {""}:
        raise ConfigError(f"no broker {resource.name!r}: kstream's brokers are its log dirs {ids} "
                          "(all share the cluster's settings)")


def _cluster_entry(cluster: Cluster, name: str, explicit: set[str], synonym: bool = False) -> ConfigEntry:
    source = ConfigSource.STATIC_BROKER_CONFIG if name in explicit else ConfigSource.DEFAULT_CONFIG
    return ConfigEntry(name, raw_value(cluster.config[name]), source, is_read_only=True,
                       is_default=source is ConfigSource.DEFAULT_CONFIG, is_synonym=synonym)


def describe(cluster: Cluster, resource: ConfigResource) -> dict[str, ConfigEntry]:
    """Every config of a TOPIC or BROKER resource, name -> ConfigEntry."""
    explicit = _broker_settings(cluster)
    if resource.restype is ResourceType.BROKER:
        _check_broker(cluster, resource)
        return {name: _cluster_entry(cluster, name, explicit) for name in CLUSTER_OPTIONS}
    overrides = _topic(cluster, resource).config
    entries = {}
    for name in TOPIC_OPTIONS:
        broker_name = TOPIC_DEFAULTS_FROM_CLUSTER.get(name)
        synonyms = {}
        if broker_name is not None:
            synonyms[broker_name] = _cluster_entry(cluster, broker_name, explicit, synonym=True)
        if name in overrides:
            entries[name] = ConfigEntry(name, overrides[name], ConfigSource.DYNAMIC_TOPIC_CONFIG,
                                        synonyms=synonyms)
        elif broker_name is not None:
            fallback = synonyms[broker_name]
            entries[name] = ConfigEntry(name, fallback.value, fallback.source,
                                        is_default=fallback.is_default, synonyms=synonyms)
        else:
            default = TOPIC_OPTIONS[name].default  # None: unset (tier.delta.path), as Kafka's null
            entries[name] = ConfigEntry(name, None if default is None else raw_value(default),
                                        ConfigSource.DEFAULT_CONFIG, is_default=True)
    return entries


def alter(cluster: Cluster, resource: ConfigResource, validate_only: bool) -> None:
    """Replace a topic's overrides with ``resource``'s set_config (unset ones revert)."""
    current = _topic(cluster, resource).config
    wanted = {k: str(v) for k, v in resource.set_config_dict.items()}
    _apply(cluster, resource, {**dict.fromkeys(current), **wanted}, validate_only)


def alter_incremental(cluster: Cluster, resource: ConfigResource, validate_only: bool) -> None:
    """SET / DELETE (/ APPEND / SUBTRACT for list settings) single topic settings."""
    current = _topic(cluster, resource).config
    changes: dict[str, str | None] = {}
    for change in resource.incremental_configs:
        if change.name in changes:
            raise ConfigError(f"{resource!r}: duplicate ConfigEntry {change.name!r}; give each "
                              "config once per call")
        operation = change.incremental_operation
        if operation is AlterConfigOpType.SET:
            changes[change.name] = None if change.value is None else str(change.value)
        elif operation is AlterConfigOpType.DELETE:
            changes[change.name] = None
        else:
            option = TOPIC_OPTIONS.get(change.name)
            # "set" is Kafka's LIST of choices (cleanup.policy): APPEND and SUBTRACT work on it
            # as in Kafka, the result is then checked.
            if option is None or option.kind not in ("list", "set"):
                raise ConfigError(f"{operation.name} needs a list-valued config; {change.name!r} "
                                  "is not one (use SET)")
            base = current.get(change.name)
            if base is None:  # Kafka appends to / subtracts from the default when unset
                base = option.default if isinstance(option.default, str) else ",".join(option.default or ())
            items = [v for v in str(base).split(",") if v]
            given = [v for v in str(change.value or "").split(",") if v]
            items = items + [v for v in given if v not in items] if operation is AlterConfigOpType.APPEND \
                else [v for v in items if v not in given]
            changes[change.name] = ",".join(items) or None
    _apply(cluster, resource, changes, validate_only)


def _apply(cluster: Cluster, resource: ConfigResource, changes: Mapping[str, str | None],
           validate_only: bool) -> None:
    """Check and store the changes; a bad name or value is Kafka's INVALID_CONFIG."""
    try:
        _check_and_store(cluster, resource, changes, validate_only)
    except InvalidConfigError:
        raise
    except ConfigError as err:
        raise InvalidConfigError(str(err)) from err


def _check_and_store(cluster: Cluster, resource: ConfigResource, changes: Mapping[str, str | None],
                     validate_only: bool) -> None:
    if validate_only:
        merged = {**_topic(cluster, resource).config, **changes}
        unknown = [k for k in changes if k not in TOPIC_OPTIONS]
        if unknown:
            raise ConfigError(f"unknown topic config(s) {unknown}; topic configs are {sorted(TOPIC_OPTIONS)}")
        LogConfig.from_options({k: v for k, v in merged.items() if v is not None}, cluster.config)
        return
    cluster.alter_topic_config(str(resource.name), changes)


def _topic(cluster: Cluster, resource: ConfigResource) -> Any:
    """The TopicInfo of a TOPIC resource; other types are refused (read-only / unsupported)."""
    if resource.restype is ResourceType.TOPIC:
        return cluster.topic(str(resource.name))
    if resource.restype is ResourceType.BROKER:
        _check_broker(cluster, resource)
        raise ConfigError(f"{resource!r}: broker-side settings are fixed when the cluster is "
                          "created (cluster.properties); create a new cluster to change them, or "
                          "override the topic-level setting with a TOPIC resource")
    if resource.restype is ResourceType.GROUP:
        raise NotSupportedError(f"{resource!r}: group configs are not supported by kstream; set "
                                "session.timeout.ms etc. in the consumer's config")
    raise ConfigError(f"{resource!r}: kstream has configs for TOPIC and BROKER resources only")

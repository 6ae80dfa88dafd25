"""The effective configuration of one topic's logs (topic overrides over cluster defaults)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kstream.config.options import (
    CLUSTER_OPTIONS,
    TOPIC_DEFAULTS_FROM_CLUSTER,
    TOPIC_OPTIONS,
    parse_options,
)
from kstream.errors import ConfigError


@dataclass(frozen=True)
class LogConfig:
    """Typed, validated settings a partition log obeys. Picklable, immutable."""

    cleanup_policy: str = "delete"
    compression_type: str = "producer"
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    retention_check_interval_ms: int = 300_000
    segment_bytes: int = 1 << 30
    segment_ms: int = 7 * 24 * 3600 * 1000
    index_interval_bytes: int = 4096
    flush_messages: int = 9223372036854775807
    flush_ms: int = 9223372036854775807
    message_max_bytes: int = 8 * 1024 * 1024
    message_timestamp_type: str = "CreateTime"
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    replica_fetch_max_bytes: int = 1 << 20
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = 9223372036854775807
    delete_retention_ms: int = 24 * 3600 * 1000

    def __post_init__(self) -> None:
        # Kafka's LogConfig.validate refuses the same pair (InvalidConfigurationException).
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            raise ConfigError(
                f"option 'min.compaction.lag.ms' ({self.min_compaction_lag_ms}) is above "
                f"'max.compaction.lag.ms' ({self.max_compaction_lag_ms}); a record cannot have to wait "
                "longer before cleaning than the most it may wait: lower the first or raise the second")

    @property
    def compact(self) -> bool:
        """cleanup.policy has compact: the cleaner keeps the latest record per key; keys required."""
        return "compact" in self.cleanup_policy.split(",")

    @property
    def delete(self) -> bool:
        """cleanup.policy has delete: retention.ms / retention.bytes remove old segments."""
        return "delete" in self.cleanup_policy.split(",")

    @classmethod
    def from_options(cls, topic_config: Mapping[str, Any], cluster_config: Mapping[str, Any]
                     ) -> LogConfig:
        """Topic options (Kafka names) over the cluster's defaults; bad values raise ConfigError."""
        cluster = parse_options(CLUSTER_OPTIONS, cluster_config, what="a cluster")
        topic = parse_options(TOPIC_OPTIONS, topic_config, what="a topic")
        for topic_name, cluster_name in TOPIC_DEFAULTS_FROM_CLUSTER.items():
            if topic[topic_name] is None:
                topic[topic_name] = cluster[cluster_name]
        values = {name.replace(".", "_"): value for name, value in topic.items()}
        values["retention_check_interval_ms"] = cluster["log.retention.check.interval.ms"]
        values["replica_fetch_max_bytes"] = cluster["replica.fetch.max.bytes"]
        return cls(**values)

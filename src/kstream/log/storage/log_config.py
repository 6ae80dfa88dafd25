"""The effective configuration of one topic's logs (topic overrides over cluster defaults)."""

from __future__ import annotations

import os
import urllib.parse
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
    cleaner_io_max_bytes_per_second: float = 1.7976931348623157e308  # (cluster-wide; Kafka's unlimited)
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = 9223372036854775807
    delete_retention_ms: int = 24 * 3600 * 1000
    tier_delta_path: str | None = None
    tier_lag_ms: int = 10 * 60 * 1000
    tier_lag_bytes: int = 256 << 20

    def __post_init__(self) -> None:
        # Kafka's LogConfig.validate refuses the same pair (InvalidConfigurationException).
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            raise ConfigError(
                f"option 'min.compaction.lag.ms' ({self.min_compaction_lag_ms}) is above "
                f"'max.compaction.lag.ms' ({self.max_compaction_lag_ms}); a record cannot have to wait "
                "longer before cleaning than the most it may wait: lower the first or raise the second")
        if self.tier_delta_path is not None:
            tier_table_dir(self.tier_delta_path)  # a bad path raises ConfigError here
            if self.compact:
                raise ConfigError(
                    f"option 'tier.delta.path' ({self.tier_delta_path!r}) is set on a topic with "
                    f"cleanup.policy={self.cleanup_policy}: tiering a compacted topic is not built yet "
                    "(the cleaner rewrites segments the lake already holds); use cleanup.policy=delete "
                    "or remove tier.delta.path")

    @property
    def compact(self) -> bool:
        """cleanup.policy has compact: the cleaner keeps the latest record per key; keys required."""
        return "compact" in self.cleanup_policy.split(",")

    @property
    def delete(self) -> bool:
        """cleanup.policy has delete: retention.ms / retention.bytes remove old segments."""
        return "delete" in self.cleanup_policy.split(",")

    @property
    def tiered(self) -> bool:
        """tier.delta.path is set: sealed segments are copied to a Delta table and retention
        deletes only segments the table holds (docs/TIERING.md)."""
        return self.tier_delta_path is not None

    @property
    def tier_table_dir(self) -> str | None:
        """The local directory of the topic's Delta table (None: not tiered)."""
        return None if self.tier_delta_path is None else tier_table_dir(self.tier_delta_path)

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
        values["cleaner_io_max_bytes_per_second"] = cluster["log.cleaner.io.max.bytes.per.second"]
        return cls(**values)


def tier_table_dir(value: str) -> str:
    """The local directory ``tier.delta.path`` names: an absolute path or a ``file://`` URI
    (``file:///data/lake/t``); ConfigError for anything else (a relative path would move with
    the working directory of whoever runs the tierer; object stores are not built yet)."""
    text = value.strip()
    problem = None
    if not text or "\x00" in text:
        problem = "is empty or holds a NUL character"
    elif "://" in text or text.startswith("file:"):
        parsed = urllib.parse.urlparse(text)
        if parsed.scheme != "file":
            problem = (f"uses the scheme {parsed.scheme!r}: only local directories are supported yet "
                       "(an absolute path or a file:// URI)")
        elif parsed.netloc not in ("", "localhost"):
            problem = f"names the host {parsed.netloc!r}: a file:// URI must name a local path (file:///dir)"
        else:
            text = urllib.parse.unquote(parsed.path)
    if problem is None and not os.path.isabs(text):
        problem = "is not absolute: give an absolute directory path or a file:///... URI"
    if problem is None and os.path.normpath(text) == os.sep:
        problem = "is the root directory: give a directory of its own for the topic's table"
    if problem is not None:
        raise ConfigError(f"option 'tier.delta.path': {value!r} {problem}")
    return os.path.normpath(text)

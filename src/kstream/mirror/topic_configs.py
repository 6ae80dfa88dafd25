"""Topic configs that mean the same on both sides, and how their names translate.

A mirror creates a missing target topic with the source's partition count and the
source configs on the allow list below, under the target's name for them. As MM2's
DefaultConfigPropertyFilter does, it leaves out what belongs to the target cluster's
own operation: ``min.insync.replicas``, ``unclean.leader.election.enable``,
``message.timestamp.type`` and ``message.timestamp.difference.max.ms`` (the mirror keeps
each record's timestamp itself), the replication throttles; and, kstream's own
addition, the flush settings (``flush.messages``, ``flush.ms``: each side's durability
is its own, docs/MIRROR.md). Only configs the source sets explicitly are copied
(Kafka: ``is_default`` false; kstream: the topic's overrides): a default stays the
target's default. Anything not on the list is left out and named in the mirror's log.
"""

from __future__ import annotations

from collections.abc import Mapping

# Kafka topic config name -> kstream topic config name, for the configs that mean the same.
KAFKA_TO_KSTREAM: Mapping[str, str] = {
    "retention.ms": "retention.ms",
    "retention.bytes": "retention.bytes",
    "cleanup.policy": "cleanup.policy",
    "max.message.bytes": "message.max.bytes",
    "compression.type": "compression.type",
    "segment.bytes": "segment.bytes",
    "segment.ms": "segment.ms",
    "min.compaction.lag.ms": "min.compaction.lag.ms",
    "max.compaction.lag.ms": "max.compaction.lag.ms",
    "delete.retention.ms": "delete.retention.ms",
    "min.cleanable.dirty.ratio": "min.cleanable.dirty.ratio",
}
KSTREAM_TO_KAFKA: Mapping[str, str] = {ours: theirs for theirs, ours in KAFKA_TO_KSTREAM.items()}

EXCLUDED = frozenset({
    "min.insync.replicas", "unclean.leader.election.enable", "message.timestamp.type",
    "message.timestamp.difference.max.ms", "message.timestamp.before.max.ms", "message.timestamp.after.max.ms",
    "follower.replication.throttled.replicas", "leader.replication.throttled.replicas",
    "flush.messages", "flush.ms",
})
"""MM2's exclude list (DefaultConfigPropertyFilter) plus the flush settings: never copied."""

_KSTREAM_CODECS = frozenset({"producer", "none", "lz4", "zstd"})  # Arrow IPC buffers: no gzip, no snappy


def kafka_to_kstream(config: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The kstream configs for a Kafka topic's explicitly set ``config``, and the names left out."""
    copied: dict[str, str] = {}
    left_out: list[str] = []
    for name, value in sorted(config.items()):
        ours = KAFKA_TO_KSTREAM.get(name)
        if ours is None or name in EXCLUDED or (name == "compression.type" and value not in _KSTREAM_CODECS):
            left_out.append(name)
            continue
        copied[ours] = value
    return copied, left_out


def kstream_to_kafka(config: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The Kafka configs for a kstream topic's overrides ``config``, and the names left out."""
    copied: dict[str, str] = {}
    left_out: list[str] = []
    for name, value in sorted(config.items()):
        theirs = KSTREAM_TO_KAFKA.get(name)
        if theirs is None or name in EXCLUDED:
            left_out.append(name)
            continue
        copied[theirs] = str(value)
    return copied, left_out

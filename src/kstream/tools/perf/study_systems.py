"""The systems a study point runs on, each with its name and its durability, in one place.

The study (:mod:`kstream.tools.perf.study`), its tables, CSV and plots all
name a system by its key here and print its label, which carries the
durability its figure was measured at: a Kafka figure never appears without
it. kstream's durability follows the point's ``acks`` (:func:`durability`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class System:
    key: str
    label: str
    durability: str
    kafka: bool = False
    fsync: bool = False
    tools: bool = False


KAFKA_DEFAULT = "default durability: acks from page cache"
KAFKA_FSYNC = "fsync before ack, kstream's acks=all durability"

SYSTEMS: tuple[System, ...] = (
    System("kstream", "kstream", "acks=all: fsync before ack; acks=1/0: page cache"),
    System("kafka", "confluent-kafka -> Kafka", KAFKA_DEFAULT, kafka=True),
    System("kafka_fsync", "confluent-kafka -> Kafka flush.messages=1", KAFKA_FSYNC, kafka=True, fsync=True),
    System("kafka_tools", "Kafka's perf tools -> Kafka", KAFKA_DEFAULT, kafka=True, tools=True),
    System("kafka_tools_fsync", "Kafka's perf tools -> Kafka flush.messages=1", KAFKA_FSYNC, kafka=True,
           fsync=True, tools=True),
    System("tansu", "confluent-kafka -> Tansu", "memory only: no disk, no fsync (secondary line)"),
    System("ceiling", "ceiling: raw Arrow IPC", "fdatasync per 1 MiB batch where acks=all"),
)
BY_KEY = {system.key: system for system in SYSTEMS}
KEYS = tuple(BY_KEY)
KAFKA_KEYS = tuple(s.key for s in SYSTEMS if s.kafka)


def full_label(key: str) -> str:
    """``label (durability)``: how a system is named in a table header or a legend."""
    system = BY_KEY[key]
    return f"{system.label} ({system.durability})"


def durability(key: str, run: str, point: dict[str, Any]) -> str:
    """The durability of ``key``'s figure at ``point``: kstream's from its acks, the others' fixed."""
    if key != "kstream":
        return BY_KEY[key].durability
    if run == "consume":
        return "read"
    copies = min(point.get("min_insync_replicas", 1), point.get("replication_factor", 1))
    return {"all": f"acks=all: fsync before ack ({copies} of {point.get('replication_factor', 1)} copies)",
            "1": "acks=1: page cache", "0": "acks=0: page cache, no ack"}[point.get("acks", "1")]


def equal_durability(run: str, point: dict[str, Any]) -> str:
    """The Kafka system at kstream's durability for ``point``: flush.messages=1 for acks=all writes."""
    writes = run != "consume"
    return "kafka_fsync" if writes and point.get("acks", "1") == "all" else "kafka"

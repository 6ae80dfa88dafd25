"""Reassignment planning: kafka-reassign-partitions' plans, checked against a cluster, and proposals.

A plan is a list of (topic, partition, new replicas); replicas are log dir ids (in kstream a log
dir stands for a broker). A plan document is Kafka's JSON, ``{"version": 1, "partitions":
[{"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]}]}``, read
strictly (:mod:`kstream.log.cluster.reassignment_json`) and checked whole before anything
moves; :func:`propose` spreads replicas round-robin over chosen log dirs. The moves themselves
are :func:`kstream.log.cluster.replica_ops.reassign`. Shared by ``kstream reassign`` and the
console, which call the same functions.
"""

from __future__ import annotations

import json
import os
from typing import Any

from kstream.errors import ConfigError
from kstream.log.cluster import reassignment_json
from kstream.log.cluster.cluster import Cluster

Plan = list[tuple[str, int, list[int]]]


def read_topics(path: str) -> list[str]:
    """kafka-reassign-partitions' topics-to-move file: {"topics": [{"topic": "t"}], "version": 1}."""
    return reassignment_json.topics_to_move(reassignment_json.load_file(path, "topics-to-move file"), path)


def read_plan(path: str, cluster: Cluster) -> Plan:
    """A reassignment plan from a file, checked whole against the cluster (:func:`check_plan`)."""
    return check_plan(reassignment_json.load_file(path, "reassignment plan"), cluster, path)


def parse_plan(text: str, cluster: Cluster, source: str = "the plan") -> Plan:
    """A reassignment plan from JSON text (the console's form), checked as :func:`read_plan` does."""
    return check_plan(reassignment_json.parse_text(text, source, "reassignment plan"), cluster, source)


def check_plan(document: dict[str, Any], cluster: Cluster, path: str) -> Plan:
    """A plan document checked whole against the cluster: its fields of the right types
    (:func:`kstream.tools.cli.reassignment_json.plan_entries`), topics and partitions exist, replicas are
    distinct log dir ids, log_dirs (if given) agree, no partition twice (``path`` names the
    plan in messages)."""
    paths = cluster.log_dir_paths()
    plan: Plan = []
    for topic, partition, replicas, log_dirs in reassignment_json.plan_entries(document, path):
        if log_dirs is None:
            log_dirs = ["any"] * len(replicas)
        if len(log_dirs) != len(replicas):
            raise ConfigError(f"{topic}-{partition}: log_dirs has {len(log_dirs)} entries, replicas "
                              f"{len(replicas)}")
        for replica, log_dir in zip(replicas, log_dirs, strict=True):
            if replica in paths and log_dir != "any" and os.path.abspath(log_dir) != paths[replica]:
                raise ConfigError(f"{topic}-{partition}: log dir {log_dir!r} is not log dir {replica} "
                                  f"({paths[replica]}); in kstream a log dir is a broker: give "
                                  '"any" or its path')
        plan.append((topic, partition, replicas))
    seen: set[tuple[str, int]] = set()
    for topic, partition, replicas in plan:
        if (topic, partition) in seen:
            raise ConfigError(f"{path}: partition {topic}-{partition} is listed twice")
        seen.add((topic, partition))
        cluster.partition(topic, partition).close()  # TopicNotFound / PartitionNotFound
        if not replicas or len(set(replicas)) != len(replicas) or any(r not in paths for r in replicas):
            raise ConfigError(f"{topic}-{partition}: replicas {replicas} must be distinct log dir ids "
                              f"of {sorted(paths)} (see `kstream log-dirs describe`)")
    return plan


def plan_document(cluster: Cluster, plan: Plan) -> str:
    """A plan as Kafka prints it: one line of JSON, log_dirs filled in with the log dir paths."""
    paths = cluster.log_dir_paths()
    return json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r, "log_dirs": [paths.get(i, "any") for i in r]}
        for t, p, r in plan]}, separators=(",", ":"))


def current_plan(cluster: Cluster, keys: list[tuple[str, int]]) -> Plan:
    return [(t, p, list(cluster.topic(t).partitions[p].replicas)) for t, p in keys]


def propose(cluster: Cluster, topics: list[str], brokers: list[int]) -> Plan:
    """Each partition's replicas spread round-robin over ``brokers`` (log dir ids), keeping its
    replication factor: partition p's first replica is brokers[p mod n], followers the next ones."""
    paths = cluster.log_dir_paths()
    unknown = [b for b in brokers if b not in paths]
    if unknown or len(set(brokers)) != len(brokers) or not brokers:
        raise ConfigError(f"--broker-list {brokers}: give distinct log dir ids of {sorted(paths)}")
    plan: Plan = []
    for topic in topics:
        for placement in cluster.topic(topic).partitions:
            factor = len(placement.replicas)
            if factor > len(brokers):
                raise ConfigError(f"{topic} has replication factor {factor}: --broker-list needs at least "
                                  f"{factor} log dirs, got {len(brokers)}")
            first = placement.partition % len(brokers)
            plan.append((topic, placement.partition,
                         [brokers[(first + j) % len(brokers)] for j in range(factor)]))
    return plan


def differences(cluster: Cluster, plan: Plan) -> list[tuple[str, int, list[int], list[int]]]:
    """Per planned partition: (topic, partition, current replicas, planned replicas)."""
    return [(t, p, list(cluster.topic(t).partitions[p].replicas), r) for t, p, r in plan]

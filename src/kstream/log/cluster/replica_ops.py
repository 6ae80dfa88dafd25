"""Operator actions on replicas: catch-up, preferred leaders, reassignment, verification.

These are what `kstream replicator`, `elect-leaders`, `reassign` and
`verify-replicas` run. Each works partition by partition under the partition
lock, except leader election, which is one metadata transaction for all
partitions (like a controlled shutdown).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass

from kstream.errors import ConfigError, KStreamError, ReplicaDivergedError
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.metadata import PartitionInfo
from kstream.log.cluster.partition import Partition
from kstream.log.cluster.replica_sync import out_of_sync, sync_followers
from kstream.log.storage.disk import fsync_dir
from kstream.log.storage.log_reader import LogReader

_NO_LIMIT = 1 << 62


@dataclass(frozen=True)
class ReplicaMismatch:
    """Where two replicas of a partition first differ below the high watermark."""

    topic: str
    partition: int
    leader: int
    replica: int
    offset: int
    reason: str


def _partitions(cluster: Cluster, topics: list[str] | None) -> Iterator[Partition]:
    for name in topics or cluster.list_topics():
        info = cluster.topic(name)
        for placement in info.partitions:
            handle = cluster.partition(info, placement.partition)
            try:
                yield handle
            finally:
                handle.close()


def _online(cluster: Cluster) -> dict[int, bool]:
    return {log_dir: up for log_dir, _, up in cluster.metadata.log_dirs()}


def sync_all(cluster: Cluster, topics: list[str] | None = None, max_bytes: int = _NO_LIMIT) -> dict[str, int]:
    """Catch up every out-of-sync replica on an online log dir; returns counts."""
    online = _online(cluster)
    lagging = rejoined = 0
    for handle in _partitions(cluster, topics):
        if out_of_sync(handle, online):
            lagging += 1
            rejoined += len(sync_followers(handle, online, max_bytes))
    return {"partitions_lagging": lagging, "replicas_rejoined": rejoined}


def elect_preferred_leaders(cluster: Cluster, topics: list[str] | None = None) -> int:
    """Make each partition's first replica its leader where it is in sync (one transaction)."""
    return cluster.metadata.elect_preferred_leaders(topics)


def reassign(cluster: Cluster, topic: str, partition: int, replicas: list[int]) -> PartitionInfo:
    """Move a partition to ``replicas`` (log dir ids): add the new ones, copy and catch
    them up, switch the replica list (first = preferred leader), delete the old copies."""
    paths = cluster.log_dir_paths()
    if len(set(replicas)) != len(replicas) or not replicas or any(r not in paths for r in replicas):
        raise ConfigError(f"replicas {replicas} must be distinct log dir ids of {sorted(paths)}")
    info = cluster.topic(topic)
    current = info.partitions[partition].replicas
    wanted = cluster.replica_dirs(info, dataclasses.replace(info.partitions[partition], replicas=tuple(replicas)))
    added = [r for r in replicas if r not in current]
    for replica in added:  # empty replica dirs, made before the metadata names them
        os.makedirs(wanted[replica], exist_ok=True)
        fsync_dir(paths[replica])
    cluster.metadata.set_replicas(topic, partition, list(dict.fromkeys([*current, *replicas])))
    handle = cluster.partition(topic, partition)
    try:
        online = _online(cluster)
        while out_of_sync(handle, online) and any(r in out_of_sync(handle, online) for r in replicas):
            if not sync_followers(handle, online, _NO_LIMIT):
                raise ReplicaDivergedError(f"could not catch up the new replicas of {topic}-{partition}")
            handle.refresh_metadata()
        removed = [r for r in current if r not in replicas]
        with handle.lock:
            cluster.metadata.set_replicas(topic, partition, replicas)
            handle.lock.bump_generation()
    finally:
        handle.close()
    for replica in removed:
        shutil.rmtree(handle.replica_dirs[replica], ignore_errors=True)
    return cluster.metadata.partition_info(topic, partition)


def verify_replicas(cluster: Cluster, topics: list[str] | None = None) -> list[ReplicaMismatch]:
    """Compare every in-sync replica with its leader frame by frame up to the high watermark."""
    mismatches = []
    for handle in _partitions(cluster, topics):
        end = handle.high_watermark() or 0
        leader = handle.info.leader
        for replica in handle.info.isr:
            if replica == leader:
                continue
            problem = _first_difference(handle, leader, replica, end)
            if problem is not None:
                mismatches.append(ReplicaMismatch(handle.topic, handle.partition, leader, replica, *problem))
    return mismatches


def _first_difference(handle: Partition, leader: int, replica: int, end: int) -> tuple[int, str] | None:
    readers = [LogReader(handle.replica_dirs[leader]), LogReader(handle.replica_dirs[replica])]
    try:
        offset = max(r.log_start_offset() for r in readers)
        while offset < end:
            a = readers[0].read(offset, 1, end_offset=end)
            b = readers[1].read(offset, 1, end_offset=end)
            if not a or not b:
                return offset, "missing on the replica" if a else "missing on the leader"
            ha, hb = a[0].header, b[0].header
            if ha != hb:
                return offset, f"headers differ (epoch {ha.leader_epoch} vs {hb.leader_epoch})"
            if a[0].payload != b[0].payload:
                return offset, "payloads differ"
            offset = ha.next_offset
    except KStreamError as err:  # a corrupt frame is a difference to report
        return offset, f"{type(err).__name__}: {err}"
    finally:
        for reader in readers:
            reader.close()
    return None

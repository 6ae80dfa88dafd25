"""A cluster: one metadata dir naming everything (config, metadata DB, log dirs).

``Cluster.open(path, options, create=True)`` creates the cluster if it does
not exist (with the broker-side options given, e.g. ``log.dirs``; relative
log dirs live inside the cluster dir); only the calls that create topics pass
``create=True``. Every other open of a path that holds no cluster raises
:class:`ClusterNotFoundError`, so a mistyped path is reported rather than
made into a new empty cluster. An existing cluster's settings are read from
``cluster.properties``; a later caller passing a different broker-side value
gets a :class:`ConfigError` rather than a silently different cluster.
Topics are created here with their replicas placed round-robin over the log
dirs (leaders spread evenly, as Kafka assigns them). Names and counts have
maxima (:data:`MAX_TOPIC_NAME`, :data:`MAX_PARTITIONS`) checked before
anything is written.

Thread-safe: the metadata store gives each thread its own SQLite connection,
and the metadata DB serialises writers across threads and processes.
Picklable as configuration only (the path).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import sqlite3
import uuid
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from kstream.config.options import CLUSTER_OPTIONS, TOPIC_OPTIONS, parse_options
from kstream.errors import (
    ClusterError,
    ClusterNotFoundError,
    ConfigError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    PartitionNotFoundError,
    TopicExistsError,
)
from kstream.log.cluster.compaction import PartitionCleaned, auto_clean, clean_partition
from kstream.log.cluster.lake_offsets import LakeOffsets
from kstream.log.cluster.metadata import Metadata, PartitionInfo, TopicInfo
from kstream.log.cluster.partition import Partition
from kstream.log.storage import format as fmt
from kstream.log.storage.disk import fsync_dir
from kstream.log.storage.durable_file import read_properties, write_properties_atomically
from kstream.log.storage.lock import PartitionLock
from kstream.log.storage.log_config import LogConfig
from kstream.log.storage.records import check_schema_evolution, check_typed_schema

log = logging.getLogger(__name__)
DEFAULT_CLUSTER = "./data"
CLUSTER_ENV = "KSTREAM_CLUSTER"
MAX_PARTITIONS = 10_000
LEGACY_TRANSACTION_TIMEOUT = "transaction.timeout.ms"
"""A cluster setting of kstream before transaction.timeout.ms became the producer's, as in Kafka
(docs/TRANSACTIONS.md, "Timeouts"). A cluster created then may store it in cluster.properties; it
is still read: it is the timeout of what recorded none of its own (a transaction an older kstream
began, a Spark sink task's write), and the cluster's transaction.max.timeout.ms when that is not
stored is at least it. New clusters never store it."""
"""Most partitions a topic may have. Each costs a directory per replica, a lock file and
metadata rows read whenever the topic is opened, and its number is part of file names (see
MAX_TOPIC_NAME); without a bound, 10**9 partitions ran a minute into a MemoryError."""
_MAX_FILE_NAME_BYTES = 255  # NAME_MAX of Linux file systems (ext4, xfs, btrfs)
_TOPIC_ID_CHARS = 32  # uuid4().hex
MAX_TOPIC_NAME = _MAX_FILE_NAME_BYTES - len(f"-{MAX_PARTITIONS - 1}.{'0' * _TOPIC_ID_CHARS}-delete")
"""210: the longest file name made from a topic name is a deleted replica dir,
``{topic}-{partition}.{topic_id}-delete`` (see :meth:`Cluster.delete_topic`); it must fit in
255 bytes for the highest partition. Kafka's 249 leaves room only for its own shorter
suffixes; a longer name here could be created but not written (lock file) or deleted."""


def resolve_cluster_path(path: str | None) -> str:
    """The cluster path from an option, else $KSTREAM_CLUSTER, else ./data (absolute)."""
    return os.path.abspath(path or os.environ.get(CLUSTER_ENV) or DEFAULT_CLUSTER)


def check_topic_name(name: str) -> None:
    """ConfigError unless ``name`` is 1-MAX_TOPIC_NAME ASCII letters, digits, '.', '_', '-'."""
    legal = isinstance(name, str) and all(c.isascii() and (c.isalnum() or c in "._-") for c in name)
    if not legal or not name or len(name) > MAX_TOPIC_NAME or name in (".", ".."):
        shown = name if not isinstance(name, str) or len(name) <= 40 else f"{name[:40]}... ({len(name)} chars)"
        raise ConfigError(
            f"illegal topic name {shown!r}: use 1-{MAX_TOPIC_NAME} characters of "
            "ASCII letters, digits, '.', '_' and '-' (the limit keeps every file name made "
            "from it within 255 bytes)"
        )


def check_partition_count(count: object, what: str) -> int:
    """``count`` if it is an int in 1..MAX_PARTITIONS, else an InvalidPartitionsError (a
    ConfigError) naming ``what``."""
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_PARTITIONS:
        raise InvalidPartitionsError(f"{what} must be an integer from 1 to {MAX_PARTITIONS}, got {count!r}")
    return count


class Cluster:
    """An open cluster. Create with :meth:`open`."""

    def __init__(self, path: str, config: Mapping[str, Any], cluster_id: str,
                 legacy_transaction_timeout_ms: int | None = None):
        self.path = path
        self.config = dict(config)
        self.legacy_transaction_timeout_ms = legacy_transaction_timeout_ms
        """An older cluster's stored transaction.timeout.ms (:data:`LEGACY_TRANSACTION_TIMEOUT`), or None."""
        self.cluster_id = cluster_id
        self.metadata = Metadata(os.path.join(path, fmt.METADATA_DB))

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        """Pickles as its path: the receiving process opens the cluster itself."""
        return (Cluster.open, (self.path,))

    # -- opening -------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | None = None, options: Mapping[str, Any] | None = None, *,
             create: bool = False) -> Cluster:
        """Open the cluster at ``path``; with ``create``, create it (with ``options``) if it
        does not exist, else raise :class:`ClusterNotFoundError` (nothing is written)."""
        path = resolve_cluster_path(path)
        broker_options = {k: v for k, v in (options or {}).items() if k in CLUSTER_OPTIONS}
        properties = os.path.join(path, fmt.CLUSTER_PROPERTIES)
        if not os.path.exists(properties):
            if os.path.exists(os.path.join(path, fmt.METADATA_DB)):
                raise ClusterError(f"cluster {path} has lost its {fmt.CLUSTER_PROPERTIES} (its "
                                   f"{fmt.METADATA_DB} is there); restore the file from a backup")
            if os.path.isdir(path) and os.listdir(path):
                raise ClusterError(
                    f"{path} is not a kstream cluster (no {fmt.CLUSTER_PROPERTIES}) and is not "
                    "empty; pass an empty or new directory as the cluster path"
                )
            if not create:
                raise ClusterNotFoundError(
                    f"no kstream cluster at {path}; check the path (--cluster, the 'cluster' "
                    f"option or ${CLUSTER_ENV}), or create a cluster there by creating a topic "
                    f"(`kstream --cluster {path} topics create TOPIC`, or Admin.create_topics)")
            cls._create(path, broker_options)
        stored = read_properties(properties)
        cluster_id = stored.pop("kstream.cluster.id", "")
        version = stored.pop("kstream.format.version", "")
        if version != str(fmt.FORMAT_VERSION):
            raise ClusterError(_format_version_error(path, version))
        legacy_timeout = stored.pop(LEGACY_TRANSACTION_TIMEOUT, None)
        config = parse_options(CLUSTER_OPTIONS, stored, what=f"cluster {path}")
        legacy_timeout_ms = None
        if legacy_timeout is not None:
            legacy_timeout_ms = CLUSTER_OPTIONS["transaction.max.timeout.ms"].parse(legacy_timeout)
            if "transaction.max.timeout.ms" not in stored:  # a producer that could ask it before still can
                config["transaction.max.timeout.ms"] = max(config["transaction.max.timeout.ms"], legacy_timeout_ms)
        for name, raw in broker_options.items():
            wanted = CLUSTER_OPTIONS[name].parse(raw)
            if name == "log.dirs":
                # Relative log dirs are relative to the cluster dir (see _create).
                wanted = tuple(os.path.normpath(_absolute_log_dir(path, d)) for d in wanted)
                have = tuple(os.path.normpath(_absolute_log_dir(path, d)) for d in config[name])
            else:
                have = config[name]
            if wanted != have:
                raise ConfigError(
                    f"cluster {path} already has {name}={raw_value(have)}, not {raw_value(wanted)}; "
                    "broker-side settings are fixed when a cluster is created (drop the option, "
                    "or use a new cluster path)"
                )
        cluster = cls(path, config, cluster_id, legacy_timeout_ms)
        cluster._check_log_dirs()
        cluster.metadata.ensure_snapshot()  # derived data, for readers without SQLite
        return cluster

    @classmethod
    def _create(cls, path: str, options: Mapping[str, Any]) -> None:
        parent = os.path.dirname(path.rstrip("/")) or "."
        os.makedirs(parent, exist_ok=True)
        staging = f"{path}.creating-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        os.makedirs(staging)
        try:
            config = parse_options(CLUSTER_OPTIONS, options, what="a new cluster")
            check_partition_count(config["num.partitions"], "option 'num.partitions'")
            # Relative log dirs (and the default) live inside the cluster dir, whatever the
            # working directory: they are stored as given and resolved against it on open.
            log_dirs = tuple(os.path.normpath(d) for d in config["log.dirs"]) or ("logs",)
            values = {"kstream.cluster.id": uuid.uuid4().hex,
                      "kstream.format.version": str(fmt.FORMAT_VERSION)}
            for name, _raw in options.items():
                values[name] = raw_value(config[name])
            values["log.dirs"] = ",".join(log_dirs)
            write_properties_atomically(os.path.join(staging, fmt.CLUSTER_PROPERTIES), values,
                                        "kstream cluster: broker-side settings, fixed at creation")
            metadata = Metadata(os.path.join(staging, fmt.METADATA_DB), create=True)
            metadata.register_log_dirs(list(log_dirs))
            metadata.close()
            try:
                os.rename(staging, path)  # atomic; replaces an empty dir
            except OSError:
                if not os.path.exists(os.path.join(path, fmt.CLUSTER_PROPERTIES)):
                    raise
                # Another process created it first: use theirs.
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        fsync_dir(parent)

    def _check_log_dirs(self) -> None:
        """Format the log dirs of a new cluster; take failed ones offline.

        A log dir that was formatted (or holds replicas) and is now missing, or has
        lost its meta.properties (emptied, or another disk mounted in its place), is a
        failed disk: it is taken offline (its replicas leave the ISR, leaders move to
        in-sync survivors), never re-created. Only `kstream log-dirs online` brings a
        replacement disk in (:meth:`set_log_dir_online`).
        """
        formatted = self.metadata.formatted_log_dirs()
        for log_dir_id, stored, online in self.metadata.log_dirs():
            directory = _absolute_log_dir(self.path, stored)
            if os.path.exists(os.path.join(directory, fmt.LOG_DIR_META)):
                self._check_log_dir_meta(log_dir_id, directory)
                if log_dir_id not in formatted:  # formatted by an older kstream
                    self.metadata.mark_log_dir_formatted(log_dir_id)
            elif log_dir_id in formatted or self.metadata.partition_count_by_log_dir().get(log_dir_id):
                if online:
                    log.error("log dir %s (%s) is missing or has no %s: a failed disk; taking it "
                              "offline. Replace it, then run `kstream log-dirs online %s`",
                              log_dir_id, directory, fmt.LOG_DIR_META, log_dir_id)
                    self.metadata.take_log_dir_offline(log_dir_id)
            else:
                self._format_log_dir(log_dir_id, directory, create=True)  # a new cluster's

    def _check_log_dir_meta(self, log_dir_id: int, directory: str) -> None:
        stored = read_properties(os.path.join(directory, fmt.LOG_DIR_META))
        found = stored.get("cluster.id")
        if found != self.cluster_id:
            raise ClusterError(
                f"log dir {directory} belongs to cluster {found}, not {self.cluster_id}; "
                "give each cluster its own log dirs"
            )
        if stored.get("log.dir.id", str(log_dir_id)) != str(log_dir_id):
            raise ClusterError(
                f"{directory} holds log dir {stored.get('log.dir.id')} of this cluster, not log dir "
                f"{log_dir_id}; mount each disk at its own path"
            )

    def _format_log_dir(self, log_dir_id: int, directory: str, create: bool) -> None:
        """Give an empty directory its meta.properties (``create``: make the directory too)."""
        if create:
            os.makedirs(directory, exist_ok=True)
        meta = os.path.join(directory, fmt.LOG_DIR_META)
        others = [name for name in os.listdir(directory) if not name.startswith(fmt.LOG_DIR_META)]
        if others and not os.path.exists(meta):
            raise ClusterError(f"log dir {directory} is not empty and has no {fmt.LOG_DIR_META}; "
                               "use an empty directory for a new log dir")
        write_properties_atomically(meta, {"cluster.id": self.cluster_id,
                                           "log.dir.id": str(log_dir_id),
                                           "version": str(fmt.FORMAT_VERSION)},
                                    "kstream log dir")
        self.metadata.mark_log_dir_formatted(log_dir_id)

    def set_log_dir_online(self, log_dir_id: int) -> None:
        """Bring a repaired or replaced (empty) log dir back. Its replicas rejoin the ISR
        once caught up from their leaders (by writers, or `kstream replicator`); a
        partition whose last in-sync replica is here leads from it again.

        The directory must exist (the disk is mounted): an empty one is formatted as a
        replacement disk and gets empty replica directories to be refilled.
        """
        paths = self.log_dir_paths()
        if log_dir_id not in paths:
            raise ConfigError(f"no log dir {log_dir_id}; the cluster has {sorted(paths)}")
        directory = paths[log_dir_id]
        if not os.path.isdir(directory):
            raise ClusterError(
                f"log dir {log_dir_id} ({directory}) does not exist; mount the repaired disk, or an "
                f"empty replacement disk, there, then run `kstream log-dirs online {log_dir_id}` again")
        if os.path.exists(os.path.join(directory, fmt.LOG_DIR_META)):
            self._check_log_dir_meta(log_dir_id, directory)
        else:
            self._format_log_dir(log_dir_id, directory, create=False)  # a replacement disk
        made = False
        for name in self.list_topics():
            info = self.topic(name)
            for placement in info.partitions:
                if log_dir_id in placement.replicas:
                    replica = _replica_dir(paths, name, placement.partition, log_dir_id)
                    if not os.path.isdir(replica):
                        os.makedirs(replica)  # empty: refilled from the leader
                        made = True
        if made:
            fsync_dir(directory)
        self.metadata.set_log_dir_online(log_dir_id, True)

    def take_log_dir_offline(self, log_dir_id: int) -> int:
        """Controlled shutdown of a log dir: every partition leaves it in one metadata
        transaction (out of the ISR, leaders moved, epochs bumped). Returns partitions moved."""
        if log_dir_id not in self.log_dir_paths():
            raise ConfigError(f"no log dir {log_dir_id}; the cluster has {sorted(self.log_dir_paths())}")
        return self.metadata.take_log_dir_offline(log_dir_id)

    def log_dir_paths(self) -> dict[int, str]:
        return {i: _absolute_log_dir(self.path, p) for i, p, _ in self.metadata.log_dirs()}

    # -- topics ------------------------------------------------------------------------

    def create_topic(self, name: str, num_partitions: int | None = None,
                     replication_factor: int | None = None,
                     config: Mapping[str, Any] | None = None,
                     schema: pa.Schema | None = None, *,
                     placements: list[tuple[int, ...]] | None = None,
                     validate_only: bool = False) -> TopicInfo | None:
        """Create a topic; validates everything before anything is written.

        ``placements`` (log dir ids per partition, the first the preferred leader) replaces
        the round-robin placement. ``validate_only``: check, write nothing, return None."""
        check_topic_name(name)
        if name in self.list_topics():  # before the leftovers check: its dirs hold its data
            raise TopicExistsError(f"topic {name!r} already exists")
        log_dirs = [i for i, _, online in self.metadata.log_dirs() if online]
        if placements is not None:
            self._check_placements(placements, log_dirs, None)
            partitions, replicas = len(placements), len(placements[0]) if placements else 0
        else:
            partitions = self.config["num.partitions"] if num_partitions in (None, -1) else num_partitions
            replicas = (self.config["default.replication.factor"] if replication_factor in (None, -1)
                        else replication_factor)
        check_partition_count(partitions, "num_partitions" if num_partitions not in (None, -1)
                              else "the cluster's num.partitions")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or not 1 <= replicas <= len(log_dirs):
            raise InvalidReplicationFactorError(
                f"replication_factor {replicas} needs that many online log dirs; "
                f"the cluster has {len(log_dirs)} ({self.config['log.dirs'] or 'logs'})"
            )
        topic_config = {k: str(v) for k, v in (config or {}).items()}
        LogConfig.from_options(topic_config, self.config)  # validate
        schema_bytes = None
        if schema is not None:
            check_typed_schema(schema)
            schema_bytes = schema.serialize().to_pybytes()
        if placements is None:
            placements = self._place(partitions, replicas, log_dirs)
        paths = self.log_dir_paths()
        for p, placement in enumerate(placements):
            for log_dir in placement:
                _refuse_leftovers(_replica_dir(paths, name, p, log_dir))
        if validate_only:
            return None
        # The directories exist before the metadata names them: a missing one is a failed disk.
        self._make_replica_dirs(name, 0, placements)
        return self.metadata.create_topic(name, replicas, topic_config, placements, schema_bytes)

    @staticmethod
    def _check_placements(placements: list[tuple[int, ...]], log_dirs: list[int],
                          replication_factor: int | None) -> None:
        """Explicit replica assignments: distinct online log dirs, the same count for each
        partition (``replication_factor`` when the topic has one already)."""
        sizes = {len(p) for p in placements}
        expected = replication_factor if replication_factor is not None else next(iter(sizes), 0)
        for placement in placements:
            if (len(set(placement)) != len(placement) or any(r not in log_dirs for r in placement)
                    or len(placement) != expected or not placement):
                raise InvalidReplicationFactorError(
                    f"replica assignment {[list(p) for p in placements]}: each partition needs "
                    f"{expected or 'the same number of'} distinct online log dir ids of {log_dirs}")

    def _make_replica_dirs(self, name: str, first: int, placements: list[tuple[int, ...]]) -> None:
        """Create the (empty) replica directories, then make their names durable."""
        paths = self.log_dir_paths()
        touched = set()
        for p, placement in enumerate(placements, start=first):
            for log_dir in placement:
                directory = _replica_dir(paths, name, p, log_dir)
                _refuse_leftovers(directory)
                os.makedirs(directory, exist_ok=True)
                touched.add(os.path.dirname(directory))
        for parent in touched:
            fsync_dir(parent)

    def _place(self, count: int, replicas: int, log_dirs: list[int]) -> list[tuple[int, ...]]:
        """Round-robin placement starting at the least-loaded log dir (leaders spread)."""
        load = self.metadata.partition_count_by_log_dir()
        start = min(range(len(log_dirs)), key=lambda i: (load.get(log_dirs[i], 0), i))
        n = len(log_dirs)
        return [tuple(log_dirs[(start + p + r) % n] for r in range(replicas)) for p in range(count)]

    def create_partitions(self, name: str, new_total: int, *,
                          placements: list[tuple[int, ...]] | None = None,
                          validate_only: bool = False) -> TopicInfo:
        """Grow a topic to ``new_total`` partitions (``placements``: the new partitions'
        log dirs, else round-robin). ``validate_only``: check, write nothing."""
        info = self.topic(name)
        check_partition_count(new_total, "the new partition count")
        if new_total <= info.num_partitions:
            raise InvalidPartitionsError(
                f"topic {name!r} has {info.num_partitions} partitions; the new count "
                f"must be larger (partitions can only be added), got {new_total}")
        log_dirs = [i for i, _, online in self.metadata.log_dirs() if online]
        if placements is not None:
            if len(placements) != new_total - info.num_partitions:
                raise InvalidPartitionsError(
                    f"replica assignment has {len(placements)} partition(s); growing {name!r} from "
                    f"{info.num_partitions} to {new_total} adds {new_total - info.num_partitions}")
            self._check_placements(placements, log_dirs, info.replication_factor)
        else:
            placements = self._place(new_total - info.num_partitions, info.replication_factor, log_dirs)
        if validate_only:
            return info
        self._make_replica_dirs(name, info.num_partitions, placements)
        return self.metadata.add_partitions(name, placements)

    def alter_topic_config(self, name: str, config: Mapping[str, Any]) -> TopicInfo:
        """Set (value) or remove (None) topic-level overrides."""
        info = self.topic(name)
        merged = dict(info.config)
        for key, value in config.items():
            if key not in TOPIC_OPTIONS:
                parse_options(TOPIC_OPTIONS, {key: value}, what="a topic")
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = str(value)
        LogConfig.from_options(merged, self.config)
        self.metadata.set_topic_config(name, merged)
        return self.topic(name)

    def evolve_schema(self, name: str, schema: pa.Schema) -> TopicInfo:
        """Add a schema version to a typed topic (only new nullable columns at the end)."""
        info = self.topic(name)
        current = self.topic_schema(info)
        if current is None:
            raise ConfigError(f"topic {name!r} is a bytes topic; it has no schema to evolve")
        check_schema_evolution(current, schema)
        self.metadata.add_schema_version(name, schema.serialize().to_pybytes())
        return self.topic(name)

    @staticmethod
    def topic_schema(info: TopicInfo) -> pa.Schema | None:
        """The latest value schema of a typed topic, None for a bytes topic."""
        if not info.schemas:
            return None
        return pa.ipc.read_schema(pa.py_buffer(info.schemas[-1]))

    def delete_topic(self, name: str) -> None:
        """Fence writers and move the data away, then remove the topic from the metadata.

        In this order a topic of the same name can only be created once the old
        one's directories are gone (the metadata row blocks it until then).
        """
        info = self.metadata.topic(name)
        for partition in info.partitions:
            lock = PartitionLock(self.lock_path(info, partition.partition))
            with lock:
                lock.mark_deleted()
            lock.close()
        doomed = []
        for partition in info.partitions:
            for directory in self.replica_dirs(info, partition).values():
                if os.path.isdir(directory):
                    target = fmt.deleted_dir_name(directory, info.topic_id)
                    os.rename(directory, target)
                    doomed.append(target)
        self.metadata.delete_topic(name)
        LakeOffsets(self.metadata).forget(name)  # a new topic of this name starts untiered
        for target in doomed:
            shutil.rmtree(target, ignore_errors=True)

    def topic(self, name: str) -> TopicInfo:
        return self.metadata.topic(name)

    def list_topics(self) -> list[str]:
        return self.metadata.topic_names()

    def log_config(self, info: TopicInfo) -> LogConfig:
        return LogConfig.from_options(info.config, self.config)

    def clean_topic(self, name: str, partitions: list[int] | None = None, *, force: bool = False,
                    now_ms: int | None = None) -> list[PartitionCleaned]:
        """Run the log cleaner once on a compacted topic's partitions (all when None): each is
        cleaned when due, or always with ``force`` (``kstream topics clean``)."""
        info = self.topic(name)
        typed = self.topic_schema(info) is not None
        done = []
        for number in range(info.num_partitions) if partitions is None else partitions:
            handle = self.partition(info, number)
            try:
                done.append(clean_partition(handle, typed=typed, force=force, now_ms=now_ms))
            finally:
                handle.close()
        return done

    # -- partitions --------------------------------------------------------------------

    def lock_path(self, info: TopicInfo, partition: int) -> str:
        """The partition's lock file (made, with its dir, by the first writer that takes the
        lock: :class:`PartitionLock`; a reader creates neither)."""
        return os.path.join(self.path, fmt.LOCKS_DIR, fmt.lock_file_name(info.name, partition, info.topic_id))

    def replica_dirs(self, info: TopicInfo, partition: PartitionInfo) -> dict[int, str]:
        paths = self.log_dir_paths()
        return {log_dir: _replica_dir(paths, info.name, partition.partition, log_dir)
                for log_dir in partition.replicas}

    def partition(self, topic: str | TopicInfo, partition: int) -> Partition:
        """A handle to append to and read one partition."""
        info = self.topic(topic) if isinstance(topic, str) else topic
        if not 0 <= partition < info.num_partitions:
            raise PartitionNotFoundError(
                f"topic {info.name!r} has partitions 0..{info.num_partitions - 1}; "
                f"partition {partition} does not exist"
            )
        replica_dir = functools.partial(_replica_dir, self.log_dir_paths(), info.name, partition)
        config = self.log_config(info)
        handle = Partition(info.partitions[partition], replica_dir, config,
                           self.lock_path(info, partition), self.metadata)
        if config.compact:  # the cleaner runs where retention runs: after appends
            handle.cleaner = functools.partial(auto_clean, typed=self.topic_schema(info) is not None)
        if config.tiered:  # retention keeps what the lake does not hold yet
            handle.use_retention_floor(functools.partial(
                _lake_floor, LakeOffsets(self.metadata), info.name, info.topic_id, partition))
        return handle

    def close(self) -> None:
        self.metadata.close()


def _lake_floor(lakes: LakeOffsets, topic: str, topic_id: str, partition: int) -> int:
    """A tiered partition's recorded lake end, for retention. An unreadable metadata row keeps
    everything (0) rather than failing the append that runs retention: it is logged, and the
    next retention check reads it again."""
    try:
        return lakes.end_offset(topic, topic_id, partition)
    except sqlite3.Error as err:
        log.error("retention of %s-%d kept every segment: its lake end offset is unreadable: %s",
                  topic, partition, err)
        return 0


def _replica_dir(paths: Mapping[int, str], topic: str, partition: int, log_dir: int) -> str:
    """Where a partition's replica on ``log_dir`` lives (``paths``: log dir id -> path)."""
    return os.path.join(paths[log_dir], fmt.replica_dir_name(topic, partition))


def _refuse_leftovers(directory: str) -> None:
    if os.path.isdir(directory) and os.listdir(directory):
        raise ClusterError(
            f"{directory} already holds data (left by a topic of the same name whose deletion did "
            "not finish?); move it away, then create the topic again")


def _format_version_error(path: str, version: str) -> str:
    """What to do about a cluster of another on-disk format version (docs/FORMAT.md,
    "Versions and upgrades"): nothing is rewritten in place, so the fix is the kstream."""
    if version.isdigit() and int(version) > fmt.FORMAT_VERSION:
        return (f"{path} has on-disk format version {version}, newer than this kstream's "
                f"({fmt.FORMAT_VERSION}): a newer kstream wrote it. Use that kstream (or a later one); "
                "the cluster was left untouched (docs/FORMAT.md, Versions and upgrades)")
    return (f"{path} has on-disk format version {version!r} in {fmt.CLUSTER_PROPERTIES}; this kstream "
            f"reads version {fmt.FORMAT_VERSION}. The file was edited or damaged: restore it from a "
            "backup (the cluster was left untouched)")


def _absolute_log_dir(cluster_path: str, log_dir: str) -> str:
    return log_dir if os.path.isabs(log_dir) else os.path.join(cluster_path, log_dir)


def raw_value(value: Any) -> str:
    """The properties-file spelling of a typed option value."""
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)

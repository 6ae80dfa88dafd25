"""Cluster metadata in SQLite (WAL): topics, partitions, replica placement, log dirs.

The transactional, multi-process store of DESIGN §4. It is off the hot path:
producers and consumers read it when they open a topic, not per record.
Each thread of each process gets its own connection, opened on first use
(a connection is never shared: SQLite transactions are per connection, and
Python's sqlite3 refuses a connection from another thread); a forked child
opens new ones. So one :class:`Metadata` (one ``Cluster``) may be used by
several threads at once, as a shared Producer does.

Only :meth:`kstream.log.cluster.cluster.Cluster._create` makes a new database
(``create=True``); every other open is read-write of an existing file
(SQLite's ``mode=rw``, since a plain connect creates a missing file), so a
lost, emptied or garbled ``metadata.db`` is a :class:`ClusterError`, never a
fresh empty cluster that would orphan the data in the log dirs.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kstream.errors import ClusterError, TopicExistsError, TopicNotFoundError
from kstream.log.cluster import metadata_snapshot
from kstream.log.cluster.metadata_errors import MetadataConnection, check_wal, wal_identity

DataVersion = tuple[int, int, int]
"""What :meth:`Metadata.data_version` returns; compare for equality only."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS log_dirs (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, online INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS topics (
    name TEXT PRIMARY KEY, topic_id TEXT NOT NULL, replication_factor INTEGER NOT NULL,
    config TEXT NOT NULL, created_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS topic_schemas (
    topic TEXT NOT NULL, version INTEGER NOT NULL, schema BLOB NOT NULL,
    PRIMARY KEY (topic, version));
CREATE TABLE IF NOT EXISTS partitions (
    topic TEXT NOT NULL, partition INTEGER NOT NULL, replicas TEXT NOT NULL,
    leader INTEGER NOT NULL, leader_epoch INTEGER NOT NULL, isr TEXT NOT NULL,
    PRIMARY KEY (topic, partition));
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS formatted_log_dirs (id INTEGER PRIMARY KEY);
"""
_SCHEMA_OBJECT = re.compile(r"CREATE (?:TABLE|INDEX) IF NOT EXISTS (\w+)")
_IS_KSTREAM_METADATA = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'log_dirs'"


def _check_database_file(path: str) -> None:
    """ClusterError when ``path`` is missing or empty (an existing metadata DB is never
    empty: switching it to WAL mode wrote its first page).

    Only ``stat``: never open() the database file outside SQLite. Closing any descriptor
    of a file drops every POSIX lock this process holds on it, including those of this
    process's other SQLite connections, and another process may then checkpoint the WAL
    under them ("database disk image is malformed"; sqlite.org/howtocorrupt.html 2.2).
    """
    try:
        size = os.stat(path).st_size
    except FileNotFoundError as err:
        raise ClusterError(_lost(path, "is missing")) from err
    if size == 0:
        raise ClusterError(_lost(path, "is empty (zero length)"))


def _lost(path: str, what: str) -> str:
    return (f"the cluster's metadata {path} {what}: it names every topic, partition and log "
            "dir, so kstream will not start an empty one over the data in the log dirs; restore "
            "metadata.db from a backup (with its -wal file, if any)")


@dataclass(frozen=True)
class PartitionInfo:
    """Placement of one partition: replicas are log dir ids, the leader is one of them."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]


@dataclass(frozen=True)
class TopicInfo:
    """A topic as stored: id, partitions, config overrides, schema versions (IPC bytes).

    ``topic_id`` names this incarnation of the topic: a topic deleted and created again
    under the same name gets a new one (Kafka's topic ids); ``created_ms`` is when it was
    created (wall clock)."""

    name: str
    topic_id: str
    replication_factor: int
    config: Mapping[str, str]
    partitions: tuple[PartitionInfo, ...]
    schemas: tuple[bytes, ...] = field(default=())
    created_ms: int = 0

    @property
    def num_partitions(self) -> int:
        return len(self.partitions)


class _ThreadConnection(threading.local):
    """One thread's connection to the metadata DB, and what is known about it."""

    def __init__(self) -> None:
        self.connection: sqlite3.Connection | None = None
        self.pid = 0  # the process that opened it (a forked child opens its own)
        self.generation = -1  # Metadata.close() ends every connection of an older generation
        self.number = 0  # which connection of this Metadata it is (part of data_version)
        self.own_commits = 0  # PRAGMA data_version does not count this connection's commits
        self.schemas_made: set[str] = set()


class Metadata:
    """The metadata database of one cluster. Thread-safe: each thread uses its own connection."""

    def __init__(self, path: str, create: bool = False):
        self.path = path
        self.cluster_dir = os.path.dirname(os.path.abspath(path))
        self._create = create
        self._local = _ThreadConnection()
        self._guard = threading.Lock()  # over the fields below (a forked child makes its own)
        self._guard_pid = os.getpid()
        self._generation = 0
        self._connections = 0  # connections opened so far (numbers them)
        # This process's open connections by thread, for close(); those of finished threads are
        # closed when the next one is opened, so there are never more than live threads.
        self._open: dict[threading.Thread, tuple[int, sqlite3.Connection]] = {}

    @property
    def connection(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use, and anew after fork or close())."""
        local = self._local
        if local.connection is None or local.pid != os.getpid() or local.generation != self._generation:
            self._open_for_thread(local)
        assert local.connection is not None
        return local.connection

    def _open_for_thread(self, local: _ThreadConnection) -> None:
        connection = self._connect()
        if self._guard_pid != os.getpid():  # another thread may have held it at the fork
            self._guard, self._guard_pid = threading.Lock(), os.getpid()
        with self._guard:
            self._connections += 1
            local.number = self._connections
            local.pid = os.getpid()
            local.generation = self._generation
            local.connection = connection
            local.own_commits = 0
            local.schemas_made = set()
            finished = [thread for thread in self._open if not thread.is_alive()]
            replaced = self._open.pop(threading.current_thread(), None)
            self._open[threading.current_thread()] = (local.pid, connection)
            stale = [self._open.pop(thread) for thread in finished]
        for pid, old in [*stale, *([replaced] if replaced is not None else [])]:
            if pid == os.getpid() and old is not connection:
                old.close()  # its thread is gone (or it was closed): no one else uses it

    def _connect(self) -> sqlite3.Connection:
        if not self._create:
            _check_database_file(self.path)
        mode = "rwc" if self._create else "rw"  # rw: a missing file is an error, not a new database
        uri = f"file:{urllib.parse.quote(os.path.abspath(self.path))}?mode={mode}"
        connection: sqlite3.Connection | None = None
        try:
            # check_same_thread=False only so that close() may close another thread's connection
            # (or a finished thread's); no connection is ever used by two threads.
            connection = sqlite3.connect(uri, uri=True, timeout=60, isolation_level=None,
                                         check_same_thread=False, factory=MetadataConnection)
            connection.database_path = os.path.abspath(self.path)
            if not self._create and connection.execute(_IS_KSTREAM_METADATA).fetchone() is None:
                raise ClusterError(_lost(self.path, "is not a kstream metadata database (no log_dirs table)"))
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=FULL")
            connection.executescript(_SCHEMA)
            connection.wal_identity = wal_identity(self.path)  # opened by now: SQLite keeps it open
        except BaseException as err:
            if connection is not None:
                connection.close()
            if isinstance(err, sqlite3.OperationalError) and not os.path.exists(self.path):
                raise ClusterError(_lost(self.path, "is missing")) from err
            if isinstance(err, sqlite3.DatabaseError) and not isinstance(err, sqlite3.OperationalError):
                raise ClusterError(_lost(self.path, f"is corrupt ({err})")) from err
            raise  # locked, read-only, out of space...: not a lost database
        return connection

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """An immediate (write-locked) transaction on this thread's connection, committed on success."""
        connection = self.connection
        assert isinstance(connection, MetadataConnection)
        connection.execute("BEGIN IMMEDIATE")
        try:
            # SQLite writes on to a -wal file removed under it (its descriptor stays open), so every
            # commit after would be lost: refuse to write once the file is not the one it opened.
            check_wal(connection.database_path, connection.wal_identity)
            yield connection
        except BaseException:
            # SQLite may have rolled back already (SQLITE_FULL, an I/O error): a ROLLBACK then
            # fails ("no transaction is active") and would hide the error that says why.
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        try:
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:  # a failed COMMIT leaves it open: end it, keep the error
                connection.execute("ROLLBACK")
            raise
        self._local.own_commits += 1

    @contextmanager
    def locked_read(self, wait_ms: int) -> Iterator[sqlite3.Connection]:
        """A read ordered after every write transaction in flight: it takes the write lock
        (BEGIN IMMEDIATE, waiting at most ``wait_ms``), reads, and rolls back, so nothing is
        written. For a reader that must know no decision taken before it is still to land.
        sqlite3.OperationalError when the lock was not had in time (or the file is read-only)."""
        connection = self.connection
        usual_ms = int(connection.execute("PRAGMA busy_timeout").fetchone()[0])
        connection.execute(f"PRAGMA busy_timeout = {int(wait_ms)}")
        try:
            connection.execute("BEGIN IMMEDIATE")
        finally:
            connection.execute(f"PRAGMA busy_timeout = {usual_ms}")
        try:
            yield connection
        finally:
            connection.execute("ROLLBACK")

    @contextmanager
    def _changing(self) -> Iterator[sqlite3.Connection]:
        """A transaction that changes what metadata-snapshot.json holds (log dirs, topics,
        schemas, placement): before COMMIT it bumps the metadata version and rewrites the
        snapshot (:mod:`kstream.log.cluster.metadata_snapshot`: never behind SQLite)."""
        with self.transaction() as tx:
            yield tx
            metadata_snapshot.write(tx, self.cluster_dir, metadata_snapshot.bump_version(tx))

    def ensure_snapshot(self) -> None:
        """Rewrite metadata-snapshot.json when it is missing (a cluster made before it existed)
        or its version is not SQLite's (a crash between its rename and COMMIT left it ahead)."""
        if metadata_snapshot.snapshot_version(self.cluster_dir) == metadata_snapshot.stored_version(
                self.connection):
            return
        with self._changing():
            pass

    def close(self) -> None:
        """Close this process's connections, every thread's: call it when no other thread is
        using this Metadata any more. A later use opens a new connection."""
        with self._guard:
            self._generation += 1
            opened, self._open = self._open, {}
        for pid, connection in opened.values():
            if pid == os.getpid():
                connection.close()
        self._local.connection = None

    def ensure_schema(self, name: str, ddl: str) -> None:
        """Make the tables and indexes of another module's ``CREATE ... IF NOT EXISTS``
        script ``ddl`` that are missing. For write paths only: readers create nothing (they
        read a missing table as an empty one, :meth:`read_rows`). Checked once per connection;
        when something is missing, the whole script runs in one write transaction, so its
        tables appear together and two processes creating at once queue on SQLite's write
        lock (the second finds them made). Never call it inside a transaction."""
        if self.has_schema(name, ddl):
            return
        with self.transaction() as tx:
            for statement in ddl.split(";"):
                if statement.strip():
                    tx.execute(statement)
        self._local.schemas_made.add(name)

    def has_schema(self, name: str, ddl: str) -> bool:
        """Does every table and index of ``ddl`` exist? Writes nothing (once true, it stays
        true for this connection: kstream never drops them)."""
        connection = self.connection  # (a new one starts with an empty schemas_made)
        if name in self._local.schemas_made:
            return True
        wanted = set(_SCHEMA_OBJECT.findall(ddl))
        found = {r[0] for r in connection.execute(
            f"SELECT name FROM sqlite_master WHERE name IN ({','.join('?' * len(wanted))})", tuple(wanted))}
        if found != wanted:
            return False
        self._local.schemas_made.add(name)
        return True

    def read_rows(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        """The rows of a read on this thread's connection; none when a table it reads does not
        exist. A table is made by the first writer that needs it (readers create nothing) and
        a cluster made by an older kstream may lack newer ones: either way nothing was ever
        written to it, so it reads as empty."""
        try:
            return self.connection.execute(sql, args).fetchall()
        except sqlite3.OperationalError as err:
            if str(err).startswith("no such table"):
                return []
            raise

    def data_version(self) -> DataVersion:
        """Changes whenever anyone commits (another connection, or this one through
        :meth:`transaction`): a cheap staleness check for caches."""
        others = int(self.connection.execute("PRAGMA data_version").fetchone()[0])
        # Per connection: another thread's answer differs in its first field, so a cache
        # shared between threads sees a change (and re-reads) rather than missing one.
        return (self._local.number, others, self._local.own_commits)

    # -- log dirs ----------------------------------------------------------------

    def register_log_dirs(self, paths: list[str]) -> None:
        with self._changing() as tx:
            for path in paths:
                tx.execute("INSERT OR IGNORE INTO log_dirs (path) VALUES (?)", (path,))

    def log_dirs(self) -> list[tuple[int, str, bool]]:
        rows = self.connection.execute("SELECT id, path, online FROM log_dirs ORDER BY id")
        return [(row[0], row[1], bool(row[2])) for row in rows]

    def set_log_dir_online(self, log_dir_id: int, online: bool) -> None:
        """Mark a log dir online (or offline, without moving leaders: see take_log_dir_offline).

        Online again, it also repairs partitions an older kstream left with an empty ISR
        while their leader was on this dir: that leader, the last in-sync replica, rejoins
        (writers check it still has every acknowledged record before they trust it)."""
        with self._changing() as tx:
            tx.execute("UPDATE log_dirs SET online = ? WHERE id = ?", (int(online), log_dir_id))
            if online:
                tx.execute("UPDATE partitions SET isr = ? WHERE leader = ? AND isr = '[]'",
                           (json.dumps([log_dir_id]), log_dir_id))

    def move_log_dirs(self, paths: Mapping[int, str]) -> None:
        """Record new paths for log dirs whose data now lives there (a restored backup, a disk
        mounted elsewhere): log dir id -> path (relative: to the cluster dir). One transaction;
        the snapshot follows. ClusterError for an id the cluster does not have."""
        with self._changing() as tx:
            # Through a placeholder first, so two dirs may swap paths (the paths are UNIQUE).
            for log_dir_id in paths:
                tx.execute("UPDATE log_dirs SET path = ? WHERE id = ?", (f"//moving-{log_dir_id}", log_dir_id))
            for log_dir_id, path in paths.items():
                if not tx.execute("UPDATE log_dirs SET path = ? WHERE id = ?", (path, log_dir_id)).rowcount:
                    raise ClusterError(f"no log dir {log_dir_id} in {self.path}")

    def formatted_log_dirs(self) -> set[int]:
        """Log dirs given their meta.properties: from then on, a missing one is a failed disk."""
        return {row[0] for row in self.connection.execute("SELECT id FROM formatted_log_dirs")}

    def mark_log_dir_formatted(self, log_dir_id: int) -> None:
        with self.transaction() as tx:
            tx.execute("INSERT OR IGNORE INTO formatted_log_dirs VALUES (?)", (log_dir_id,))

    # -- topics ------------------------------------------------------------------

    def topic_names(self) -> list[str]:
        return [row[0] for row in self.connection.execute("SELECT name FROM topics ORDER BY name")]

    def create_topic(self, name: str, replication_factor: int, config: Mapping[str, str],
                     placements: list[tuple[int, ...]], schema: bytes | None) -> TopicInfo:
        with self._changing() as tx:
            if tx.execute("SELECT 1 FROM topics WHERE name = ?", (name,)).fetchone():
                raise TopicExistsError(f"topic {name!r} already exists")
            tx.execute(
                "INSERT INTO topics VALUES (?, ?, ?, ?, ?)",
                (name, uuid.uuid4().hex, replication_factor, json.dumps(dict(config)),
                 int(time.time() * 1000)),
            )
            if schema is not None:
                tx.execute("INSERT INTO topic_schemas VALUES (?, 0, ?)", (name, schema))
            self._insert_partitions(tx, name, 0, placements)
        return self.topic(name)

    @staticmethod
    def _insert_partitions(tx: sqlite3.Connection, name: str, first: int,
                           placements: list[tuple[int, ...]]) -> None:
        for i, replicas in enumerate(placements):
            tx.execute(
                "INSERT INTO partitions VALUES (?, ?, ?, ?, 0, ?)",
                (name, first + i, json.dumps(list(replicas)), replicas[0], json.dumps(list(replicas))),
            )

    def add_partitions(self, name: str, placements: list[tuple[int, ...]]) -> TopicInfo:
        with self._changing() as tx:
            count = tx.execute("SELECT COUNT(*) FROM partitions WHERE topic = ?", (name,)).fetchone()[0]
            if count == 0:
                raise TopicNotFoundError(self._missing(name))
            self._insert_partitions(tx, name, count, placements)
        return self.topic(name)

    def delete_topic(self, name: str) -> TopicInfo:
        info = self.topic(name)
        with self._changing() as tx:
            for table, column in (("topics", "name"), ("partitions", "topic"), ("topic_schemas", "topic")):
                tx.execute(f"DELETE FROM {table} WHERE {column} = ?", (name,))
        return info

    def set_topic_config(self, name: str, config: Mapping[str, str]) -> None:
        with self._changing() as tx:
            changed = tx.execute("UPDATE topics SET config = ? WHERE name = ?",
                                 (json.dumps(dict(config)), name)).rowcount
            if not changed:
                raise TopicNotFoundError(self._missing(name))

    def add_schema_version(self, name: str, schema: bytes) -> None:
        with self._changing() as tx:
            version = tx.execute("SELECT COALESCE(MAX(version), -1) + 1 FROM topic_schemas "
                                 "WHERE topic = ?", (name,)).fetchone()[0]
            tx.execute("INSERT INTO topic_schemas VALUES (?, ?, ?)", (name, version, schema))

    def topic(self, name: str) -> TopicInfo:
        connection = self.connection
        row = connection.execute(
            "SELECT topic_id, replication_factor, config, created_ms FROM topics WHERE name = ?", (name,)
        ).fetchone()
        if row is None:
            raise TopicNotFoundError(self._missing(name))
        partitions = tuple(
            PartitionInfo(name, p, tuple(json.loads(replicas)), leader, epoch, tuple(json.loads(isr)))
            for p, replicas, leader, epoch, isr in connection.execute(
                "SELECT partition, replicas, leader, leader_epoch, isr FROM partitions "
                "WHERE topic = ? ORDER BY partition", (name,))
        )
        schemas = tuple(row2[0] for row2 in connection.execute(
            "SELECT schema FROM topic_schemas WHERE topic = ? ORDER BY version", (name,)))
        return TopicInfo(name, row[0], row[1], json.loads(row[2]), partitions, schemas, row[3])

    def partition_info(self, topic: str, partition: int) -> PartitionInfo:
        row = self.connection.execute(
            "SELECT replicas, leader, leader_epoch, isr FROM partitions WHERE topic = ? AND partition = ?",
            (topic, partition)).fetchone()
        if row is None:
            raise TopicNotFoundError(self._missing(topic))
        return PartitionInfo(topic, partition, tuple(json.loads(row[0])), row[1], row[2],
                             tuple(json.loads(row[3])))

    def remove_from_isr(self, topic: str, partition: int, removed: set[int]) -> PartitionInfo:
        """Drop replicas from the ISR; if the leader goes, the first remaining in-sync
        replica (in replica order) leads with the epoch bumped. The last in-sync replica
        is never dropped (see :meth:`_remove`). One transaction."""
        with self._changing() as tx:
            row = tx.execute("SELECT replicas, leader, leader_epoch, isr FROM partitions "
                             "WHERE topic = ? AND partition = ?", (topic, partition)).fetchone()
            if row is None:
                raise TopicNotFoundError(self._missing(topic))
            self._remove(tx, topic, partition, json.loads(row[0]), row[1], row[2], json.loads(row[3]),
                         removed)
        return self.partition_info(topic, partition)

    @staticmethod
    def _remove(tx: sqlite3.Connection, topic: str, partition: int, replicas: list[int], leader: int,
                epoch: int, isr: list[int], removed: set[int]) -> None:
        new_isr = [r for r in isr if r not in removed]
        if not new_isr and isr:
            # As in Kafka, the ISR never shrinks to empty: the last in-sync replica stays
            # (it has every acknowledged record) and keeps leading. While its log dir is
            # offline the partition is offline; it comes back with that log dir, with no
            # unclean election (nothing was lost).
            new_isr = [leader] if leader in isr else isr[:1]
        if leader not in new_isr and new_isr:
            leader = next(r for r in replicas if r in new_isr)
            epoch += 1
        tx.execute("UPDATE partitions SET isr = ?, leader = ?, leader_epoch = ? "
                   "WHERE topic = ? AND partition = ?", (json.dumps(new_isr), leader, epoch, topic, partition))

    def add_to_isr(self, topic: str, partition: int, replica: int) -> PartitionInfo:
        """A caught-up replica rejoins the ISR. If the ISR was empty it also leads
        (with a bumped epoch)."""
        with self._changing() as tx:
            row = tx.execute("SELECT replicas, leader, leader_epoch, isr FROM partitions "
                             "WHERE topic = ? AND partition = ?", (topic, partition)).fetchone()
            if row is None:
                raise TopicNotFoundError(self._missing(topic))
            replicas, leader, epoch, isr = json.loads(row[0]), row[1], row[2], json.loads(row[3])
            if replica not in isr:
                isr = [r for r in replicas if r in isr or r == replica]
                if len(isr) == 1:
                    leader, epoch = replica, epoch + 1
                tx.execute("UPDATE partitions SET isr = ?, leader = ?, leader_epoch = ? "
                           "WHERE topic = ? AND partition = ?", (json.dumps(isr), leader, epoch, topic, partition))
        return self.partition_info(topic, partition)

    def elect_unclean(self, topic: str, partition: int, replica: int) -> PartitionInfo:
        """Unclean leader election: ``replica`` (on an online log dir, not in sync) becomes
        the only in-sync replica and the leader, epoch bumped; what it lacks is lost."""
        with self._changing() as tx:
            changed = tx.execute("UPDATE partitions SET isr = ?, leader = ?, leader_epoch = leader_epoch + 1 "
                                 "WHERE topic = ? AND partition = ?",
                                 (json.dumps([replica]), replica, topic, partition)).rowcount
            if not changed:
                raise TopicNotFoundError(self._missing(topic))
        return self.partition_info(topic, partition)

    def set_replicas(self, topic: str, partition: int, replicas: list[int]) -> PartitionInfo:
        """Change a partition's replica list. The ISR keeps only listed replicas; if the
        leader is dropped, the first listed in-sync replica leads with a bumped epoch."""
        with self._changing() as tx:
            row = tx.execute("SELECT leader, leader_epoch, isr FROM partitions WHERE topic = ? AND partition = ?",
                             (topic, partition)).fetchone()
            if row is None:
                raise TopicNotFoundError(self._missing(topic))
            leader, epoch, isr = row[0], row[1], json.loads(row[2])
            new_isr = [r for r in replicas if r in isr]
            if leader not in replicas and new_isr:
                leader, epoch = new_isr[0], epoch + 1
            tx.execute("UPDATE partitions SET replicas = ?, isr = ?, leader = ?, leader_epoch = ? "
                       "WHERE topic = ? AND partition = ?",
                       (json.dumps(replicas), json.dumps(new_isr), leader, epoch, topic, partition))
        return self.partition_info(topic, partition)

    def elect_preferred_leaders(self, topics: list[str] | None = None,
                                partitions: set[tuple[str, int]] | None = None) -> int:
        """Leadership back to each partition's first replica where it is in sync (of
        ``topics``, or of ``partitions``: (topic, partition) pairs, or all); one
        transaction; returns how many partitions changed leader."""
        changed = 0
        with self._changing() as tx:
            rows = tx.execute("SELECT topic, partition, replicas, leader, leader_epoch, isr FROM partitions")
            for topic, partition, replicas, leader, epoch, isr in rows.fetchall():
                if topics and topic not in topics:
                    continue
                if partitions is not None and (topic, partition) not in partitions:
                    continue
                preferred = json.loads(replicas)[0]
                if preferred != leader and preferred in json.loads(isr):
                    tx.execute("UPDATE partitions SET leader = ?, leader_epoch = ? WHERE topic = ? AND partition = ?",
                               (preferred, epoch + 1, topic, partition))
                    changed += 1
        return changed

    def take_log_dir_offline(self, log_dir_id: int) -> int:
        """Mark a log dir offline and move every partition off it in one transaction
        (out of the ISR; new leaders with bumped epochs). Returns partitions changed."""
        changed = 0
        with self._changing() as tx:
            tx.execute("UPDATE log_dirs SET online = 0 WHERE id = ?", (log_dir_id,))
            rows = tx.execute("SELECT topic, partition, replicas, leader, leader_epoch, isr "
                              "FROM partitions").fetchall()
            for topic, partition, replicas, leader, epoch, isr in rows:
                isr_list = json.loads(isr)
                if log_dir_id in isr_list:
                    self._remove(tx, topic, partition, json.loads(replicas), leader, epoch, isr_list,
                                 {log_dir_id})
                    changed += 1
        return changed

    def _missing(self, name: str) -> str:
        names = self.topic_names()
        listing = ", ".join(names[:20]) + (" ..." if len(names) > 20 else "") if names else "none"
        return (f"topic {name!r} does not exist (existing topics: {listing}); create it with "
                f"`kstream topics create {name}` or Admin.create_topics")

    def next_counter(self, name: str) -> int:
        """A cluster-wide increasing number (e.g. producer ids)."""
        with self.transaction() as tx:
            return self.next_counter_in(tx, name)

    @staticmethod
    def next_counter_in(tx: sqlite3.Connection, name: str) -> int:
        """:meth:`next_counter` inside the caller's :meth:`transaction` (one commit for both)."""
        tx.execute("INSERT OR IGNORE INTO counters VALUES (?, 0)", (name,))
        tx.execute("UPDATE counters SET value = value + 1 WHERE name = ?", (name,))
        return int(tx.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()[0])

    def counter(self, name: str) -> int:
        """A counter's current value, 0 if it was never counted (reads only)."""
        row = self.connection.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()
        return 0 if row is None else int(row[0])

    def partition_count_by_log_dir(self) -> dict[int, int]:
        """Replicas per log dir id, for balanced placement."""
        counts: dict[int, int] = {}
        for (replicas,) in self.connection.execute("SELECT replicas FROM partitions"):
            for log_dir in json.loads(replicas):
                counts[log_dir] = counts.get(log_dir, 0) + 1
        return counts

"""``metadata-snapshot.json``: the cluster metadata a reader needs, without SQLite.

The JVM reader (``jvm/``) has no SQLite driver, so the placement it plans from
(log dirs as stored: a relative path is relative to the cluster dir; topics,
their ids, configs and schemas; each partition's replicas, leader, leader
epoch and ISR) is also kept in one JSON file in the cluster
dir, described in docs/FORMAT.md. SQLite stays the truth; the snapshot is
derived from it:

* :class:`kstream.log.cluster.metadata.Metadata` rewrites it inside every SQLite
  transaction that changes any of it, before COMMIT (so two writers never
  race a stale snapshot over a newer one: the SQLite write lock orders them),
  bumping the ``metadata_version`` counter in the same transaction. It is
  written as ``.tmp``, fsynced, renamed, and the directory fsynced.
* So it is never behind SQLite. A crash between the rename and COMMIT leaves
  it one change ahead; :meth:`Metadata.ensure_snapshot` (run when a cluster is
  opened) rewrites it when its version differs from SQLite's or it is missing
  (a cluster made by a kstream before this file existed).

``metadata_version`` is the first key, so a staleness check reads a few bytes.
"""

from __future__ import annotations

import base64
import json
import os
import re
import sqlite3
from typing import Any

from kstream.log.storage import format as fmt
from kstream.log.storage.durable_file import read_properties, write_atomically

VERSION_COUNTER = "metadata_version"
SNAPSHOT_FORMAT_VERSION = 1
_VERSION_PREFIX = re.compile(rb'^\{"metadata_version": (\d+),')
_PREFIX_BYTES = 64


def snapshot_path(cluster_dir: str) -> str:
    return os.path.join(cluster_dir, fmt.METADATA_SNAPSHOT)


def bump_version(tx: sqlite3.Connection) -> int:
    """Advance the metadata version in ``tx`` (the transaction that changed the metadata)."""
    tx.execute("INSERT OR IGNORE INTO counters VALUES (?, 0)", (VERSION_COUNTER,))
    tx.execute("UPDATE counters SET value = value + 1 WHERE name = ?", (VERSION_COUNTER,))
    return stored_version(tx)


def stored_version(connection: sqlite3.Connection) -> int:
    row = connection.execute("SELECT value FROM counters WHERE name = ?", (VERSION_COUNTER,)).fetchone()
    return 0 if row is None else int(row[0])


def snapshot_version(cluster_dir: str) -> int | None:
    """The version in the snapshot file, or None when it is missing or unreadable."""
    try:
        with open(snapshot_path(cluster_dir), "rb") as f:
            head = f.read(_PREFIX_BYTES)
    except FileNotFoundError:
        return None
    match = _VERSION_PREFIX.match(head)
    return int(match.group(1)) if match else None


def build(connection: sqlite3.Connection, cluster_dir: str, version: int) -> dict[str, Any]:
    """The snapshot's content, read through ``connection`` (inside the changing transaction)."""
    properties_path = os.path.join(cluster_dir, fmt.CLUSTER_PROPERTIES)
    properties = read_properties(properties_path) if os.path.exists(properties_path) else {}
    log_dirs = [{"id": i, "path": path, "online": bool(online)}
                for i, path, online in connection.execute("SELECT id, path, online FROM log_dirs ORDER BY id")]
    topics: dict[str, Any] = {}
    for name, topic_id, replication_factor, config in connection.execute(
            "SELECT name, topic_id, replication_factor, config FROM topics ORDER BY name"):
        topics[name] = {"topic_id": topic_id, "replication_factor": replication_factor,
                        "config": json.loads(config), "schemas": [], "partitions": []}
    for topic, schema in connection.execute("SELECT topic, schema FROM topic_schemas ORDER BY topic, version"):
        if topic in topics:
            topics[topic]["schemas"].append(base64.b64encode(bytes(schema)).decode("ascii"))
    for topic, replicas, leader, epoch, isr in connection.execute(
            "SELECT topic, replicas, leader, leader_epoch, isr FROM partitions ORDER BY topic, partition"):
        if topic in topics:
            topics[topic]["partitions"].append({"replicas": json.loads(replicas), "leader": leader,
                                                "leader_epoch": epoch, "isr": json.loads(isr)})
    return {"metadata_version": version, "format_version": SNAPSHOT_FORMAT_VERSION,
            "cluster_id": properties.get("kstream.cluster.id", ""), "log_dirs": log_dirs, "topics": topics}


def write(connection: sqlite3.Connection, cluster_dir: str, version: int) -> None:
    """Write the snapshot of what ``connection`` sees, atomically and durably."""
    data = json.dumps(build(connection, cluster_dir, version), separators=(", ", ": ")).encode()
    write_atomically(snapshot_path(cluster_dir), data)


def read(cluster_dir: str) -> dict[str, Any]:
    """The snapshot as written (for tests and tools; the Python reader plans from SQLite)."""
    with open(snapshot_path(cluster_dir), "rb") as f:
        result: dict[str, Any] = json.load(f)
    return result

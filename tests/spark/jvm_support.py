"""Helpers of the JVM reader's Spark tests: the jar, the reader choice, and (until the lead's
snapshot writer is on this branch) a metadata-snapshot.json written from metadata.db with
the layout of the issue-14 brief."""

from __future__ import annotations

import base64
import json
import os
import sqlite3

from kstream.jars import jar_path

JAR = jar_path()
NO_JAR_REASON = "no kstream JVM jar (make install builds it with javac; see docs/JVM_READER.md)"


def write_snapshot(cluster_path: str) -> None:
    """metadata-snapshot.json from the cluster's SQLite metadata (what the Python side writes
    inside each metadata transaction once the lead's writer lands)."""
    db = sqlite3.connect(f"file:{os.path.join(cluster_path, 'metadata.db')}?mode=ro", uri=True)
    try:
        log_dirs = [{"id": i, "path": p, "online": bool(o)}
                    for i, p, o in db.execute("SELECT id, path, online FROM log_dirs ORDER BY id")]
        topics = {}
        for name, topic_id, rf, config in db.execute(
                "SELECT name, topic_id, replication_factor, config FROM topics ORDER BY name"):
            topics[name] = {"topic_id": topic_id, "replication_factor": rf, "config": json.loads(config),
                            "schemas": [], "partitions": []}
        for topic, schema in db.execute("SELECT topic, schema FROM topic_schemas ORDER BY topic, version"):
            topics[topic]["schemas"].append(base64.b64encode(bytes(schema)).decode("ascii"))
        for topic, replicas, leader, epoch, isr in db.execute(
                "SELECT topic, replicas, leader, leader_epoch, isr FROM partitions ORDER BY topic, partition"):
            topics[topic]["partitions"].append({"replicas": json.loads(replicas), "leader": leader,
                                                "leader_epoch": epoch, "isr": json.loads(isr)})
    finally:
        db.close()
    snapshot = {"metadata_version": 0, "format_version": 1, "cluster_id": "", "log_dirs": log_dirs,
                "topics": topics}
    tmp = os.path.join(cluster_path, "metadata-snapshot.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(snapshot, f)
    os.replace(tmp, os.path.join(cluster_path, "metadata-snapshot.json"))

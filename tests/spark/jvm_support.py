"""Helpers of the JVM reader's Spark tests: the jar, running one read through both readers
(``ReadBoth``, for tests/spark and the conformance suite), .txnindex files written from the
frames (to hand-craft what the JVM reader trusts), and a metadata-snapshot.json fallback for
a checkout without the snapshot writer."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import struct

import crc32c
import pyarrow as pa
import pytest

from kstream.jars import jar_path
from kstream.log import format as fmt

JAR = jar_path()
NO_JAR_REASON = "no kstream JVM jar (make install builds it with javac; see docs/JVM_READER.md)"
READERS = ("jvm", "python")


def load(spark, cluster_path, reader, **options):  # type: ignore[no-untyped-def]
    """A DataFrame of format("kstream") read by ``reader``; ``__`` in option names stands for ``.``."""
    write_snapshot(cluster_path)  # what the lead's snapshot writer keeps current once merged
    frame = spark.read.format("kstream").option("cluster", cluster_path).option("reader", reader)
    for key, value in options.items():
        frame = frame.option(key.replace("__", "."), value)
    return frame.load()


def rows(frame):  # type: ignore[no-untyped-def]
    """The rows as tuples (arrays of structs as tuples), in a stable order."""
    out = []
    for row in frame.collect():
        out.append(tuple(tuple(tuple(e) for e in v) if isinstance(v, list) else v for v in row))
    return sorted(out, key=lambda t: tuple((v is None, v if isinstance(v, int | float) else repr(v)) for v in t))


class ReadBoth:
    """Runs one read with reader=jvm and reader=python and asserts the same schema and rows
    (``__call__``), or the same error (``error``)."""

    def __init__(self, spark, cluster_path):  # type: ignore[no-untyped-def]
        self.spark = spark
        self.cluster_path = cluster_path

    def __call__(self, **options):  # type: ignore[no-untyped-def]
        results = {}
        for reader in READERS:
            frame = load(self.spark, self.cluster_path, reader, **options)
            results[reader] = (frame.schema, rows(frame))
        assert results["jvm"][0] == results["python"][0]
        assert results["jvm"][1] == results["python"][1]
        return results["jvm"]

    def error(self, match, **options):  # type: ignore[no-untyped-def]
        for reader in READERS:
            with pytest.raises(Exception, match=match):
                load(self.spark, self.cluster_path, reader, **options).collect()


def write_txn_indexes(replica_dir: str) -> int:
    """Write each segment's .txnindex from its frames (the brief's layout: kind u8, 3 zero
    bytes, producer id i64, offset i64, CRC-32C of the 20 bytes before it); entries written."""
    written = 0
    for name in sorted(os.listdir(replica_dir)):
        base = fmt.parse_segment_file_name(name)
        if base is None:
            continue
        with open(os.path.join(replica_dir, name), "rb") as f:
            data = f.read()
        entries = b""
        position = 0
        while position + fmt.HEADER_SIZE <= len(data):
            header = fmt.unpack_header(data[position:position + fmt.HEADER_SIZE])
            if header.length == 0 or fmt.header_problem(data[position:position + fmt.HEADER_SIZE], header):
                break
            if header.attributes & fmt.TRANSACTIONAL:
                kind = 1
                if header.attributes & fmt.CONTROL:
                    payload = data[position + fmt.HEADER_SIZE:position + header.frame_size]
                    value = pa.ipc.open_stream(payload).read_next_batch().column("value")[0].as_py()
                    kind = {b"COMMIT": 2, b"ABORT": 3}[value]
                raw = struct.pack("<B3xqq", kind, header.producer_id, header.base_offset)
                entries += raw + struct.pack("<I", crc32c.crc32c(raw))
                written += 1
            position += header.frame_size
        with open(os.path.join(replica_dir, fmt.segment_file_name(base, ".txnindex")), "wb") as f:
            f.write(entries)
    return written


def write_snapshot(cluster_path: str) -> None:
    """metadata-snapshot.json from the cluster's SQLite metadata (what the Python side writes
    inside each metadata transaction once the lead's writer lands; with that writer present
    this does nothing)."""
    import importlib.util

    if importlib.util.find_spec("kstream.log.metadata_snapshot") is not None:
        return
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

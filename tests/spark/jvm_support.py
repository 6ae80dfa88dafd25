"""Helpers of the JVM reader's Spark tests: the jar, running one read through both readers
(``ReadBoth``, for tests/spark and the conformance suite), and .txnindex files rewritten from
the frames (to hand-craft what the JVM reader trusts)."""

from __future__ import annotations

import os

import pytest

from kstream.jars import jar_path
from kstream.log.storage import format as fmt
from kstream.log.storage import txn_index
from kstream.log.storage.frames import pread_from

JAR = jar_path()
NO_JAR_REASON = "no kstream JVM jar (make install builds it with javac and mvn; see docs/JVM_READER.md)"
# The bench classes (the Real-time Mode LatencyWriter) ship apart from the reader: jvm/pom.xml
# builds them into this jar, which the test session adds when it was built.
BENCH_JAR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                         "jvm", "target", "kstream-spark-bench.jar")
NO_BENCH_JAR_REASON = f"no {BENCH_JAR} (make jar builds it beside the reader's jar)"
READERS = ("jvm", "python")


def load(spark, cluster_path, reader, **options):  # type: ignore[no-untyped-def]
    """A DataFrame of format("kstream") read by ``reader``; ``__`` in option names stands for ``.``."""
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
    """Rewrite each segment's .txnindex from its frames with kstream's own writer code (a file
    as the writer leaves it, to hand-craft what the JVM reader trusts); entries written."""
    written = 0
    for name in sorted(os.listdir(replica_dir)):
        base = fmt.parse_segment_file_name(name)
        if base is None:
            continue
        path = os.path.join(replica_dir, name)
        with open(path, "rb") as f:
            entries, _ = txn_index.entries_from_frames(pread_from(f.fileno()), os.fstat(f.fileno()).st_size, path)
        with open(txn_index.txn_index_path(replica_dir, base), "wb") as f:
            f.write(b"".join(fmt.pack_txn_entry(e.kind, e.producer_id, e.offset) for e in entries))
        written += len(entries)
    return written

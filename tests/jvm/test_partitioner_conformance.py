"""The Java writer's partitioner (io.kstream.spark.write.Partitioner) puts every key where
Python's does (kstream.client.partitioner, row by row and vectorised) and, when the Kafka peer's
jars are there (``make kafka``, ``$KSTREAM_KAFKA_LIB``), where Kafka's own Java client does.

The keys are generated here (seeded): empty, ASCII, non-ASCII UTF-8, every length 0..64 of
random bytes (each tail length of murmur2), and long keys, over partition counts from 1 to
2**31 - 1. Java answers through PartitionerProbe.java (compiled once by tests/java_probes.py, the kstream jar on the
class path); without java or a built jar this skips with one line.
"""

from __future__ import annotations

import random
import shutil
import subprocess

import pyarrow as pa
import pytest

from java_probes import probe, probe_command
from kstream.client.partitioner import murmur2, partition_for_key, partitions_for_keys
from kstream.jars import jar_path
from kstream.tools.perf.kafka_peer import kafka_lib

PROBE = probe("write/PartitionerProbe.java")
PARTITION_COUNTS = (1, 2, 3, 7, 12, 100, 1000, 2**31 - 1)
JAVA_TIMEOUT_S = 120


def _keys() -> list[bytes]:
    rng = random.Random(22)
    keys = [b"", b"a", b"21", b"abc", b"foobar", b"a-little-bit-long-string",
            "ключ".encode(), "键值".encode(), "clé-😀".encode(), b"\x00", b"\xff\xff\xff\xff", b"\x80" * 7]
    keys += [rng.randbytes(length) for length in range(65)]
    keys += [rng.randbytes(length) for length in (255, 1000, 4096, 100_003)]
    keys += [f"user-{i}".encode() for i in range(200)]
    return keys


def _java(cases: list[tuple[bytes, int]]) -> tuple[list[list[int]], bool]:
    """Java's answers per case, and whether Kafka's own client answered too."""
    classpath = [jar_path()]
    broker = kafka_lib() / "broker"
    with_kafka = any(broker.glob("kafka-clients-*.jar"))
    if with_kafka:
        classpath.append(str(broker / "*"))
    stdin = "".join(f"{key.hex()} {count}\n" for key, count in cases)
    result = subprocess.run(probe_command(PROBE, classpath=classpath), input=stdin, capture_output=True,
                            text=True, timeout=JAVA_TIMEOUT_S, check=False)
    assert result.returncode == 0, result.stderr[-5000:]
    rows = [[int(v) for v in line.split()] for line in result.stdout.splitlines()]
    assert len(rows) == len(cases)
    return rows, with_kafka


@pytest.mark.jvm
def test_java_partitions_every_key_as_python_and_kafka_do():
    if shutil.which("java") is None or jar_path() is None:
        pytest.skip("no java or no kstream jar (jvm/build.sh): the Java partitioner not compared")
    keys = _keys()
    cases = [(key, count) for count in PARTITION_COUNTS for key in keys]
    rows, with_kafka = _java(cases)
    for count in PARTITION_COUNTS:
        vectorised = partitions_for_keys(pa.array(keys, pa.binary()), count)
        assert list(vectorised) == [partition_for_key(key, count) for key in keys]
    for (key, count), row in zip(cases, rows, strict=True):
        expected = [murmur2(key), partition_for_key(key, count)]
        assert row[:2] == expected, (key[:40], count)
        if with_kafka:
            assert row[2:] == expected, ("Kafka's client", key[:40], count)
    if not with_kafka:
        print("no kafka-clients jar (make kafka): compared with Python only")

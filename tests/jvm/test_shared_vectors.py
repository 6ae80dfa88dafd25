"""The shared format vectors (tests/jvm/vectors.py), read by both languages.

Python reads them back here with format.py and the Consumer; then the JUnit 5 tests of jvm/
read the same files (``mvn -o test -Dkstream.vectors=DIR``), so a Java failure fails
``make test``. Without Maven, or with no jar built (jvm/build.sh said why in one line), the
Java half skips with one line; the Python half always runs.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest
from tests.jvm.vectors import write_vectors

from kstream import Consumer, TopicPartition
from kstream.jars import jar_path
from kstream.log import offset_for_timestamp
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import format as fmt
from kstream.log.storage.records import PayloadCodec
from kstream.log.transactions.isolation import Isolation
from kstream.log.transactions.store import TransactionStore
from kstream.log.visible_reads import read_visible

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POM = os.path.join(ROOT, "jvm", "pom.xml")
REPORTS = os.path.join(ROOT, "jvm", "target", "surefire-reports")
MAVEN_TIMEOUT_S = 600
# Test classes that read the vectors: each must have run, none skipped.
VECTOR_TESTS = ("FormatParityTest", "FrameVectorTest", "IndexVectorTest", "RecoveryPointVectorTest",
                "HighWatermarkVectorTest", "TxnIndexVectorTest", "MetadataSnapshotVectorTest",
                "OptionNamesParityTest", "OptionParseParityTest", "TimestampVectorTest", "CleanedVectorTest")


@pytest.fixture(scope="module")
def vectors(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("vectors"))
    return directory, write_vectors(directory)


def _read(cluster: str, topic: str, partition: int, isolation: str) -> list:
    consumer = Consumer({"cluster": cluster, "isolation.level": isolation})
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        messages: list = []
        for _ in range(100):
            batch = consumer.consume(1000, timeout=0.1)
            if not batch and messages:
                break
            messages += batch
        return messages
    finally:
        consumer.close()


def test_python_reads_every_codec(vectors):
    directory, manifest = vectors
    cluster = os.path.join(directory, "cluster")
    for partition, codec in enumerate(manifest["codecs"]):
        replica = manifest["replicas"][f"codecs-{partition}"]
        assert {frame["attributes"] & fmt.CODEC_MASK for frame in replica["frames"]} == {fmt.CODECS[codec]}
        messages = _read(cluster, "codecs", partition, "read_uncommitted")
        expected = manifest["records"][f"codecs-{partition}"]
        assert [m.offset() for m in messages] == list(range(len(expected)))
        for message, record in zip(messages, expected, strict=True):
            assert message.value() == record["value"].encode()
            assert message.key() == (None if record["key"] is None else record["key"].encode())
            assert message.timestamp()[1] == record["timestamp"]
            assert [[name, value.decode()] for name, value in message.headers() or []] == record["headers"]


def test_python_reads_transactions_under_both_isolations(vectors):
    directory, manifest = vectors
    cluster = os.path.join(directory, "cluster")
    records = manifest["records"]["txn-0"]
    everything = [r["value"] for r in records if not r["control"]]
    committed = [r["value"] for r in records if not r["control"] and not r["aborted"]]
    assert [m.value().decode() for m in _read(cluster, "txn", 0, "read_uncommitted")] == everything
    assert [m.value().decode() for m in _read(cluster, "txn", 0, "read_committed")] == committed


def test_python_reads_the_hand_made_files(vectors):
    directory, manifest = vectors
    files = os.path.join(directory, "files")
    for name, expected in manifest["files"].items():
        if name.startswith("rp-"):
            with open(os.path.join(files, name, fmt.RECOVERY_POINT_FILE), "rb") as handle:
                unpacked = fmt.unpack_recovery_point_file(handle.read())
            assert (None if unpacked is None else list(unpacked[1])) == expected, name
        elif name.startswith("hw-"):
            with open(os.path.join(files, name), "rb") as handle:
                raw = handle.read()[fmt.LOCK_HIGH_WATERMARK_POSITION:]
            assert fmt.unpack_high_watermark(raw) == expected, name
        else:
            with open(os.path.join(files, name, fmt.segment_file_name(0, fmt.TXN_INDEX_SUFFIX)), "rb") as handle:
                entries, whole = fmt.unpack_txn_entries(handle.read())
            assert [list(entry) for entry in entries] == expected["entries"]
            assert whole == expected["whole"]


def test_python_answers_the_timestamp_lookups(vectors):
    """The offset-for-timestamp rows the JUnit TimestampVectorTest checks, answered by the engine's
    face from the files alone (no metadata outcomes, as the Java reader reads them)."""
    directory, manifest = vectors
    cluster = Cluster.open(os.path.join(directory, "timestamps"))
    try:
        rows = manifest["timestamps"]
        assert len(rows) >= 50
        for row in rows:
            handle = cluster.partition(row["topic"], row["partition"])
            try:
                found = offset_for_timestamp(handle, row["target"], row["isolation"])
            finally:
                handle.close()
            got = (-1, -1) if found is None else (found.offset, found.timestamp_ms)
            assert got == (row["offset"], row["timestamp"]), row
    finally:
        cluster.close()


def _row(message) -> list:
    value = message.value()
    return [message.offset(), message.key().decode(), None if value is None else value.decode(),
            message.timestamp()[1]]


def test_the_cleaned_partition_holds_every_kind_of_cleaned_frame(vectors):
    _, manifest = vectors
    frames = manifest["replicas"]["cleaned-0"]["frames"]
    filler = fmt.HEADER_SIZE - fmt.LENGTH_SIZE
    kinds = {(frame["attributes"] & ~fmt.CODEC_MASK, frame["attributes"] & fmt.CODEC_MASK) for frame in frames}
    assert (fmt.SPARSE, fmt.CODECS["lz4"]) in kinds and (fmt.SPARSE, fmt.CODECS["zstd"]) in kinds
    assert (fmt.SPARSE | fmt.TRANSACTIONAL, fmt.CODECS["none"]) in kinds  # a committed transaction, cleaned
    assert (fmt.TRANSACTIONAL | fmt.CONTROL, fmt.CODECS["none"]) in kinds  # its marker, kept
    assert 0 in {frame["attributes"] for frame in frames}  # frames the clean left as they were
    fillers = [frame for frame in frames if frame["attributes"] == fmt.SPARSE and frame["length"] == filler]
    assert len(fillers) >= 3  # frames emptied whole: an aborted transaction's data and marker among them
    rows = manifest["cleaned"]["rows"]
    assert any(row[2] is None for row in rows["read_committed"])  # tombstones kept
    assert rows["read_uncommitted"] != rows["read_committed"]  # an aborted transaction after the clean's end


def test_python_reads_the_cleaned_partition_as_the_oracle_says(vectors):
    """The Consumer from the start, and the Spark reader's loop (read_visible) over every
    [start, end) of the partition, starts and ends inside gaps and cleaned frames included."""
    directory, manifest = vectors
    cluster_path = os.path.join(directory, "cluster")
    rows = manifest["cleaned"]["rows"]
    for isolation, expected in rows.items():
        assert [_row(m) for m in _read(cluster_path, "cleaned", 0, isolation)] == expected, isolation
    cluster = Cluster.open(cluster_path)
    handle = cluster.partition("cleaned", 0)
    reader = handle.reader()
    try:
        high_watermark = handle.high_watermark()
        assert high_watermark == manifest["replicas"]["cleaned-0"]["log_end_offset"]
        for isolation, expected in rows.items():
            offsets = [row[0] for row in expected]
            isolation_view = Isolation(isolation, TransactionStore.for_cluster(cluster), "cleaned", 0,
                                       handle.leader_dir)
            end_of_read = isolation_view.end_offset(high_watermark)
            for start in range(end_of_read + 1):
                for end in range(start, end_of_read + 1):
                    got = [int(o) for stored in read_visible(reader, isolation_view, start, end, high_watermark,
                                                             PayloadCodec(), frozenset({"key"}))
                           for o in stored.row_offsets()]
                    assert got == [o for o in offsets if start <= o < end], (isolation, start, end)
    finally:
        reader.close()
        handle.close()
        cluster.close()


def test_python_answers_the_cleaned_partition_timestamp_lookups(vectors):
    directory, manifest = vectors
    cluster = Cluster.open(os.path.join(directory, "cluster"))
    try:
        for row in manifest["cleaned"]["timestamps"]:
            handle = cluster.partition("cleaned", 0)
            try:
                found = offset_for_timestamp(handle, row["target"], row["isolation"])
            finally:
                handle.close()
            assert ((-1, -1) if found is None else (found.offset, found.timestamp_ms)) == \
                (row["offset"], row["timestamp"]), row
    finally:
        cluster.close()


def _java_skip_reason() -> str | None:
    if shutil.which("mvn") is None:
        return "no mvn on PATH (scripts/ensure-java.sh installs it when root on Debian): Java tests not run"
    if jar_path() is None:
        return "no kstream jar was built (jvm/build.sh said why): Java tests not run"
    return None


@pytest.mark.jvm
def test_java_reads_the_vectors(vectors):
    reason = _java_skip_reason()
    if reason:
        pytest.skip(reason)
    directory, _ = vectors
    shutil.rmtree(REPORTS, ignore_errors=True)
    # -o: jvm/build.sh (make) already fetched every plugin and JUnit into ~/.m2.
    result = subprocess.run(["mvn", "-o", "-q", "-B", "-Dstyle.color=never", "-f", POM, "test",
                             f"-Dkstream.vectors={directory}"],
                            capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S, check=False)
    output = (result.stdout + result.stderr)[-20000:]
    assert result.returncode == 0, (f"mvn -o test failed (a resolution error in offline mode means ~/.m2 lacks "
                                    f"what make jar fetches: run make jar):\n{output}")
    suites = {}
    for report in glob.glob(os.path.join(REPORTS, "TEST-*.xml")):
        suite = ET.parse(report).getroot()
        suites[suite.get("name", "").rsplit(".", 1)[-1]] = suite
    for name in VECTOR_TESTS:
        assert name in suites, f"{name} did not run ({sorted(suites)})"
        suite = suites[name]
        assert int(suite.get("tests", "0")) > 0 and suite.get("skipped") == "0", (name, suite.attrib)
        assert suite.get("failures") == "0" and suite.get("errors") == "0", (name, suite.attrib)

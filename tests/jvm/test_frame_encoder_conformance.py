"""Frames encoded by Java (io.kstream.spark.format.FrameEncoder) are frames Python reads: valid
headers and checksums, contiguous offsets, and the same records as Python's encoder makes of the
same rows, for each codec (none, lz4, zstd).

Java writes them through FrameEncoderProbe.java (compiled once by tests/java_probes.py; the kstream jar and pyspark's
jars on the class path; skipped with one line without java or a built jar), whose rows follow
``_row`` here. Byte identity with Python's frames is not expected and is checked not to be
relied on: the headers agree field by field except ``payload_crc``/``header_crc`` and the length,
because Arrow Java and Arrow C++ write other (equally valid) flatbuffer bytes for the same schema
and batch (FrameEncoder's docstring).
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pyarrow as pa
import pytest

from java_probes import SPARK_JARS, probe, probe_command
from kstream.jars import jar_path
from kstream.log.storage import format as fmt
from kstream.log.storage.frames import FrameWalk, pread_from
from kstream.log.storage.records import HEADER_TYPE, PayloadCodec

PROBE = probe("format/FrameEncoderProbe.java")
BATCH_ROWS = (1, 17, 300)  # FrameEncoderProbe.BATCH_ROWS
BASE_TIMESTAMP_MS = 1_700_000_000_000
LEADER_EPOCH = 3
JAVA_TIMEOUT_S = 120


def _row(i: int) -> dict:
    """Row i of FrameEncoderProbe's recipe."""
    key = None if i % 7 == 0 else (b"" if i == 1 else f"k{i}".encode())
    value = b"" if i % 13 == 0 else f"v{i}-{'é' * (i % 5)}".encode()
    headers = ([("h", str(i).encode())] if i % 3 == 0 else []) + ([("n", None)] if i % 11 == 0 else [])
    return {"key": key, "value": value, "timestamp": BASE_TIMESTAMP_MS + i * 10,
            "headers": [{"key": k, "value": v} for k, v in headers]}


def _batch(first: int, rows: int) -> pa.RecordBatch:
    schema = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("timestamp", pa.int64()),
                        ("headers", HEADER_TYPE)])
    return pa.RecordBatch.from_pylist([_row(i) for i in range(first, first + rows)], schema=schema)


@pytest.fixture(scope="module")
def java_frames(tmp_path_factory) -> str:
    if shutil.which("java") is None or jar_path() is None:
        pytest.skip("no java or no kstream jar (jvm/build.sh): the Java frame encoder not compared")
    out = str(tmp_path_factory.mktemp("java-frames"))
    command = probe_command(PROBE, out, classpath=[jar_path(), SPARK_JARS],
                            java_options=["--add-opens=java.base/java.nio=ALL-UNNAMED"])
    result = subprocess.run(command,
                            capture_output=True, text=True, timeout=JAVA_TIMEOUT_S, check=False)
    assert result.returncode == 0, result.stderr[-5000:]
    return out


@pytest.mark.jvm
@pytest.mark.parametrize("codec", ["none", "lz4", "zstd"])
def test_python_reads_java_frames_as_the_records_python_encodes(java_frames, codec):
    path = os.path.join(java_frames, f"{codec}.frames")
    decoder = PayloadCodec()
    fd = os.open(path, os.O_RDONLY)
    try:
        read = pread_from(fd)
        walk = FrameWalk(read, os.fstat(fd).st_size, next_offset=0, verify_payload=True)
        frames = list(walk)
        assert walk.problem is None and walk.position == os.fstat(fd).st_size, walk.problem
        assert len(frames) == len(BATCH_ROWS)
        first = 0
        for k, ((position, header), rows) in enumerate(zip(frames, BATCH_ROWS, strict=True)):
            expected = _batch(first, rows)
            payload = read(position + fmt.HEADER_SIZE, header.payload_size)
            got = decoder.decode(pa.py_buffer(payload), header.schema_length)
            assert got.equals(expected), (codec, k)
            assert got.schema.equals(expected.schema, check_metadata=True)
            transactional = k == 2
            python_payload = PayloadCodec(codec).encode(expected)
            python_header = fmt.unpack_header(fmt.pack_header(
                payload_size=python_payload.size, attributes=fmt.CODECS[codec] | (fmt.TRANSACTIONAL if transactional
                                                                                  else 0),
                base_offset=first, record_count=rows, leader_epoch=LEADER_EPOCH,
                producer_id=77 if transactional else fmt.NO_PRODUCER_ID,
                producer_epoch=2 if transactional else -1, base_sequence=18 if transactional else -1,
                min_timestamp=BASE_TIMESTAMP_MS + first * 10, max_timestamp=BASE_TIMESTAMP_MS + (first + rows - 1) * 10,
                schema_length=python_payload.schema_length, payload_crc=python_payload.crc))
            differ = {"length", "header_crc", "payload_crc", "schema_length"}
            assert header._replace(**{f: 0 for f in differ}) == python_header._replace(**{f: 0 for f in differ})
            # Python's reader reads Python's frame to the same batch too (the oracle is sound).
            assert decoder.decode(pa.py_buffer(python_payload.to_bytes()), python_payload.schema_length).equals(got)
            first += rows
    finally:
        os.close(fd)

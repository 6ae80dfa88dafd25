"""Shared test vectors of the on-disk format, written by the Python side for both readers.

:func:`write_vectors` writes into a directory (a pytest tmp dir, or ``jvm/target/vectors``,
git-ignored, by ``python -m tests.jvm.vectors``):

- ``cluster/``: a real cluster written by kstream's own Producer and Admin: topic ``codecs``
  (partition 0 none, 1 lz4, 2 zstd; small batches so each has many frames, every frame
  indexed), topic ``txn`` (plain, a committed and an aborted transaction with their markers),
  topic ``cleaned`` (a compacted topic after the log cleaner ran: tests/jvm/cleaned_vectors.py);
  with its ``metadata-snapshot.json``, lock files (HW), recovery points and ``.txnindex`` files.
- ``timestamps/``: a second cluster, with a topic ``ts-<case>`` per case of the
  offset-for-timestamp table (tests/log/timestamp_cases.py).
- ``files/``: hand-made files for the cases a healthy cluster never shows: a recovery point
  whose newer slot wins, one whose newer slot is torn, one in the unchecked 24-byte layout; HW
  lock files valid, torn and short; a ``.txnindex`` with a torn last entry.
- ``manifest.json``: what was written (records by offset, frames, index entries, HW, recovery
  points, transaction entries and aborted ranges, the snapshot's topics), ``constants``:
  format.py's constants under the names ``Format.java`` gives them, and ``options``: the option
  names a read takes and the kafka.* keys it refuses (kstream.config.data_source_options), which the
  Java reader's OptionNames must equal, and option cases with what Python's ReaderOptions made
  of them (refused, or the parsed fields), which Java's ReaderOptions must make of them too;
  ``timestamps``: every lookup of the offset-for-timestamp table per isolation level, with the
  offset and timestamp both readers must answer (-1 for none); ``cleaned``: the cleaned topic's
  records as written and what each isolation level must read of it (a dict oracle, not a reader).

The Java tests (jvm/src/test/java, ``-Dkstream.vectors=DIR``) and tests/jvm/test_shared_vectors.py
both read the files and compare with the manifest. The format's one owner is format.py: the
vectors are made with it, never by hand-packing bytes here.
"""

from __future__ import annotations

import json
import os
import struct
import sys
from typing import Any

import numpy as np
from tests.helpers import write_committed_and_aborted
from tests.jvm import cleaned_vectors
from tests.log import timestamp_cases

from kstream import Admin, NewTopic, Producer
from kstream.config import data_source_options as option_names
from kstream.errors import ConfigError
from kstream.log.cluster import metadata_snapshot
from kstream.log.storage import format as fmt
from kstream.source.read_options import ReaderOptions

BASE_TIMESTAMP_MS = 1_700_000_000_000
CODECS = ("none", "lz4", "zstd")
RECORDS_PER_PARTITION = 60


def _record(partition: int, i: int) -> dict[str, Any]:
    key = None if i % 7 == 0 else f"k{partition}-{i}"
    headers = [["h", f"{i}"]] if i % 5 == 0 else []
    return {"key": key, "value": f"value-{partition}-{i}-" + "x" * (i % 11),
            "timestamp": BASE_TIMESTAMP_MS + i * 1000, "headers": headers}


def struct_positions(layout: str, names: list[str]) -> dict[str, int]:
    """Byte position of each field of a little-endian ``struct`` layout (pad bytes ``x`` skipped)."""
    assert layout[0] == "<", layout
    positions, position, index = {}, 0, 0
    count = ""
    for code in layout[1:]:
        if code.isdigit():
            count += code
            continue
        size = struct.calcsize("<" + (count or "1") + code)
        if code != "x":
            positions[names[index]] = position
            index += 1
        position += size
        count = ""
    assert index == len(names), (layout, names)
    return positions


def constants() -> dict[str, int | str]:
    """format.py's constants, named as Format.java names them (the parity test's oracle)."""
    header = struct_positions(fmt.HEADER.format, [
        "LENGTH", "HEADER_CRC", "MAGIC", "VERSION", "ATTRIBUTES", "BASE_OFFSET", "RECORD_COUNT",
        "LEADER_EPOCH", "PRODUCER_ID", "PRODUCER_EPOCH", "RESERVED", "BASE_SEQUENCE",
        "MIN_TIMESTAMP", "MAX_TIMESTAMP", "SCHEMA_LENGTH", "PAYLOAD_CRC"])
    slot = struct_positions(fmt.RECOVERY_POINT.format, [
        "MAGIC", "VERSION", "RESERVED", "SEQUENCE", "SEGMENT_BASE", "POSITION", "NEXT_OFFSET", "CRC"])
    txn = struct_positions(fmt.TXN_INDEX_ENTRY.format, ["KIND", "PRODUCER_ID", "OFFSET", "CRC"])
    long_id = "0123456789abcdef"
    lock_id_chars = len(fmt.lock_file_name("t", 0, long_id)) - len("t-0-") - len(fmt.LOCK_SUFFIX)
    values: dict[str, int | str] = {
        "FORMAT_VERSION": fmt.FORMAT_VERSION, "MAGIC": fmt.MAGIC,
        "HEADER_SIZE": fmt.HEADER_SIZE, "LENGTH_SIZE": fmt.LENGTH_SIZE, "CRC_START": fmt._CRC_START,
        "CODEC_MASK": fmt.CODEC_MASK, "CODEC_NONE": fmt.CODECS["none"], "CODEC_LZ4": fmt.CODECS["lz4"],
        "CODEC_ZSTD": fmt.CODECS["zstd"], "LOG_APPEND_TIME": fmt.LOG_APPEND_TIME,
        "TRANSACTIONAL": fmt.TRANSACTIONAL, "CONTROL": fmt.CONTROL, "NO_PRODUCER_ID": fmt.NO_PRODUCER_ID,
        "SPARSE_FRAME_VERSION": fmt.SPARSE_FRAME_VERSION, "SPARSE": fmt.SPARSE,
        "KNOWN_ATTRIBUTES_V1": fmt.KNOWN_ATTRIBUTES[fmt.FORMAT_VERSION],
        "KNOWN_ATTRIBUTES_V2": fmt.KNOWN_ATTRIBUTES[fmt.SPARSE_FRAME_VERSION],
        "OFFSET_DELTA_COLUMN": fmt.OFFSET_DELTA_COLUMN,
        "OFFSET_INDEX_ENTRY_SIZE": fmt.OFFSET_INDEX_ENTRY.size,
        "TIME_INDEX_ENTRY_SIZE": fmt.TIME_INDEX_ENTRY.size,
        "LOG_SUFFIX": fmt.LOG_SUFFIX, "OFFSET_INDEX_SUFFIX": fmt.OFFSET_INDEX_SUFFIX,
        "TIME_INDEX_SUFFIX": fmt.TIME_INDEX_SUFFIX, "TXN_INDEX_SUFFIX": fmt.TXN_INDEX_SUFFIX,
        "RECOVERY_POINT_FILE": fmt.RECOVERY_POINT_FILE, "LOCKS_DIR": fmt.LOCKS_DIR,
        "CLEANER_CHECKPOINT_FILE": fmt.CLEANER_CHECKPOINT_FILE,
        "LOCK_SUFFIX": fmt.LOCK_SUFFIX, "METADATA_SNAPSHOT": fmt.METADATA_SNAPSHOT,
        "SNAPSHOT_FORMAT_VERSION": metadata_snapshot.SNAPSHOT_FORMAT_VERSION,
        "LOCK_TOPIC_ID_CHARS": lock_id_chars,
        "RECOVERY_POINT_MAGIC": fmt.RECOVERY_POINT_MAGIC, "RECOVERY_POINT_VERSION": fmt.RECOVERY_POINT_VERSION,
        "RECOVERY_POINT_SLOT_SIZE": fmt.RECOVERY_POINT.size,
        "RECOVERY_POINT_SLOT_BYTES": fmt.RECOVERY_POINT_SLOT_BYTES,
        "RECOVERY_POINT_FILE_BYTES": fmt.RECOVERY_POINT_FILE_BYTES,
        "LOCK_HIGH_WATERMARK_POSITION": fmt.LOCK_HIGH_WATERMARK_POSITION,
        "LOCK_HIGH_WATERMARK_SIZE": fmt.LOCK_HIGH_WATERMARK.size,
        "LOCK_DELETED_MARK": fmt.LOCK_DELETED_MARK.decode(), "LOCK_DELETED_POSITION": fmt.LOCK_DELETED_POSITION,
        "LOCK_GENERATION_POSITION": fmt.LOCK_GENERATION_POSITION, "LOCK_GENERATION_SIZE": fmt.LOCK_GENERATION.size,
        "TXN_DATA": fmt.TXN_DATA, "TXN_COMMIT": fmt.TXN_COMMIT, "TXN_ABORT": fmt.TXN_ABORT,
        "TXN_INDEX_ENTRY_SIZE": fmt.TXN_INDEX_ENTRY_SIZE,
        "CONTROL_COMMIT": fmt.COMMIT_MARKER.decode(), "CONTROL_ABORT": fmt.ABORT_MARKER.decode(),
    }
    for name in ("LENGTH", "HEADER_CRC", "MAGIC", "VERSION", "ATTRIBUTES", "BASE_OFFSET", "RECORD_COUNT",
                 "LEADER_EPOCH", "PRODUCER_ID", "PRODUCER_EPOCH", "BASE_SEQUENCE", "MIN_TIMESTAMP",
                 "MAX_TIMESTAMP", "SCHEMA_LENGTH", "PAYLOAD_CRC"):
        values["POS_" + name] = header[name]
    for name in ("MAGIC", "VERSION", "SEQUENCE", "SEGMENT_BASE", "POSITION", "NEXT_OFFSET", "CRC"):
        values["RP_POS_" + name] = slot[name]
    for name in ("KIND", "PRODUCER_ID", "OFFSET", "CRC"):
        values["TXN_POS_" + name] = txn[name]
    return values


def reader_options() -> dict[str, Any]:
    """The option names a read takes and the kafka.* keys it refuses, as the Python reader has them
    (the Java reader's OptionNames is checked against this)."""
    return {"reader": list(option_names.READER_OPTIONS), "refused": dict(option_names._REFUSED_BY_READER),
            "parse": option_parse_cases()}


# (options, streaming) a read may get: both readers must accept the same ones with the same
# meaning and refuse the same ones (option_parse_cases() records what Python's ReaderOptions does).
_PARSE_CASES: list[tuple[dict[str, str], bool | None]] = [
    ({"subscribe": "t"}, None),
    ({"subscribe": "t, u", "maxOffsetsPerTrigger": "10", "minOffsetsPerTrigger": "2", "maxTriggerDelay": "5s",
      "includeHeaders": "true", "failOnDataLoss": "false", "isolation.level": "read_uncommitted",
      "columns": "value,offset", "check.crcs": "false"}, True),
    ({"assign": '{"t": [0, 1], "u": [2]}', "startingOffsets": "earliest"}, False),
    ({"subscribePattern": "t.*", "startingOffsets": "latest"}, True),
    ({"subscribe": "t", "kafka.isolation.level": "read_uncommitted"}, None),
    ({}, None),
    ({"subscribe": "t", "assign": '{"t": [0]}'}, None),
    ({"subscribe": " , "}, None),
    ({"subscribePattern": "("}, None),
    ({"assign": "t-0"}, None),
    ({"subscribe": "t", "maxOffsetsPerTrigger": "0"}, None),
    ({"subscribe": "t", "maxTriggerDelay": "soon"}, None),
    ({"subscribe": "t", "includeHeaders": "maybe"}, None),
    ({"subscribe": "t", "isolation.level": "dirty"}, None),
    ({"subscribe": "t", "startingOffsets": "nope"}, None),
    ({"subscribe": "t", "startingOffsets": "latest"}, False),
    ({"subscribe": "t", "endingOffsets": "earliest"}, False),
    ({"subscribe": "t", "endingOffsets": "latest"}, True),
    ({"subscribe": "t", "colums": "value"}, None),
    # group.id: a streaming query commits to the group; a batch read refuses it (the group
    # positions that would justify it are the Python reader's alone, so not cases here)
    ({"subscribe": "t", "group.id": "g"}, None),
    ({"subscribe": "t", "group.id": "g"}, True),
    ({"subscribe": "t", "group.id": "g"}, False),
    ({"assign": '{"t": [0]}', "group.id": "g", "startingOffsets": "earliest", "endingOffsets": '{"t": {"0": 5}}'},
     False),
    # latestPerKey (issue 25): batch reads only, never a cut partition, includeTombstones only with it
    ({"subscribe": "t", "latestPerKey": "true"}, False),
    ({"subscribe": "t", "latestPerKey": "TRUE", "includeTombstones": "true"}, None),
    ({"subscribe": "t", "latestPerKey": "false"}, True),
    ({"subscribe": "t", "latestPerKey": "true"}, True),
    ({"subscribe": "t", "latestPerKey": "yes"}, None),
    ({"subscribe": "t", "includeTombstones": "true"}, False),
    ({"subscribe": "t", "latestPerKey": "true", "minPartitions": "4"}, False),
    ({"subscribe": "t", "latestPerKey": "true", "maxRecordsPerPartition": "100"}, None),
]
# Options refused with the same words by both readers (the case's ``message``), not only both refused.
_SAME_MESSAGE = ("group.id", "latestPerKey", "includeTombstones")


def option_parse_cases() -> list[dict[str, Any]]:
    """Each case with what Python's ReaderOptions.from_options made of it: the fields both
    readers have, or ``error``: true for a ConfigError (with its ``message`` where both readers
    must say the same words)."""
    cases = []
    for options, streaming in _PARSE_CASES:
        given = {"cluster": "/vectors/no-such-cluster", **options}
        try:
            parsed = ReaderOptions.from_options(given, streaming)
        except ConfigError as err:
            case = {"options": given, "streaming": streaming, "error": True}
            if any(name in options for name in _SAME_MESSAGE):
                case["message"] = str(err)
            cases.append(case)
            continue
        cases.append({"options": given, "streaming": streaming, "error": False, "parsed": {
            "subscribe": list(parsed.subscribe), "subscribePattern": parsed.subscribe_pattern,
            "assign": None if parsed.assign is None else {t: list(p) for t, p in parsed.assign.items()},
            "startingOffsets": parsed.starting_offsets if isinstance(parsed.starting_offsets, str) else None,
            "endingOffsets": parsed.ending_offsets if isinstance(parsed.ending_offsets, str) else None,
            "maxOffsetsPerTrigger": parsed.max_offsets_per_trigger,
            "minOffsetsPerTrigger": parsed.min_offsets_per_trigger,
            "maxTriggerDelayMs": parsed.max_trigger_delay_ms, "includeHeaders": parsed.include_headers,
            "failOnDataLoss": parsed.fail_on_data_loss,
            "readCommitted": parsed.isolation_level == "read_committed",
            "columns": None if parsed.columns is None else list(parsed.columns),
            "verifyChecksums": parsed.check_crcs, "latestPerKey": parsed.latest_per_key,
            "includeTombstones": parsed.include_tombstones}})
    return cases


def _write_cluster(cluster: str) -> dict[str, Any]:
    indexed = {"index.interval.bytes": "1"}
    with Admin({"cluster": cluster}) as admin:
        for topic in (NewTopic("codecs", len(CODECS), config=indexed), NewTopic("txn", 1, config=indexed)):
            admin.create_topics([topic])[topic.topic].result()
    records: dict[str, list[dict[str, Any]]] = {}
    for partition, codec in enumerate(CODECS):
        written = [_record(partition, i) for i in range(RECORDS_PER_PARTITION)]
        with Producer({"cluster": cluster, "compression.type": codec, "batch.size": 400,
                       "linger.ms": 0}) as producer:
            for record in written:
                producer.produce("codecs", record["value"].encode(),
                                 None if record["key"] is None else record["key"].encode(),
                                 partition=partition, timestamp=record["timestamp"],
                                 headers=[(name, value.encode()) for name, value in record["headers"]] or None)
        records[f"codecs-{partition}"] = written
    records["txn-0"] = _write_transactions(cluster)
    return records


def _write_transactions(cluster: str) -> list[dict[str, Any]]:
    """plain-0, plain-1, committed-0..2 + marker, plain-2, aborted-0..1 + marker, plain-3: every
    offset's value (a marker's is COMMIT or ABORT), ``control`` and ``aborted`` flags."""
    write_committed_and_aborted(cluster, "vectors")
    values = ["plain-0", "plain-1", "committed-0", "committed-1", "committed-2", fmt.COMMIT_MARKER.decode(),
              "plain-2", "aborted-0", "aborted-1", fmt.ABORT_MARKER.decode(), "plain-3"]
    markers = {fmt.COMMIT_MARKER.decode(), fmt.ABORT_MARKER.decode()}
    return [{"value": value, "control": value in markers, "aborted": value.startswith("aborted")}
            for value in values]


def _frames(replica_dir: str) -> list[dict[str, Any]]:
    """Every frame of every segment, walked with format.py's header layout."""
    frames = []
    for name in sorted(os.listdir(replica_dir)):
        if fmt.parse_segment_file_name(name) is None:
            continue
        with open(os.path.join(replica_dir, name), "rb") as segment:
            data = segment.read()
        position = 0
        while position < len(data):
            header = fmt.unpack_header(data[position:position + fmt.HEADER_SIZE])
            assert fmt.header_problem(data[position:position + fmt.HEADER_SIZE], header) is None
            frames.append({"segment_base": fmt.parse_segment_file_name(name), "position": position,
                           "version": header.version, "length": header.length,
                           "base_offset": header.base_offset,
                           "record_count": header.record_count, "attributes": header.attributes,
                           "producer_id": header.producer_id, "leader_epoch": header.leader_epoch,
                           "min_timestamp": header.min_timestamp, "max_timestamp": header.max_timestamp})
            position += header.frame_size
    return frames


def _offset_index(replica_dir: str, base: int) -> list[list[int]]:
    path = os.path.join(replica_dir, fmt.segment_file_name(base, fmt.OFFSET_INDEX_SUFFIX))
    entries = np.fromfile(path, dtype=fmt.OFFSET_INDEX_DTYPE) if os.path.exists(path) else []
    return [[base + int(entry["relative_offset"]), int(entry["position"])] for entry in entries]


def _time_index(replica_dir: str, base: int) -> list[list[int]]:
    path = os.path.join(replica_dir, fmt.segment_file_name(base, fmt.TIME_INDEX_SUFFIX))
    entries = np.fromfile(path, dtype=fmt.TIME_INDEX_DTYPE) if os.path.exists(path) else []
    return [[int(entry["timestamp"]), base + int(entry["relative_offset"])] for entry in entries]


def _replica(cluster: str, topic: str, partition: int) -> dict[str, Any]:
    replica_dir = os.path.join(cluster, "logs", fmt.replica_dir_name(topic, partition))
    with open(os.path.join(replica_dir, fmt.RECOVERY_POINT_FILE), "rb") as handle:
        unpacked = fmt.unpack_recovery_point_file(handle.read())
    assert unpacked is not None
    point = unpacked[1]
    frames = _frames(replica_dir)
    txn_path = os.path.join(replica_dir, fmt.segment_file_name(0, fmt.TXN_INDEX_SUFFIX))
    txn_entries: list[list[int]] = []
    if os.path.exists(txn_path):
        with open(txn_path, "rb") as handle:
            entries, whole = fmt.unpack_txn_entries(handle.read())
        assert whole
        txn_entries = [[entry.kind, entry.producer_id, entry.offset] for entry in entries]
    return {"dir": os.path.relpath(replica_dir, cluster), "frames": frames,
            "offset_index": {str(base): _offset_index(replica_dir, base)
                             for base in sorted({frame["segment_base"] for frame in frames})},
            "time_index": {str(base): _time_index(replica_dir, base)
                           for base in sorted({frame["segment_base"] for frame in frames})},
            "recovery_point": [point.segment_base, point.position, point.next_offset],
            "log_end_offset": frames[-1]["base_offset"] + frames[-1]["record_count"],
            "txn_index": txn_entries}


def _write_files(files: str) -> dict[str, Any]:
    """Hand-made recovery points, lock files and a .txnindex (each made by format.py's packers)."""
    expected: dict[str, Any] = {}
    older, newer = fmt.RecoveryPoint(0, 100, 5), fmt.RecoveryPoint(0, 200, 9)
    two_slots = bytearray(fmt.pack_recovery_point_file(older))
    slot = fmt.RECOVERY_POINT_SLOT_BYTES
    two_slots[slot:slot + fmt.RECOVERY_POINT.size] = fmt.pack_recovery_slot(1, newer)
    torn = bytearray(two_slots)
    torn[slot + 25] ^= 0xFF  # inside the newer slot's position field: its crc no longer matches
    for name, raw, point in (("rp-newer-wins", bytes(two_slots), newer), ("rp-torn-newer", bytes(torn), older),
                             ("rp-old-layout", struct.pack("<qqq", 0, 200, 9), None)):
        os.makedirs(os.path.join(files, name))
        with open(os.path.join(files, name, fmt.RECOVERY_POINT_FILE), "wb") as out:
            out.write(raw)
        expected[name] = list(point) if point else None
    state = b"\0" * fmt.LOCK_HIGH_WATERMARK_POSITION
    torn_hw = state + fmt.LOCK_HIGH_WATERMARK.pack(42, ~41)
    for name, raw, hw in (("hw-valid.lock", state + fmt.pack_high_watermark(42), 42),
                          ("hw-torn.lock", torn_hw, None), ("hw-short.lock", state + b"\1\2", None)):
        with open(os.path.join(files, name), "wb") as out:
            out.write(raw)
        expected[name] = hw
    entries = [(fmt.TXN_DATA, 7, 3), (fmt.TXN_DATA, 8, 4), (fmt.TXN_COMMIT, 7, 6)]
    raw_index = b"".join(fmt.pack_txn_entry(*entry) for entry in entries)
    last = bytearray(fmt.pack_txn_entry(fmt.TXN_ABORT, 8, 9))
    last[-1] ^= 0xFF
    os.makedirs(os.path.join(files, "txn-torn"))
    with open(os.path.join(files, "txn-torn", fmt.segment_file_name(0, fmt.TXN_INDEX_SUFFIX)), "wb") as out:
        out.write(raw_index + bytes(last))
    expected["txn-torn"] = {"entries": [list(entry) for entry in entries], "whole": False}
    return expected


def write_vectors(directory: str) -> dict[str, Any]:
    """Write every vector into ``directory`` (made if missing, must not hold a cluster yet)."""
    cluster = os.path.join(directory, "cluster")
    records = _write_cluster(cluster)
    cleaned = cleaned_vectors.write_cleaned(cluster)
    for case in timestamp_cases.CASES:
        timestamp_cases.build(os.path.join(directory, "timestamps"), case)
    with open(os.path.join(cluster, fmt.METADATA_SNAPSHOT), encoding="utf-8") as handle:
        snapshot = json.load(handle)
    replicas = {f"{topic}-{partition}": _replica(cluster, topic, partition)
                for topic, count in (("codecs", len(CODECS)), ("txn", 1), (cleaned_vectors.TOPIC, 1))
                for partition in range(count)}
    topics = {name: {"topic_id": topic["topic_id"], "partitions": len(topic["partitions"])}
              for name, topic in snapshot["topics"].items()}
    manifest = {"constants": constants(), "options": reader_options(), "records": records, "replicas": replicas,
                "codecs": list(CODECS), "topics": topics, "files": _write_files(os.path.join(directory, "files")),
                "timestamps": timestamp_cases.vector_cases(), "cleaned": cleaned}
    with open(os.path.join(directory, "manifest.json"), "w", encoding="utf-8") as out:
        json.dump(manifest, out, indent=1, sort_keys=True)
    return manifest


if __name__ == "__main__":
    write_vectors(sys.argv[1] if len(sys.argv) > 1 else os.path.join("jvm", "target", "vectors"))

"""`kstream get-offsets` (kafka-get-offsets), `kstream delete-records` (kafka-delete-records) and
`kstream dump-log` on index files (kafka-dump-log)."""

from __future__ import annotations

import json
import os
import time

import pytest
from click.testing import CliRunner

from kstream import Producer
from kstream.log.storage import format as fmt
from kstream.log.storage.retention import list_segment_bases
from kstream.tools.cli.main import cli


def run(cluster, *args):
    return CliRunner().invoke(cli, ["--cluster", cluster, *args])


@pytest.fixture
def filled(cluster_path, make_topic):
    """t: 2 partitions; partition 0 holds 5 records (timestamps 100, 300, 200, 300, 50), one per
    frame, two frames per segment (the second indexed)."""
    make_topic("t", partitions=2, config={"segment.bytes": "2000", "index.interval.bytes": "1",
                                                    "segment.ms": str(1 << 60)})
    make_topic("other")
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for ts in (100, 300, 200, 300, 50):
            producer.produce("t", b"x" * 300, partition=0, timestamp=ts)
            producer.flush()
    return cluster_path


def offsets(path, *args):
    result = run(path, "get-offsets", *args)
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def test_get_offsets_like_kafka_get_offsets(filled):
    assert offsets(filled, "--topic", "t") == ["t:0:5", "t:1:0"]
    assert offsets(filled, "--topic", "t", "--time", "-2") == ["t:0:0", "t:1:0"]
    assert offsets(filled, "--topic", "t", "--partitions", "0", "--time", "earliest") == ["t:0:0"]
    assert offsets(filled, "--topic", "t", "--time", "-3") == ["t:0:1"]  # first record at max ts
    assert offsets(filled, "--topic", "t", "--time", "max-timestamp", "--partitions", "0-1") == ["t:0:1"]
    assert offsets(filled, "--topic", "t", "--time", "150") == ["t:0:1"]
    assert offsets(filled, "--topic", "t", "--time", "301") == []  # no such record: no line
    assert offsets(filled, "--topic", "t|oth.*") == ["other:0:0", "t:0:5", "t:1:0"]
    assert offsets(filled) == ["other:0:0", "t:0:5", "t:1:0"]


def test_get_offsets_misuse(filled, tmp_path):
    assert run(filled, "get-offsets", "--time", "yesterday").exit_code == 2
    result = run(filled, "get-offsets", "--topic", "nope")
    assert result.exit_code == 1 and "could not match any topic-partitions" in result.output
    missing = str(tmp_path / "typo")
    assert run(missing, "get-offsets").exit_code != 0
    assert not os.path.exists(missing)  # read-only: creates nothing


def test_delete_records_whole_segments(filled, tmp_path):
    directory = os.path.join(filled, "logs", "t-0")
    bases = list_segment_bases(directory)
    assert len(bases) >= 3
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"partitions": [{"topic": "t", "partition": 0, "offset": bases[2]},
                                               {"topic": "t", "partition": 1, "offset": 0}], "version": 1}))
    result = run(filled, "delete-records", "--offset-json-file", str(plan))
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "Executing records delete operation", "Records delete operation completed:",
        f"partition: t-0\tlow_watermark: {bases[2]}", "partition: t-1\tlow_watermark: 0"]
    assert list_segment_bases(directory) == bases[2:]
    assert offsets(filled, "--topic", "t", "--partitions", "0", "--time", "-2") == [f"t:0:{bases[2]}"]


def test_delete_records_refuses_past_the_high_watermark_and_bad_plans(filled, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"partitions": [{"topic": "t", "partition": 0, "offset": 99}], "version": 1}))
    result = run(filled, "delete-records", "--offset-json-file", str(plan))
    assert result.exit_code == 1 and "partition: t-0\terror:" in result.output and "high watermark 5" in result.output
    assert offsets(filled, "--topic", "t", "--partitions", "0", "--time", "-2") == ["t:0:0"]
    plan.write_text('{"partitions": [{"topic": "t", "partition": 0, "offset": 1}, '
                    '{"topic": "t", "partition": 0, "offset": 2}], "version": 1}')
    result = run(filled, "delete-records", "--offset-json-file", str(plan))
    assert result.exit_code != 0 and "duplicate" in str(result.exception)
    plan.write_text('{"partitions": [{"topic": "t"}]}')
    assert "not a delete-records plan" in str(run(filled, "delete-records", "--offset-json-file",
                                                  str(plan)).exception)


def test_dump_log_prints_index_entries(filled):
    directory = os.path.join(filled, "logs", "t-0")
    base = list_segment_bases(directory)[0]
    index = os.path.join(directory, fmt.segment_file_name(base, fmt.OFFSET_INDEX_SUFFIX))
    time_index = os.path.join(directory, fmt.segment_file_name(base, fmt.TIME_INDEX_SUFFIX))
    result = run(filled, "dump-log", index, time_index)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"Dumping {index}" and lines[1] == "offset: 1 position: 780"
    assert f"Dumping {time_index}" in lines and "timestamp: 100 offset: 1" in lines
    data = bytearray(open(index, "rb").read())
    fmt.OFFSET_INDEX_ENTRY.pack_into(data, 0, 1, 7)  # entry 0 now points into the middle of a frame
    open(index, "wb").write(bytes(data))
    result = run(filled, "dump-log", index)
    assert result.exit_code != 0 and "offset: 1 position: 7 INVALID: no frame starts at position 7" in result.output


def test_delete_records_on_every_replica(tmp_path):
    from kstream import Admin, NewTopic

    path = str(tmp_path / "c")
    dirs = [str(tmp_path / f"d{i}") for i in range(2)]
    with Admin({"cluster": path, "log.dirs": ",".join(dirs)}) as admin:
        admin.create_topics([NewTopic("t", 1, 2, {"segment.bytes": "2000", "segment.ms": str(1 << 60)})])["t"].result()
    with Producer({"cluster": path, "acks": "all", "linger.ms": 0}) as producer:
        for _ in range(6):
            producer.produce("t", b"x" * 300, partition=0)
            producer.flush()
    replica_dirs = [os.path.join(d, "t-0") for d in dirs]
    bases = list_segment_bases(replica_dirs[0])
    assert bases == list_segment_bases(replica_dirs[1]) and len(bases) == 3
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"partitions": [{"topic": "t", "partition": 0, "offset": -1}], "version": 1}))
    result = run(path, "delete-records", "--offset-json-file", str(plan))
    assert result.exit_code == 0, result.output
    assert f"low_watermark: {bases[-1]}" in result.output  # the active segment stays
    assert [list_segment_bases(d) for d in replica_dirs] == [bases[-1:], bases[-1:]]
    assert "All in-sync replicas match" in run(path, "verify-replicas").output
    with Producer({"cluster": path, "acks": "all"}) as producer:
        producer.produce("t", b"after", partition=0)
    assert offsets(path, "--time", "-1") == ["t:0:7"]


def test_dump_log_prints_and_checks_transaction_index_entries(cluster_path, make_topic):
    make_topic("tx")
    producer = Producer({"cluster": cluster_path, "transactional.id": "dump", "linger.ms": 0})
    producer.init_transactions()
    producer.begin_transaction()
    producer.produce("tx", b"a", partition=0)
    producer.flush()
    producer.abort_transaction()
    producer.close()
    directory = os.path.join(cluster_path, "logs", "tx-0")
    path = os.path.join(directory, fmt.segment_file_name(0, fmt.TXN_INDEX_SUFFIX))
    result = run(cluster_path, "dump-log", path)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1].startswith("offset: 0 producer_id: ") and lines[1].endswith(" kind: DATA")
    assert lines[2].startswith("offset: 1 ") and lines[2].endswith(" kind: ABORT")
    with open(path, "ab") as f:
        f.write(fmt.pack_txn_entry(fmt.TXN_COMMIT, 5, 7) + b"torn")
    result = run(cluster_path, "dump-log", path)
    assert result.exit_code != 0
    assert "offset: 7 producer_id: 5 kind: COMMIT INVALID: the segment has no such transactional frame" in result.output
    assert "position: 72 INVALID: a torn or bad entry" in result.output


def test_get_offsets_max_timestamp_skips_transaction_markers(cluster_path, make_topic):
    """-3 answers a record a consumer is handed, as list_offsets(MAX_TIMESTAMP) does: in a
    LogAppendTime topic the COMMIT marker is appended after the data, so it carries the
    largest time, but it is not a record."""
    make_topic("lat", config={"message.timestamp.type": "LogAppendTime"})
    with Producer({"cluster": cluster_path, "transactional.id": "tx", "linger.ms": 0}) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.produce("lat", b"a", partition=0)
        producer.flush()
        time.sleep(0.01)  # the marker's append time is later than the record's
        producer.commit_transaction()
    assert offsets(cluster_path, "--topic", "lat") == ["lat:0:2"]  # the record and its marker
    assert offsets(cluster_path, "--topic", "lat", "--time", "-3") == ["lat:0:0"]

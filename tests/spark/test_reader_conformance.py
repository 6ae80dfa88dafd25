"""One suite, both readers: every read the JVM reader supports, run through the JVM and the
Python reader (``option("reader", ...)``), must give the same rows, offsets, columns and errors,
and both must match what was written (an oracle built here, not by either reader).

The data covers what the readers must agree on: bytes topics with keys, headers and every codec;
a typed topic whose schema evolved; transactions committed, aborted and still open; records
deleted from the log start; and a torn tail (bytes of a frame a killed writer never finished).
Without the JVM jar the JVM half is skipped (one line says why) and the Python reader is still
checked against the oracle.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest
from tests.spark.jvm_support import load

from helpers import write_committed_and_aborted
from kstream import Admin, NewTopic, Producer, TopicPartition

pytestmark = pytest.mark.spark

READERS = ("python", "jvm")
BASE_TS = 1_760_000_000_000  # ms; record i of a partition has timestamp BASE_TS + i * 1000


def _jar_missing() -> str | None:
    from kstream.jars import jar_path

    return None if jar_path() else "no kstream JVM jar (make install builds it with javac): JVM reads skipped"


@pytest.fixture(params=READERS)
def reader(request, spark):
    if request.param == "jvm":
        why = _jar_missing()
        if why:
            pytest.skip(why)
    return request.param


# -- the data -------------------------------------------------------------------------------------

TYPED_V0 = pa.schema([("id", pa.int64()), ("name", pa.string())])
TYPED_V1 = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])


def _raw_records() -> dict[int, list[tuple]]:
    """partition -> [(key, value, timestamp, headers)], the oracle of topic "raw"."""
    records: dict[int, list[tuple]] = {0: [], 1: [], 2: []}
    for partition in records:
        for i in range(300):
            key = None if i % 7 == 0 else f"k{partition}-{i}".encode()
            headers = [("h", f"{i}".encode()), ("n", None)] if i % 5 == 0 else None
            records[partition].append((key, f"value-{partition}-{i}".encode() * (1 + i % 3), BASE_TS + i * 1000,
                                       headers))
    return records


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Every topic of the suite, written once."""
    path = str(tmp_path_factory.mktemp("conformance") / "cluster")
    with Admin({"cluster": path}) as admin:
        for topic in (NewTopic("raw", 3), NewTopic("typed", 2, schema=TYPED_V0), NewTopic("txn", 1),
                      NewTopic("deleted", 1, config={"segment.bytes": "2000"}), NewTopic("torn", 1)):
            admin.create_topics([topic])[topic.topic].result()
    for codec, partitions in (("none", [0]), ("lz4", [1]), ("zstd", [2])):
        with Producer({"cluster": path, "compression.type": codec, "batch.size": 4000}) as producer:
            for partition in partitions:
                for key, value, ts, headers in _raw_records()[partition]:
                    producer.produce("raw", value, key, partition=partition, timestamp=ts, headers=headers)
    _write_typed(path)
    _write_transactions(path)
    _write_deleted(path)
    _write_torn(path)
    return path


def _write_typed(path: str) -> None:
    with Producer({"cluster": path}) as producer:
        producer.produce_batch("typed", pa.table({"id": [1, 2, 3], "name": ["a", "b", None]}, schema=TYPED_V0),
                               partition=0)
    with Admin({"cluster": path}) as admin:
        admin.evolve_schema("typed", TYPED_V1)
    with Producer({"cluster": path}) as producer:
        producer.produce_batch("typed", pa.table({"id": [4, 5], "name": ["d", "e"], "score": [0.5, None]},
                                                 schema=TYPED_V1), partition=0)
        producer.produce_batch("typed", pa.table({"id": [6], "name": ["f"], "score": [1.5]}, schema=TYPED_V1),
                               partition=1)


def _write_transactions(path: str) -> None:
    """plain 0..1, committed c0..c2, plain 5, aborted a0..a1 + its marker, plain, then an open
    transaction (its producer process exits without ending it) followed by one more plain record."""
    write_committed_and_aborted(path, "tx-ok")
    script = textwrap.dedent(f"""
        import os
        from kstream import Producer
        p = Producer({{"cluster": {path!r}, "transactional.id": "tx-open", "transaction.timeout.ms": 900000}})
        p.init_transactions()
        p.begin_transaction()
        p.produce("txn", b"open-0", partition=0)
        p.flush()
        os._exit(0)  # the transaction stays open: the LSO holds at open-0
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    with Producer({"cluster": path}) as plain:
        plain.produce("txn", b"plain-after-open", partition=0)


def _write_deleted(path: str) -> None:
    with Producer({"cluster": path, "batch.size": 1, "linger.ms": 0}) as producer:
        for i in range(40):
            producer.produce("deleted", f"record-{i:03d}".encode() * 4, partition=0)
            producer.flush()
    with Admin({"cluster": path}) as admin:
        admin.delete_records([TopicPartition("deleted", 0, 20)])[TopicPartition("deleted", 0, 20)].result()


def _write_torn(path: str) -> None:
    with Producer({"cluster": path}) as producer:
        for i in range(10):
            producer.produce("torn", f"torn-{i}".encode(), partition=0)
    segment_dir = os.path.join(path, "logs", "torn-0")
    active = sorted(n for n in os.listdir(segment_dir) if n.endswith(".log"))[-1]
    with open(os.path.join(segment_dir, active), "ab") as f:
        f.write(b"\x40\x00\x00\x00" + b"\x17" * 30)  # a frame's first bytes: its writer was killed


# -- reading ---------------------------------------------------------------------------------------

def _read(spark, cluster, reader, **options):
    df = load(spark, cluster, reader, **options)
    order = [c for c in ("topic", "partition", "offset") if c in df.columns] or df.columns
    return df.columns, sorted(df.collect(), key=lambda r: tuple(r[c] for c in order))


def _both(spark, cluster, **options):
    """The rows each available reader returns; they must agree."""
    results = {}
    for name in READERS:
        if name == "jvm" and _jar_missing():
            continue
        results[name] = _read(spark, cluster, name, **options)
    first = results["python"]
    for name, result in results.items():
        assert result[0] == first[0], f"{name} columns differ"
        assert [r.asDict(recursive=True) for r in result[1]] == [r.asDict(recursive=True) for r in first[1]], (
            f"{name} rows differ from the python reader's")
    return first


def _values(rows):
    return [r["value"].decode() if isinstance(r["value"], bytes | bytearray) else r["value"] for r in rows]


def test_bytes_topic_every_column(spark, cluster):
    columns, rows = _both(spark, cluster, subscribe="raw", includeHeaders="true")
    assert columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
    expected = _raw_records()
    assert len(rows) == sum(len(v) for v in expected.values())
    for row in rows:
        key, value, ts, headers = expected[row["partition"]][row["offset"]]
        assert (row["key"], bytes(row["value"]), row["topic"], row["timestampType"]) == (key, value, "raw", 0)
        assert row["timestamp"] == dt.datetime.fromtimestamp(ts / 1000, dt.UTC).replace(tzinfo=None) or \
            row["timestamp"].timestamp() * 1000 == ts
        assert [(h["key"], h["value"]) for h in (row["headers"] or [])] == (headers or [])


@pytest.mark.parametrize("options, partitions, first, last", [
    ({"assign": json.dumps({"raw": [2, 0]})}, {0, 2}, 0, 299),
    ({"subscribePattern": "ra.*", "startingOffsets": json.dumps({"raw": {"0": 10, "1": -2, "2": 290}}),
      "endingOffsets": json.dumps({"raw": {"0": 20, "1": 5, "2": -1}})}, {0, 1, 2}, 0, 299),
    ({"subscribe": "raw", "startingTimestamp": str(BASE_TS + 250_000)}, {0, 1, 2}, 250, 299),
    ({"subscribe": "raw", "startingOffsetsByTimestamp": json.dumps({"raw": {"0": BASE_TS + 100_000,
                                                                             "1": BASE_TS, "2": BASE_TS}}),
      "endingOffsetsByTimestamp": json.dumps({"raw": {"0": BASE_TS + 110_000, "1": BASE_TS + 1000,
                                                      "2": BASE_TS + 3000}})}, {0, 1, 2}, 0, 109),
])
def test_offset_and_topic_selection(spark, cluster, options, partitions, first, last):
    _, rows = _both(spark, cluster, **options)
    assert {r["partition"] for r in rows} == partitions
    assert min(r["offset"] for r in rows) == first and max(r["offset"] for r in rows) == last
    for partition in partitions:
        offsets = [r["offset"] for r in rows if r["partition"] == partition]
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets)))  # contiguous, no duplicate


def test_columns_option_prunes(spark, cluster):
    columns, rows = _both(spark, cluster, subscribe="raw", columns="offset,value")
    assert columns == ["value", "offset"] or columns == ["offset", "value"]
    assert len(rows) == 900


def test_typed_topic_with_an_evolved_schema(spark, cluster):
    columns, rows = _both(spark, cluster, subscribe="typed")
    assert [c for c in columns if c in ("id", "name", "score")] == ["id", "name", "score"]
    assert [(r["id"], r["name"], r["score"]) for r in rows] == [
        (1, "a", None), (2, "b", None), (3, None, None), (4, "d", 0.5), (5, "e", None), (6, "f", 1.5)]
    columns, rows = _both(spark, cluster, subscribe="typed", columns="score,id")
    assert set(columns) == {"score", "id"}
    assert sorted(r["id"] for r in rows) == [1, 2, 3, 4, 5, 6]


def test_read_committed_hides_aborted_and_open_transactions(spark, cluster):
    _, rows = _both(spark, cluster, subscribe="txn")  # read_committed is the default
    assert _values(rows) == ["plain-0", "plain-1", "committed-0", "committed-1", "committed-2", "plain-2",
                             "plain-3"]  # the open transaction holds the LSO: plain-after-open waits
    _, rows = _both(spark, cluster, subscribe="txn", kafka__isolation__level="read_uncommitted")
    assert _values(rows) == ["plain-0", "plain-1", "committed-0", "committed-1", "committed-2", "plain-2",
                             "aborted-0", "aborted-1", "plain-3", "open-0", "plain-after-open"]
    offsets = [r["offset"] for r in rows]
    assert offsets == sorted(set(offsets))  # markers hold offsets but are never rows


def test_deleted_records_and_fail_on_data_loss(spark, cluster):
    _, rows = _both(spark, cluster, subscribe="deleted")
    start = rows[0]["offset"]
    assert 0 < start <= 20 and [r["offset"] for r in rows] == list(range(start, 40))
    _, rows = _both(spark, cluster, subscribe="deleted", failOnDataLoss="false",
                    startingOffsets=json.dumps({"deleted": {"0": 0}}))
    assert rows[0]["offset"] == start
    for name in READERS:
        if name == "jvm" and _jar_missing():
            continue
        with pytest.raises(Exception, match="(?i)offsets? 0\\b.*deleted"):
            _read(spark, cluster, name, subscribe="deleted", startingOffsets=json.dumps({"deleted": {"0": 0}}))


def test_torn_tail_is_never_read(spark, cluster):
    _, rows = _both(spark, cluster, subscribe="torn")
    assert _values(rows) == [f"torn-{i}" for i in range(10)]


@pytest.mark.parametrize("options, message", [
    ({"subscribe": "no-such-topic"}, "no-such-topic"),
    ({"subscribe": "raw", "startingOffsets": "{not json"}, "startingOffsets"),
    ({"subscribe": "raw", "assign": json.dumps({"raw": [0]})}, "subscribe|assign"),
    ({"assign": json.dumps({"raw": [7]})}, "raw-7|partitions 0..2"),
])
def test_errors_name_the_problem(spark, cluster, reader, options, message):
    with pytest.raises(Exception, match=message):
        _read(spark, cluster, reader, **options)

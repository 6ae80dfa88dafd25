"""The cleaned partition of the shared vectors: a compacted topic after the log cleaner ran.

:func:`write_cleaned` writes topic ``cleaned`` into the vectors' cluster with kstream's own
Producer (plain frames of one and of several records, lz4 and zstd, tombstones, a committed
transaction whose frame keeps some of its records, an aborted one) and runs the cleaner once, so
the partition holds every kind of frame docs/FORMAT.md "Cleaned frames" defines: version 1 frames
the clean left alone, sparse version 2 frames (some of them transactional, some holding
tombstones with their delete horizon) and fillers (a frame emptied whole, an aborted
transaction's frame and marker).

What both readers must return is not taken from either reader: it is the cleaner's rule applied
to what was written, a dict oracle (the latest record of each key below the clean's end, aborted
records gone, tombstones kept: ``delete.retention.ms`` is years; everything from the end on as
written). ``rows`` holds it per isolation level (offset, key, value, timestamp), ``timestamps``
the offset-for-timestamp answers it gives. tests/jvm/test_shared_vectors.py checks Python's
Consumer, its Spark reader's loop (``read_visible``, every start and end) and
``offset_for_timestamp`` against it; the JUnit ``CleanedVectorTest`` checks the JVM reader's
frame walk, partition reader (every start and end, both isolation levels) and
``TimestampLookup``.
"""

from __future__ import annotations

from typing import Any

from kstream import Admin, Consumer, NewTopic, Producer, TopicPartition
from kstream.log.cluster.cluster import Cluster

TOPIC = "cleaned"
BASE_TIMESTAMP_MS = 1_700_100_000_000
CONFIG = {"cleanup.policy": "compact", "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01",
          "index.interval.bytes": "1", "delete.retention.ms": str(10 * 365 * 24 * 3600 * 1000)}
# The writes, in order: (how, [(key, value), ...]). "frame:<codec>": one frame of those records;
# "alone": one frame each; "commit"/"abort": one transactional frame, then the marker.
WRITES: list[tuple[str, list[tuple[str, str | None]]]] = [
    ("frame:lz4", [("k0", "a0"), ("k1", "a1"), ("ka", "a-kept"), ("k2", "a2"), ("k3", "a3")]),
    ("alone", [("k0", "b0"), ("k4", "b4"), ("k1", None)]),
    ("commit", [("k2", "c2"), ("k5", "c5")]),
    ("abort", [("k0", "x0"), ("k3", "x3")]),
    ("frame:zstd", [("k3", "d3"), ("k6", "d6"), ("k0", "d0")]),
    ("alone", [("k2", "e2"), ("k6", "e6"), ("k4", None), ("k7", "f1"), ("k7", "f2"), ("k7", "f3")]),
    ("frame:none", [("k8", "g8"), ("k9", "g9")]),
    ("alone", [(f"z{i}", f"tail{i}") for i in range(6)]),
]
# Written after the clean (above its end: as written): a transaction aborted there, which only
# read_uncommitted shows, and a newer value of a cleaned key.
LATER_WRITES: list[tuple[str, list[tuple[str, str | None]]]] = [
    ("abort", [("k0", "late-aborted"), ("k5", "late-aborted")]),
    ("alone", [("k0", "late")]),
]


def _write(cluster: str, writes: list[tuple[str, list[tuple[str, str | None]]]], written: list[dict[str, Any]]
           ) -> None:
    """Produce ``writes``; append every data record as written (key, value, timestamp, aborted)."""

    def send(producer: Producer, key: str, value: str | None) -> None:
        timestamp = BASE_TIMESTAMP_MS + 1000 * len(written)
        producer.produce(TOPIC, None if value is None else value.encode(), key.encode(), partition=0,
                         timestamp=timestamp)
        written.append({"key": key, "value": value, "timestamp": timestamp, "aborted": False})

    for how, records in writes:
        if how in ("commit", "abort"):
            with Producer({"cluster": cluster, "transactional.id": f"cleaned-{how}", "linger.ms": 60_000}) as tx:
                tx.init_transactions()
                tx.begin_transaction()
                for key, value in records:
                    send(tx, key, value)
                tx.flush()
                if how == "commit":
                    tx.commit_transaction()
                else:
                    for record in written[-len(records):]:
                        record["aborted"] = True
                    tx.abort_transaction()
            continue
        codec = how.split(":")[1] if how.startswith("frame:") else "none"
        with Producer({"cluster": cluster, "linger.ms": 0 if how == "alone" else 60_000,
                       "compression.type": codec}) as producer:
            for key, value in records:
                send(producer, key, value)
                if how == "alone":
                    producer.flush()
            producer.flush()


def _offsets(cluster: str, count: int, start: int) -> list[int]:
    """The offsets of ``count`` data records from ``start`` on, read back (read_uncommitted)."""
    with Consumer({"cluster": cluster, "isolation.level": "read_uncommitted"}) as consumer:
        consumer.assign([TopicPartition(TOPIC, 0, start)])
        offsets: list[int] = []
        for _ in range(100):
            offsets += [m.offset() for m in consumer.consume(1000, timeout=0.1)]
            if len(offsets) >= count:
                break
    assert len(offsets) == count, (offsets, count)
    return offsets


def oracle(written: list[dict[str, Any]], end_offset: int) -> dict[str, list[list[Any]]]:
    """Per isolation level, [offset, key, value, timestamp] of every record a reader gets after
    a clean up to ``end_offset``: below it the latest record of each key among the committed
    and plain ones (tombstones too: their horizon is years away), from it on all as written
    (aborted ones under read_uncommitted only)."""
    latest: dict[str, int] = {}
    for record in written:
        if record["offset"] < end_offset and not record["aborted"]:
            latest[record["key"]] = record["offset"]
    rows: dict[str, list[list[Any]]] = {"read_committed": [], "read_uncommitted": []}
    for record in written:
        row = [record["offset"], record["key"], record["value"], record["timestamp"]]
        if record["offset"] < end_offset:
            if not record["aborted"] and latest[record["key"]] == record["offset"]:
                rows["read_committed"].append(row)
                rows["read_uncommitted"].append(row)
            continue
        if not record["aborted"]:
            rows["read_committed"].append(row)
        rows["read_uncommitted"].append(row)
    return rows


def timestamp_answers(rows: dict[str, list[list[Any]]]) -> list[dict[str, Any]]:
    """For targets at, between and around the records' times: the first row (by offset) a reader
    gets whose timestamp reaches the target, per isolation level ([-1, -1]: none)."""
    times = sorted({row[3] for level in rows.values() for row in level})
    targets = sorted({BASE_TIMESTAMP_MS - 1, *times, *(t + 1 for t in times)})
    answers = []
    for isolation, level in rows.items():
        for target in targets:
            hit = next((row for row in level if row[3] >= target), None)
            answers.append({"isolation": isolation, "target": target,
                            "offset": -1 if hit is None else hit[0], "timestamp": -1 if hit is None else hit[3]})
    return answers


def write_cleaned(cluster: str) -> dict[str, Any]:
    """Write and clean topic ``cleaned`` in ``cluster``; what the manifest says of it."""
    with Admin({"cluster": cluster}) as admin:
        admin.create_topics([NewTopic(TOPIC, 1, config=CONFIG)])[TOPIC].result()
    written: list[dict[str, Any]] = []
    _write(cluster, WRITES, written)
    for record, offset in zip(written, _offsets(cluster, len(written), 0), strict=True):
        record["offset"] = offset
    handle = Cluster.open(cluster)
    try:
        cleaned = handle.clean_topic(TOPIC, force=True)[0]
    finally:
        handle.close()
    assert cleaned.records_removed > 0, cleaned
    later = len(written)
    _write(cluster, LATER_WRITES, written)
    after_clean = _offsets(cluster, len(written) - later, written[later - 1]["offset"] + 1)
    for record, offset in zip(written[later:], after_clean, strict=True):
        record["offset"] = offset
    rows = oracle(written, cleaned.end_offset)
    return {"topic": TOPIC, "end_offset": cleaned.end_offset, "written": written, "rows": rows,
            "timestamps": timestamp_answers(rows)}

"""What the tiering tests share: a topic with committed, aborted and plain records over several
segments, the read_committed oracle, and the rows of the Delta table."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable

from kstream import Consumer, Producer, TopicPartition
from kstream.data_source import KStreamBatchReader, KStreamDataSource
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.lake_offsets import LakeOffsets
from kstream.log.partition_bounds import bounds
from kstream.log.storage.retention import list_segment_bases
from kstream.tiering import Tierer

SEGMENT_BYTES = "1024"


def fill(cluster_path: str, topic: str, partitions: int, rounds: int = 6, timestamp_ms: int = 0) -> None:
    """Per partition and round: three plain records (keys, a header), a committed transaction
    of two, an aborted one of two: control frames and aborted frames spread over many segments."""
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as plain, \
            Producer({"cluster": cluster_path, "transactional.id": f"tier-{topic}", "linger.ms": 0}) as tx:
        tx.init_transactions()
        for r in range(rounds):
            for p in range(partitions):
                for i in range(3):
                    plain.produce(topic, f"plain-{p}-{r}-{i}".encode() * 8, key=f"k{i}".encode(), partition=p,
                                  headers=[("h", f"{r}".encode())], timestamp=timestamp_ms)
                plain.flush()
            tx.begin_transaction()
            for p in range(partitions):
                for i in range(2):
                    tx.produce(topic, f"committed-{p}-{r}-{i}".encode() * 8, partition=p, timestamp=timestamp_ms)
            tx.commit_transaction()
            tx.begin_transaction()
            for p in range(partitions):
                for i in range(2):
                    tx.produce(topic, f"aborted-{p}-{r}-{i}".encode() * 8, partition=p, timestamp=timestamp_ms)
            tx.flush()
            tx.abort_transaction()


def oracle(cluster_path: str, topic: str, partitions: int) -> list[tuple]:
    """(partition, offset, key, value, headers, timestamp ms) of every record a plain
    read_committed consumer reads from offset 0."""
    consumer = Consumer({"cluster": cluster_path, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    rows = []
    try:
        while (m := consumer.poll(0.3)) is not None:
            headers = tuple((k, v) for k, v in (m.headers() or []))
            rows.append((m.partition(), m.offset(), m.key(), m.value(), headers, m.timestamp()[1]))
    finally:
        consumer.close()
    return sorted(rows)


def lake_rows(path: str) -> list[tuple]:
    """The same tuples, from the Delta table at ``path`` read with deltalake."""
    table = DeltaTable(path).to_pyarrow_table()
    rows = []
    for r in table.to_pylist():
        headers = tuple((h["key"], h["value"]) for h in (r["headers"] or []))
        millis = int(r["timestamp"].timestamp() * 1000)
        rows.append((r["partition"], r["offset"], r["key"], r["value"], headers, millis))
    return sorted(rows)


def sealed_ends(cluster_path: str, topic: str) -> dict[int, int]:
    """Each partition's base offset of its active (last) segment."""
    cluster = Cluster.open(cluster_path)
    try:
        info = cluster.topic(topic)
        ends = {}
        for p in range(info.num_partitions):
            handle = cluster.partition(info, p)
            try:
                ends[p] = list_segment_bases(handle.leader_dir)[-1]
            finally:
                handle.close()
        return ends
    finally:
        cluster.close()


def recorded_ends(cluster_path: str, topic: str) -> dict[int, int]:
    """The lake ends kept in the metadata."""
    cluster = Cluster.open(cluster_path)
    try:
        info = cluster.topic(topic)
        return {p: e.end_offset for p, e in LakeOffsets(cluster.metadata).ends(topic, info.topic_id).items()}
    finally:
        cluster.close()


def segment_count(cluster_path: str, topic: str, partition: int) -> int:
    cluster = Cluster.open(cluster_path)
    try:
        handle = cluster.partition(topic, partition)
        try:
            return len([n for n in os.listdir(handle.leader_dir) if n.endswith(".log")])
        finally:
            handle.close()
    finally:
        cluster.close()


def tier_then_trim(cluster_path: str, topic: str, partitions: int, more_rounds: int = 2, timestamp_ms: int = 0
                   ) -> tuple[list[tuple], dict]:
    """The union read's scene: the filled topic tiered (every sealed segment), ``more_rounds``
    more rounds written to the log only, the read_committed oracle taken (nothing deleted yet:
    the topic has no retention bound so far), then ``retention.bytes=1`` set and retention run:
    it deletes every segment the lake holds. Returns (oracle, {partition: (lake end, log start)})."""
    cluster = Cluster.open(cluster_path)
    try:
        Tierer(cluster).run([topic], force=True)
    finally:
        cluster.close()
    fill(cluster_path, topic, partitions, rounds=more_rounds, timestamp_ms=timestamp_ms)
    want = oracle(cluster_path, topic, partitions)
    assert [offset for _, offset, *_ in want if offset == 0], "the oracle must start at offset 0"
    lake_ends = recorded_ends(cluster_path, topic)
    starts = retention_everywhere(cluster_path, topic, partitions)
    return want, {p: (lake_ends[p], starts[p]) for p in range(partitions)}


def tier_all_then_more(cluster_path: str, topic: str, partitions: int, timestamp_ms: int) -> dict[int, int]:
    """``fill`` (plain, committed and aborted records over many segments), every sealed segment
    tiered, then one more round written to the log only; each partition's lake end (all > 0)."""
    fill(cluster_path, topic, partitions, timestamp_ms=timestamp_ms)
    cluster = Cluster.open(cluster_path)
    try:
        Tierer(cluster).run([topic], force=True)
    finally:
        cluster.close()
    fill(cluster_path, topic, partitions, rounds=1, timestamp_ms=timestamp_ms)  # past the lake end
    ends = recorded_ends(cluster_path, topic)
    assert sorted(ends) == list(range(partitions)) and all(e > 0 for e in ends.values()), ends
    return ends


# The lake's columns, as a Spark read of the topic with headers has them.
LAKE_COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]


def rows_of(table: pa.Table) -> list[tuple]:
    """Each row of a table with the read's columns as a comparable tuple: ``timestamp`` as integer
    microseconds since the epoch (Delta's unit), headers as ((key, value), ...); sorted by
    (partition, offset)."""
    stamps = table.column("timestamp")
    if not pa.types.is_timestamp(stamps.type):
        raise AssertionError(f"timestamp read as {stamps.type}, not a timestamp type")
    micros = pc.cast(pc.cast(stamps, pa.timestamp("us", tz="UTC")), pa.int64()).to_pylist()
    out = []
    for r, us in zip(table.select(LAKE_COLUMNS).to_pylist(), micros, strict=True):
        headers = tuple((h["key"], bytes(h["value"]) if h["value"] is not None else None)
                        for h in (r["headers"] or []))
        out.append((r["partition"], r["offset"], r["key"], r["value"], r["topic"], us, r["timestampType"],
                    headers))
    return sorted(out, key=lambda row: (row[0], row[1]))


def kstream_rows(cluster_path: str, topic: str, ends: dict[int, int], start: dict[int, int] | None = None
                 ) -> list[tuple]:
    """The rows (``rows_of``) a kstream batch read with headers gives for [start, end) per
    partition: the Python data source, in this process (from the log where the log still holds
    the offsets, from the lake below the log start)."""
    begin = start or dict.fromkeys(ends, 0)
    options = {"cluster": cluster_path, "assign": json.dumps({topic: sorted(ends)}), "includeHeaders": "true",
               "reader": "python",
               "startingOffsets": json.dumps({topic: {str(p): o for p, o in begin.items()}}),
               "endingOffsets": json.dumps({topic: {str(p): o for p, o in ends.items()}})}
    schema = KStreamDataSource(options).schema()
    reader = KStreamBatchReader(options, schema)
    batches = [batch for split in reader.partitions() for batch in reader.read(split)]
    assert batches, "the kstream read returned no batch"
    return rows_of(pa.Table.from_batches(batches))


def spark_form(rows: list[tuple]) -> list[list]:
    """``rows_of`` tuples as tests/spark/tiered_table_reader.py prints a Spark read's rows: bytes as
    Spark's hex() (upper case), headers as [[key, value hex], ...]."""
    def hexed(b: bytes | None) -> str | None:
        return None if b is None else b.hex().upper()
    return [[p, o, hexed(k), hexed(v), topic, us, kind, [[hk, hexed(hv)] for hk, hv in headers]]
            for p, o, k, v, topic, us, kind, headers in rows]


def retention_everywhere(cluster_path: str, topic: str, partitions: int) -> dict[int, int]:
    """Retention on every partition of ``topic`` (with ``retention.bytes`` 1: all it may delete,
    which on a tiered topic is what the lake holds); each partition's log start after it."""
    cluster = Cluster.open(cluster_path)
    try:
        cluster.alter_topic_config(topic, {"retention.bytes": "1"})
        starts = {}
        for p in range(partitions):
            handle = cluster.partition(topic, p)
            try:
                handle.leader_log.apply_retention()
            finally:
                handle.close()
            starts[p] = bounds(cluster, topic, p).log_start_offset
        return starts
    finally:
        cluster.close()


def null_lake_cell(lake_path: str, partition: int, offset: int, column: str) -> str:
    """Damage the tier table at ``lake_path``: rewrite (in place, same name) the data file of
    ``partition`` holding ``offset`` with that row's ``column`` null, a row kstream never writes.
    The Delta log is left as it was (its statistics still describe the old file). The file's path."""
    table = DeltaTable(lake_path)
    for path in table.file_uris():
        if f"partition={partition}" not in path:
            continue
        rows = pq.read_table(path)
        offsets = rows.column("offset").to_pylist()
        if offset not in offsets:
            continue
        at = offsets.index(offset)
        index = rows.schema.get_field_index(column)
        values = rows.column(column).to_pylist()
        values[at] = None
        damaged = rows.set_column(index, rows.schema.field(index).with_nullable(True),
                                  pa.array(values, rows.schema.field(index).type))
        pq.write_table(damaged, path)
        return path
    raise AssertionError(f"no data file of partition {partition} at {lake_path} holds offset {offset}")

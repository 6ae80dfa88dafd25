"""What the tiering tests share: a topic with committed, aborted and plain records over several
segments, the read_committed oracle, and the rows of the Delta table."""

from __future__ import annotations

import os

from deltalake import DeltaTable

from kstream import Consumer, Producer, TopicPartition
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
    cluster = Cluster.open(cluster_path)
    try:
        cluster.alter_topic_config(topic, {"retention.bytes": "1"})
        edges = {}
        lake_ends = recorded_ends(cluster_path, topic)
        for p in range(partitions):
            handle = cluster.partition(topic, p)
            try:
                handle.leader_log.apply_retention()
            finally:
                handle.close()
            edges[p] = (lake_ends[p], bounds(cluster, topic, p).log_start_offset)
    finally:
        cluster.close()
    return want, edges

"""Helpers for cleaner tests: a compacted topic, what its readers see, and its frames."""

from __future__ import annotations

import os

from kstream import Admin, Consumer, Producer, TopicPartition
from kstream.admin import NewTopic
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import format as fmt
from kstream.log.storage.frames import FrameWalk, pread_from

COMPACT = {"cleanup.policy": "compact", "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01"}


def make_compacted(cluster_path: str, name: str = "t", replicas: int = 1, config: dict | None = None,
                   schema=None, log_dirs: str = "a,b") -> None:
    with Admin({"cluster": cluster_path, "log.dirs": log_dirs}) as admin:
        topic = NewTopic(name, 1, replicas, config={**COMPACT, **(config or {})}, schema=schema)
        admin.create_topics([topic])[name].result()


def produce(cluster_path: str, records: list[tuple[bytes, bytes | None]], topic: str = "t",
            each_alone: bool = True) -> None:
    """Records (key, value) in order; ``each_alone``: one frame each (so segments roll)."""
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for key, value in records:
            producer.produce(topic, value, key=key)
            if each_alone:
                producer.flush()
        producer.flush()


def polled(cluster_path: str, topic: str = "t", isolation: str = "read_committed") -> list[tuple[int, bytes, bytes]]:
    """(offset, key, value) of every record poll() returns from the start."""
    with Consumer({"cluster": cluster_path, "isolation.level": isolation, "enable.partition.eof": True,
                   "auto.offset.reset": "earliest"}) as consumer:
        consumer.assign([TopicPartition(topic, 0, 0)])
        out = []
        while True:
            message = consumer.poll(5)
            assert message is not None, "no end of partition reported"
            if message.error():
                assert message.error().code() == -191, message.error()  # _PARTITION_EOF
                return out
            out.append((message.offset(), message.key(), message.value()))


def batches(cluster_path: str, topic: str = "t") -> list[tuple[int, bytes, bytes]]:
    """(offset, key, value) of every record poll_batch() returns from the start."""
    with Consumer({"cluster": cluster_path, "enable.partition.eof": True}) as consumer:
        consumer.assign([TopicPartition(topic, 0, 0)])
        out = []
        for _ in range(10_000):
            batch = consumer.poll_batch(max_records=7, timeout=0.2)
            if batch is None or batch.num_rows == 0:
                break
            out += list(zip(batch.column("offset").to_pylist(), batch.column("key").to_pylist(),
                            batch.column("value").to_pylist(), strict=True))
        return out


def replica_dirs(cluster_path: str, topic: str = "t") -> list[str]:
    cluster = Cluster.open(cluster_path)
    handle = cluster.partition(topic, 0)
    try:
        return [handle.replica_dirs[r] for r in handle.info.replicas]
    finally:
        handle.close()


def frames(directory: str) -> list[tuple[fmt.FrameHeader, bytes]]:
    """Every frame (header, whole bytes) of a replica, checking that offsets run contiguously
    from segment to segment and frame to frame (fillers and sparse frames tile the log)."""
    out = []
    expected = None
    for base in fmt.list_segment_bases(directory):
        assert expected is None or base == expected, (directory, base, expected)
        fd = os.open(os.path.join(directory, fmt.segment_file_name(base)), os.O_RDONLY)
        try:
            read = pread_from(fd)
            walk = FrameWalk(read, os.fstat(fd).st_size, 0, next_offset=base, verify_payload=True)
            for position, header in walk:
                out.append((header, read(position, header.frame_size)))
            assert walk.problem is None, (directory, base, walk.problem)
            expected = walk.next_offset if walk.next_offset is not None else base
        finally:
            os.close(fd)
    return out

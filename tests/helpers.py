"""Test helpers: build encoded batches and read a replica log back in full."""

from __future__ import annotations

import os
import time

from kstream.log.lock import PartitionLock
from kstream.log.log_config import LogConfig
from kstream.log.log_reader import LogReader
from kstream.log.output import decode_frame
from kstream.log.partition_log import EncodedBatch, PartitionLog
from kstream.log.records import PayloadCodec, batch_from_records


def encoded(values: list[bytes], timestamp_ms: int | None = None, codec: PayloadCodec | None = None
            ) -> EncodedBatch:
    codec = codec or PayloadCodec()
    if timestamp_ms is None:
        timestamp_ms = int(time.time() * 1000)
    batch = batch_from_records(values, None, None, None)
    return EncodedBatch(codec.encode(batch), len(values), timestamp_ms,
                        timestamp_ms)


def open_log(directory: str, **config) -> PartitionLog:
    os.makedirs(directory, exist_ok=True)
    return PartitionLog(directory, LogConfig(**config), PartitionLock(os.path.join(directory, "..", "test.lock")))


def read_all(directory: str, start: int = 0) -> list[tuple[int, bytes]]:
    """(offset, value) of every record from ``start``, checking checksums."""
    reader = LogReader(directory)
    codec = PayloadCodec()
    out = []
    offset = start
    try:
        while True:
            frames = reader.read(offset, 1 << 20)
            if not frames:
                return out
            for frame in frames:
                stored = decode_frame(codec, frame).slice_from(offset)
                values = stored.batch.column("value").to_pylist()
                out.extend(zip(range(stored.base_offset, stored.next_offset), values, strict=False))
                offset = stored.next_offset
    finally:
        reader.close()


def consume_values(cluster_path: str, topic: str, partitions, level: str = "read_committed",
                   timeout: float = 0.3) -> list:
    """Every value a fresh consumer reads from offset 0 of ``partitions`` (an int count or a list)."""
    from kstream import Consumer, TopicPartition

    numbers = range(partitions) if isinstance(partitions, int) else partitions
    consumer = Consumer({"cluster": cluster_path, "isolation.level": level})
    consumer.assign([TopicPartition(topic, p, 0) for p in numbers])
    values = []
    try:
        while (message := consumer.poll(timeout)) is not None:
            values.append(message.value())
    finally:
        consumer.close()
    return values

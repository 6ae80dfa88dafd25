"""Test helpers: build encoded batches and read a replica log back in full."""

from __future__ import annotations

import os
import time
import weakref

from kstream.log.storage.lock import PartitionLock
from kstream.log.storage.log_config import LogConfig
from kstream.log.storage.log_reader import LogReader
from kstream.log.storage.output import decode_frame
from kstream.log.storage.partition_log import EncodedBatch, PartitionLog
from kstream.log.storage.records import PayloadCodec, batch_from_records


def encoded(values: list[bytes], timestamp_ms: int | None = None, codec: PayloadCodec | None = None
            ) -> EncodedBatch:
    codec = codec or PayloadCodec()
    if timestamp_ms is None:
        timestamp_ms = int(time.time() * 1000)
    batch = batch_from_records(values, None, None, None)
    return EncodedBatch(codec.encode(batch), len(values), timestamp_ms,
                        timestamp_ms)


OPEN_LOGS: weakref.WeakSet[PartitionLog] = weakref.WeakSet()  # closed after each test (tests/conftest.py)


class TestLog(PartitionLog):
    """A replica log that owns its lock, as a Partition does for the logs it opens: ``close()``
    closes both (model tests open hundreds of these in one process)."""

    __test__ = False  # not a test class, whatever pytest's name rule says

    def __init__(self, directory: str, config: LogConfig):
        self._own_lock = PartitionLock(os.path.join(directory, "..", "test.lock"))
        super().__init__(directory, config, self._own_lock)
        OPEN_LOGS.add(self)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._own_lock.close()


def open_log(directory: str, **config) -> PartitionLog:
    os.makedirs(directory, exist_ok=True)
    return TestLog(directory, LogConfig(**config))


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


def consume_values_to_end(cluster_path: str, topic: str, partitions: int, level: str = "read_committed",
                          timeout: float = 60.0) -> list:
    """Every value a fresh consumer reads from offset 0 of ``partitions`` up to each partition's
    high watermark as of the call: unlike :func:`consume_values` (which reads until a poll finds
    nothing), it ends while a writer keeps appending (a Real-time query's output)."""
    from kstream import Consumer, TopicPartition

    consumer = Consumer({"cluster": cluster_path, "isolation.level": level})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p))[1] for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in ends])
        values: list = []
        deadline = time.monotonic() + timeout
        while True:
            positions = {tp.partition: tp.offset for tp in consumer.position([TopicPartition(topic, p) for p in ends])}
            if all(ends[p] == 0 or positions[p] >= ends[p] for p in ends):
                return values
            assert time.monotonic() < deadline, f"{topic}: not read up to {ends} in {timeout} s (at {positions})"
            message = consumer.poll(0.2)
            if message is not None and message.offset() < ends[message.partition()]:
                values.append(message.value())
    finally:
        consumer.close()


def open_partitions(cluster_path: str, topic: str, partitions: int) -> list[int]:
    """The partitions of ``topic`` an open transaction still holds (its LSO held back)."""
    from kstream.log.cluster.cluster import Cluster
    from kstream.log.transactions.sink import SinkStore

    cluster = Cluster.open(cluster_path)
    try:
        store = SinkStore(cluster)
        return [p for p in range(partitions) if store.transactions.first_open_offset(topic, p) is not None]
    finally:
        cluster.close()


def produce_range(cluster_path: str, topic: str, start: int, count: int, *, prefix: str = "v",
                  partitions: int | None = None, key_mod: int | None = None, config: dict | None = None) -> None:
    """Values f"{prefix}{i}" for i in start..start+count-1, to partition i % partitions (else the
    partitioner), keyed f"k{i % key_mod}" when key_mod is given."""
    from kstream import Producer

    with Producer({"cluster": cluster_path, **(config or {})}) as producer:
        for i in range(start, start + count):
            producer.produce(topic, f"{prefix}{i}".encode(),
                             key=f"k{i % key_mod}".encode() if key_mod else None,
                             partition=i % partitions if partitions else -1)


def committed_offsets(cluster_path: str, group: str) -> dict[tuple[str, int], int]:
    """A group's committed offsets, read from the offsets table."""
    from kstream import ConsumerGroups
    from kstream.log.cluster.cluster import Cluster

    service = ConsumerGroups(Cluster.open(cluster_path))
    try:
        return {key: row.offset for key, row in service.committed(group).items()}
    finally:
        service.close()
        service.cluster.close()


def open_transaction(cluster_path: str, transactional_id: str, topic: str, value: bytes,
                     timeout_ms: int | None = None):
    """A transactional producer holding one flushed record (partition 0) in an open transaction
    (``timeout_ms``: its transaction.timeout.ms, else the default)."""
    from kstream import Producer

    config = {"cluster": cluster_path, "transactional.id": transactional_id, "linger.ms": 0}
    if timeout_ms is not None:
        config["transaction.timeout.ms"] = timeout_ms
    producer = Producer(config)
    producer.init_transactions()
    producer.begin_transaction()
    producer.produce(topic, value, partition=0)
    producer.flush()
    return producer


def spark_checkpoint(path, query_id: str | None = None) -> str:
    """A streaming checkpoint directory as Spark starts one: ``metadata`` holds the query's id
    (Spark's StreamMetadata, one JSON line). Returns the id."""
    import json
    import os
    import uuid

    query_id = query_id or str(uuid.uuid4())
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "metadata"), "w") as f:
        f.write(json.dumps({"id": query_id}) + "\n")
    return query_id


def file_tree(*roots: str) -> dict[str, tuple]:
    """Every file (size, mtime) and directory (a trailing ``/``) under ``roots``, but SQLite's
    ``-wal``/``-shm`` and the partition lock files (any opener of a partition makes its lock
    file): what a read-only command must leave as it found it."""
    found: dict[str, tuple] = {}
    for top in roots:
        for root, dirs, files in os.walk(top):
            for name in dirs:
                found[os.path.join(root, name) + "/"] = ()
            for name in files:
                if not name.endswith(("-wal", "-shm", ".lock")):
                    stat = os.stat(os.path.join(root, name))
                    found[os.path.join(root, name)] = (stat.st_size, stat.st_mtime_ns)
    return found


def metadata_dump(cluster_path: str) -> list[str]:
    """metadata.db's full contents (``iterdump``), read through a read-only connection."""
    import sqlite3

    connection = sqlite3.connect(f"file:{os.path.join(cluster_path, 'metadata.db')}?mode=ro", uri=True)
    try:
        return list(connection.iterdump())
    finally:
        connection.close()


def write_committed_and_aborted(cluster_path: str, transactional_id: str, topic: str = "txn") -> None:
    """On partition 0 of ``topic``: plain-0, plain-1, committed-0..2 + COMMIT marker, plain-2,
    aborted-0..1 + ABORT marker, plain-3 (offsets 0-10): a log every reader must agree on."""
    from kstream import Producer

    with Producer({"cluster": cluster_path}) as plain, \
            Producer({"cluster": cluster_path, "transactional.id": transactional_id}) as tx:
        for i in range(2):
            plain.produce(topic, f"plain-{i}".encode(), partition=0)
        plain.flush()
        tx.init_transactions()
        tx.begin_transaction()
        for i in range(3):
            tx.produce(topic, f"committed-{i}".encode(), partition=0)
        tx.commit_transaction()
        plain.produce(topic, b"plain-2", partition=0)
        plain.flush()
        tx.begin_transaction()
        for i in range(2):
            tx.produce(topic, f"aborted-{i}".encode(), partition=0)
        tx.flush()
        tx.abort_transaction()
        plain.produce(topic, b"plain-3", partition=0)
        plain.flush()


def lose_high_watermark(cluster_path: str, topic: str, partition: int, how: str = "missing") -> None:
    """Lose the partition's published HW the way a power cut does (the lock file is never
    fsynced): ``missing`` removes the lock file (a new file whose entry never reached the
    disk), ``zeroed`` zeroes its HW field (pages never written back), ``torn`` leaves it
    shorter than the field (a cut mid-extension)."""
    from kstream.log.cluster.cluster import Cluster
    from kstream.log.storage import format as fmt

    cluster = Cluster.open(cluster_path)
    try:
        path = cluster.lock_path(cluster.topic(topic), partition)
    finally:
        cluster.close()
    if how == "missing":
        os.remove(path)
    elif how == "zeroed":
        with open(path, "r+b") as f:
            f.seek(fmt.LOCK_HIGH_WATERMARK_POSITION)
            f.write(b"\0" * fmt.LOCK_HIGH_WATERMARK.size)
    else:
        assert how == "torn", how
        os.truncate(path, fmt.LOCK_HIGH_WATERMARK_POSITION + 1)


def wait_until(condition, seconds: float, interval_s: float = 0.2) -> bool:
    """Whether ``condition()`` became true within ``seconds`` (asked every ``interval_s``, and once
    more at the end)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval_s)
    return bool(condition())


def produce_keyed(cluster_path: str, topic: str, values) -> None:
    """Each of ``values`` (strings) as one record of ``topic`` keyed by itself (acks=all, flushed)."""
    from kstream import Producer

    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for value in values:
            producer.produce(topic, value.encode(), key=value.encode())

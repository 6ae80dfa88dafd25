"""``Table``: look keys up in a compacted topic, the latest value of each (docs/TABLES.md).

Kafka has no lookups (Kafka Streams' interactive queries are Java, and need a running
application and its state stores); a kstream compacted topic is a table already, on the
local disks, so a Python program asks it directly::

    with kstream.Table({"cluster": "data"}, "users") as users:
        message = users.get(b"alice")          # a Message, or None
        found = users.get_many([b"alice", b"bob"])

Contract:

* **What a key answers**: the key's latest record a read_committed consumer sees (nothing
  of an open or aborted transaction), as a :class:`~kstream.message.Message` with its
  partition and offset; None when the key never had one or its latest record is a tombstone
  (a null value; on a typed topic every value column null). The key goes to its partition by
  Kafka's murmur2 partitioner, as the Producer sends it (bytes, or str as UTF-8).
* **Fresh by default**: every lookup first indexes what was committed since the last one (up
  to the partition's LSO), so a get after a producer's flush() sees its record. ``as_of``
  ({partition: offset} for every partition) makes a snapshot: the latest values below those
  offsets, built once. An ``as_of`` past the LSO, or below where the log cleaner has
  cleaned (the older values are gone), is refused with an OffsetOutOfRangeError saying why.
* **Only compacted topics** (``cleanup.policy`` compact or compact,delete): a topic that
  expires by time and size keeps no latest value per key, so it is refused with a ConfigError.
* **Read-only**: a Table never creates or changes a file or metadata row; its key index
  (:class:`kstream.log.key_index.KeyIndex`) lives in this process's memory, built on the
  first lookup of each partition (``refresh()`` builds every partition now).
* Thread-safe (one lock); close() (or ``with``) releases the files and, when the Table opened
  the cluster itself, the cluster.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

from kstream.client.partitioner import partition_for_key
from kstream.client.producer_batches import to_bytes
from kstream.errors import ConfigError, OffsetOutOfRangeError, ValueTooLargeError
from kstream.log.cluster.cluster import Cluster
from kstream.log.key_index import MAX_KEYS, KeyIndex
from kstream.log.storage.output import StoredBatch, to_python_records
from kstream.message import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Message, make_message

DECODE_MAX_ITEMS = 1_000_000
"""Most values one typed record converts to by default (the Consumer's decode.max.items)."""
_LOOKUP_ROUNDS = 4  # a record cleaned away between the catch-up and the read: catch up and look again


class Table:
    """The latest value of each key of a compacted topic. See the module docstring.

    ``cluster_or_config``: an open :class:`Cluster` (left open by close()), a path to one, or
    a client config dict (``{"cluster": path}``; None or {}: $KSTREAM_CLUSTER or ./data).
    ``as_of``: {partition: offset}, every partition named, for a snapshot (default: follow the
    LSO). ``max_keys``: most keys indexed per partition (ResourceExhaustedError past it).
    ``decode_max_items``: most values a typed record's value converts to (the Consumer's
    ``decode.max.items``; a get of a larger one raises ValueTooLargeError)."""

    def __init__(self, cluster_or_config: Cluster | str | Mapping[str, Any] | None, topic: str, *,
                 as_of: Mapping[int, int] | None = None, max_keys: int = MAX_KEYS,
                 decode_max_items: int = DECODE_MAX_ITEMS):
        self._own_cluster = not isinstance(cluster_or_config, Cluster)
        self._cluster = _open_cluster(cluster_or_config)
        try:
            self._info = self._cluster.topic(topic)
            config = self._cluster.log_config(self._info)
            if not config.compact:
                raise ConfigError(
                    f"topic {topic!r} has cleanup.policy={config.cleanup_policy}, which keeps no latest value "
                    "per key: a Table reads compacted topics only. Use a compacted topic (create it with "
                    f"cleanup.policy=compact, or `kstream topics alter {topic} --config cleanup.policy=compact`; "
                    "records without a key are then refused), or read this one with a Consumer")
            self._typed = Cluster.topic_schema(self._info) is not None
            self._as_of = _check_as_of(as_of, self._info.num_partitions, topic)
        except BaseException:
            if self._own_cluster:
                self._cluster.close()
            raise
        self.topic = topic
        self._max_keys = max_keys
        self._decode_max_items = decode_max_items
        self._indexes: dict[int, KeyIndex] = {}
        self._lock = threading.Lock()
        self._closed = False

    @property
    def num_partitions(self) -> int:
        return self._info.num_partitions

    @property
    def as_of(self) -> dict[int, int] | None:
        """The snapshot's offsets (None: the Table follows each partition's LSO)."""
        return None if self._as_of is None else dict(self._as_of)

    # -- lookups --------------------------------------------------------------------------

    def get(self, key: bytes | str) -> Message | None:
        """``key``'s latest value (a Message), or None when it has none or was deleted."""
        raw = to_bytes(key, "key")
        with self._lock:
            self._check_open()
            partition = partition_for_key(raw, self._info.num_partitions)
            index = self._index(partition)
            index.catch_up()
            return self._lookup(index, raw)

    def get_many(self, keys: Iterable[bytes | str]) -> dict[Any, Message]:
        """{key: its latest value} for the given keys that have one (absent and deleted keys are
        left out), each partition caught up once."""
        wanted = [(key, to_bytes(key, "key")) for key in keys]
        found: dict[Any, Message] = {}
        with self._lock:
            self._check_open()
            caught_up: set[int] = set()
            for key, raw in wanted:
                partition = partition_for_key(raw, self._info.num_partitions)
                index = self._index(partition)
                if partition not in caught_up:
                    index.catch_up()
                    caught_up.add(partition)
                message = self._lookup(index, raw)
                if message is not None:
                    found[key] = message
        return found

    def refresh(self) -> dict[int, int]:
        """Index every partition now (what the first lookups would do); {partition: the offset
        indexed to}."""
        with self._lock:
            self._check_open()
            return {p: self._index(p).catch_up() for p in range(self._info.num_partitions)}

    def _lookup(self, index: KeyIndex, key: bytes) -> Message | None:
        for _ in range(_LOOKUP_ROUNDS):
            offset = index.offset_of(key)
            if offset is None:
                return None
            stored = index.record(offset)
            if stored is not None:
                return self._message(index.partition, offset, stored)
            # Gone from the log: the cleaner replaced it with a newer record past what was
            # indexed (read on to find it), or retention deleted it (the key is gone).
            if self._as_of is not None:
                index.check_snapshot()  # cleaned past as_of since the build: the answer is gone
                index.forget(key, offset)
                return None
            indexed_to = index.indexed_to
            index.catch_up()
            if index.offset_of(key) == offset and index.indexed_to == indexed_to:
                index.forget(key, offset)  # nothing newer: the record left the log (retention)
                return None
        raise OffsetOutOfRangeError(
            f"{self.topic}-{index.partition}: the record of key {key!r} left the log {_LOOKUP_ROUNDS} times while "
            "it was looked up (the log cleaner replacing it each time); look it up again")

    def _message(self, partition: int, offset: int, stored: StoredBatch) -> Message:
        keys, values, timestamps, headers, too_large = to_python_records(stored, self._typed,
                                                                         self._decode_max_items)
        if too_large:
            raise ValueTooLargeError(
                f"{self.topic}-{partition} offset {offset}: the typed value holds more than {self._decode_max_items} "
                f"values (counted {too_large[0]}; nested lists, maps, structs), more than decode_max_items lets a "
                "Table convert to Python; raise decode_max_items, or read it as Arrow (Consumer.poll_batch)")
        kind = TIMESTAMP_LOG_APPEND_TIME if stored.log_append_time else TIMESTAMP_CREATE_TIME
        return make_message(self.topic, partition, offset, next(iter(keys)), next(iter(values)),
                            next(iter(headers)), kind, next(iter(timestamps)))

    def _index(self, partition: int) -> KeyIndex:
        index = self._indexes.get(partition)
        if index is None:
            until = None if self._as_of is None else self._as_of[partition]
            index = KeyIndex(self._cluster, self._info, partition, typed=self._typed, until=until,
                             max_keys=self._max_keys)
            self._indexes[partition] = index
        return index

    # -- lifetime -------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Table closed")

    def close(self) -> None:
        """Release every partition's files and index (and the cluster, if this Table opened it)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            indexes, self._indexes = list(self._indexes.values()), {}
        try:
            for index in indexes:
                index.close()
        finally:
            if self._own_cluster:
                self._cluster.close()

    def __enter__(self) -> Table:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Table(topic={self.topic!r}, partitions={self._info.num_partitions}, as_of={self._as_of})"


def _open_cluster(cluster_or_config: Cluster | str | Mapping[str, Any] | None) -> Cluster:
    """The cluster a Table reads (it must exist: a Table never creates one)."""
    if isinstance(cluster_or_config, Cluster):
        return cluster_or_config
    if cluster_or_config is None or isinstance(cluster_or_config, str):
        return Cluster.open(cluster_or_config)
    if not isinstance(cluster_or_config, Mapping):
        raise TypeError(f"Table() takes a Cluster, a cluster path or a config dict, got "
                        f"{type(cluster_or_config).__name__}")
    unknown = sorted(set(cluster_or_config) - {"cluster"})
    if unknown:
        raise ConfigError(f"unknown option(s) {', '.join(map(repr, unknown))} for a Table: it takes only "
                          "'cluster' (the cluster path)")
    return Cluster.open(cluster_or_config.get("cluster"))


def _check_as_of(as_of: Mapping[int, int] | None, num_partitions: int, topic: str) -> dict[int, int] | None:
    if as_of is None:
        return None
    if not isinstance(as_of, Mapping):
        raise ConfigError(f"as_of must be a dict {{partition: offset}} naming each partition of {topic!r}, got "
                          f"{type(as_of).__name__}")
    wanted = set(range(num_partitions))
    if set(as_of) != wanted:
        missing = sorted(wanted - set(as_of))
        extra = sorted(set(as_of) - wanted)
        raise ConfigError(f"as_of must name every partition of {topic!r} (0..{num_partitions - 1}) once: "
                          + (f"missing {missing}" if missing else "") + ("; " if missing and extra else "")
                          + (f"no such partition(s) {extra}" if extra else ""))
    for partition, offset in as_of.items():
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise ConfigError(f"as_of offset of partition {partition} must be an offset >= 0, got {offset!r}")
    return dict(as_of)

"""Kafka's partitioners: murmur2 for keyed records, sticky for unkeyed ones.

``partition_for_key`` gives the partition Kafka's Java client picks for the
same key bytes and partition count (``toPositive(murmur2(key)) % n``), so a
kstream topic and a Kafka topic agree on key placement. ``partitions_for_keys``
is the same function over a whole Arrow column, vectorised with NumPy (keys
of equal length are hashed together).
"""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: a signed 32-bit hash, bit-identical to the Java client."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length & ~3
    for i in range(0, whole, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rest = length & 3
    if rest == 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition of a keyed record, as Kafka's default partitioner computes it."""
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


def _murmur2_matrix(rows: np.ndarray) -> np.ndarray:
    """murmur2 of each row of a (n, length) uint8 matrix, as uint32."""
    n, length = rows.shape
    m = np.uint64(_M)
    mask = np.uint64(_MASK)
    h = np.full(n, (_SEED ^ length) & _MASK, dtype=np.uint64)
    whole = length & ~3
    if whole:
        words = np.ascontiguousarray(rows[:, :whole]).view("<u4").astype(np.uint64)
        for j in range(words.shape[1]):
            k = (words[:, j] * m) & mask
            k ^= k >> np.uint64(24)
            k = (k * m) & mask
            h = ((h * m) & mask) ^ k
    rest = length & 3
    if rest == 3:
        h ^= rows[:, whole + 2].astype(np.uint64) << np.uint64(16)
    if rest >= 2:
        h ^= rows[:, whole + 1].astype(np.uint64) << np.uint64(8)
    if rest >= 1:
        h ^= rows[:, whole].astype(np.uint64)
        h = (h * m) & mask
    h ^= h >> np.uint64(13)
    h = (h * m) & mask
    h ^= h >> np.uint64(15)
    return h.astype(np.uint32)


def partitions_for_keys(keys: pa.Array, num_partitions: int) -> np.ndarray:
    """Partition of every non-null key of a binary column (-1 where the key is null)."""
    keys = keys.cast(pa.binary())
    n = len(keys)
    result = np.full(n, -1, dtype=np.int32)
    if n == 0:
        return result
    lengths = pc.binary_length(keys).to_numpy(zero_copy_only=False)
    valid = ~keys.is_null().to_numpy(zero_copy_only=False)
    offsets = np.frombuffer(keys.buffers()[1], dtype=np.int32, count=n + 1, offset=keys.offset * 4)
    data = keys.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.empty(0, np.uint8)
    for length in np.unique(lengths[valid]):
        rows_at = np.nonzero(valid & (lengths == length))[0]
        starts = offsets[rows_at]
        matrix = raw[starts[:, None] + np.arange(int(length))] if length else np.empty((len(rows_at), 0), np.uint8)
        hashes = _murmur2_matrix(matrix)
        result[rows_at] = ((hashes & np.uint32(0x7FFFFFFF)) % np.uint32(num_partitions)).astype(np.int32)
    return result


class StickyPartitioner:
    """Kafka's sticky partitioning for unkeyed records: stay on one partition, then move
    to another at random when told (the producer tells it once batch.size bytes went to
    the partition, KIP-794). Not thread-safe."""

    def __init__(self, rng: random.Random | None = None):
        self._rng = rng or random.Random()
        self._current: dict[str, int] = {}

    def partition(self, topic: str, num_partitions: int) -> int:
        current = self._current.get(topic)
        if current is None or current >= num_partitions:
            current = self._rng.randrange(num_partitions)
            self._current[topic] = current
        return current

    def batch_sent(self, topic: str, num_partitions: int, partition: int) -> None:
        """Move on after a batch of the sticky partition went out."""
        if self._current.get(topic) == partition and num_partitions > 1:
            following = self._rng.randrange(num_partitions - 1)
            self._current[topic] = following if following < partition else following + 1

import os
import random
from collections import Counter

import pyarrow as pa
import pytest

from kstream.client.partitioner import StickyPartitioner, murmur2, partition_for_key, partitions_for_keys

# Kafka's clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, testMurmur2.
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    bytes([ord("a"), ord("b"), ord("c")]): 479470107,
}


@pytest.mark.parametrize(("data", "expected"), KAFKA_VECTORS.items())
def test_murmur2_matches_kafka_java_client(data, expected):
    assert murmur2(data) == expected


def test_partition_is_to_positive_modulo():
    assert partition_for_key(b"foobar", 10) == (-790332482 & 0x7FFFFFFF) % 10


def test_vectorised_partitions_equal_scalar():
    rng = random.Random(7)
    keys = [os.urandom(rng.randint(0, 40)) for _ in range(3000)] + [None, b"", None]
    column = pa.array(keys, pa.binary()).slice(5)  # a sliced array has an offset
    expected = [-1 if k is None else partition_for_key(k, 12) for k in keys[5:]]
    assert partitions_for_keys(column, 12).tolist() == expected
    assert partitions_for_keys(pa.array([s.decode("latin1") for s in KAFKA_VECTORS], pa.string()), 7
                               ).tolist() == [partition_for_key(k, 7) for k in KAFKA_VECTORS]


def test_sticky_partitioner_stays_then_moves():
    sticky = StickyPartitioner(random.Random(1))
    first = sticky.partition("t", 4)
    assert all(sticky.partition("t", 4) == first for _ in range(10))
    seen = Counter()
    for _ in range(400):
        current = sticky.partition("t", 4)
        sticky.batch_sent("t", 4, current)
        assert sticky.partition("t", 4) != current
        seen[current] += 1
    assert set(seen) == {0, 1, 2, 3}

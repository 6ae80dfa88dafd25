"""The engine's face for reading: what a reader at an isolation level sees of [start, end)
(issue 27). The log of write_committed_and_aborted: plain-0, plain-1, committed-0..2, COMMIT
marker (5), plain-2 (6), aborted-0..1 (7, 8), ABORT marker (9), plain-3 (10)."""

from __future__ import annotations

import pytest

from helpers import write_committed_and_aborted
from kstream.errors import OffsetOutOfRangeError
from kstream.log import read_visible
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage.records import PayloadCodec
from kstream.log.transactions.isolation import READ_COMMITTED, READ_UNCOMMITTED, Isolation
from kstream.log.transactions.store import TransactionStore

VALUES = [b"plain-0", b"plain-1", b"committed-0", b"committed-1", b"committed-2", None, b"plain-2",
          b"aborted-0", b"aborted-1", None, b"plain-3"]  # None: a marker's offset


@pytest.fixture
def cluster(cluster_path, make_topic):
    make_topic("txn")
    write_committed_and_aborted(cluster_path, "tx")
    opened = Cluster.open(cluster_path)
    yield opened
    opened.close()


def read(cluster, level, start, end, max_bytes=8 << 20, columns=None):
    handle = cluster.partition("txn", 0)
    reader = handle.reader()
    try:
        isolation = Isolation(level, TransactionStore.for_cluster(cluster), "txn", 0, handle.leader_dir)
        got = []
        for stored in read_visible(reader, isolation, start, end, 11, PayloadCodec(), columns, max_bytes):
            offsets = range(stored.base_offset, stored.next_offset)
            got.extend(zip(offsets, stored.batch.column("value").to_pylist(), strict=True))
        return got
    finally:
        reader.close()
        handle.close()


def expected(level, start, end):
    hidden = {7, 8} if level == READ_COMMITTED else set()
    return [(o, VALUES[o]) for o in range(start, end) if VALUES[o] is not None and o not in hidden]


@pytest.mark.parametrize("level", [READ_COMMITTED, READ_UNCOMMITTED])
@pytest.mark.parametrize("max_bytes", [1, 8 << 20])  # one frame per look, or all at once
def test_every_range_holds_what_the_level_may_see_and_no_marker(cluster, level, max_bytes):
    for start in range(11):
        for end in range(start, 12):
            assert read(cluster, level, start, end, max_bytes) == expected(level, start, end), (start, end)


def test_only_the_stored_columns_asked_are_decoded(cluster):
    handle = cluster.partition("txn", 0)
    reader = handle.reader()
    try:
        isolation = Isolation(READ_COMMITTED, None, "txn", 0, handle.leader_dir)
        batches = list(read_visible(reader, isolation, 0, 11, 11, PayloadCodec(), frozenset({"value"})))
    finally:
        reader.close()
        handle.close()
    assert {name for b in batches for name in b.batch.schema.names} == {"value"}


def test_a_range_past_what_the_log_holds_is_out_of_range(cluster):
    with pytest.raises(OffsetOutOfRangeError, match="no data at offset 11"):
        read(cluster, READ_UNCOMMITTED, 10, 13)

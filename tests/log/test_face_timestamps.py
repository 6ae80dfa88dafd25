"""The engine's offset-for-timestamp face against the one table of cases (tests/log/timestamp_cases.py).

Each case is written as a real partition; :func:`kstream.log.offset_for_timestamp` must answer
every lookup under both isolation levels as the table says, and the table's answers must be the
rule's (a brute-force oracle over the table's records). The Java reader answers the same table
through the shared vectors (tests/jvm/test_shared_vectors.py, TimestampVectorTest).
"""

from __future__ import annotations

import pytest
from tests.log.timestamp_cases import CASES, ISOLATIONS, T0, build, expected, oracle

from kstream import log as engine
from kstream.log.cluster.cluster import Cluster
from kstream.log.transactions.store import TransactionStore

LOOKUPS = [(case, lookup, isolation) for case in CASES for lookup in case.lookups for isolation in ISOLATIONS]


def _id(item) -> str:
    case, lookup, isolation = item
    return f"{case.name}@{lookup.target}-{isolation}"


@pytest.mark.parametrize("case,lookup,isolation", LOOKUPS, ids=[_id(i) for i in LOOKUPS])
def test_the_tables_answers_are_the_rules(case, lookup, isolation):
    assert getattr(lookup, isolation) == oracle(case, lookup.target, isolation), lookup.why


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every case as a topic of one cluster."""
    path = str(tmp_path_factory.mktemp("timestamps") / "cluster")
    for case in CASES:
        build(path, case)
    return path


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_face_answers_every_lookup(built, case):
    cluster = Cluster.open(built)
    try:
        store = TransactionStore.for_cluster(cluster)
        handle = cluster.partition(f"ts-{case.name}", 0)
        try:
            for lookup in case.lookups:
                for isolation in ISOLATIONS:
                    found = engine.offset_for_timestamp(handle, case_target(lookup), isolation, store)
                    got = None if found is None else (found.offset, found.timestamp_ms)
                    assert got == expected(case, lookup, isolation), (lookup.why, isolation)
                    # The files alone (no metadata, as the Java reader) answer the same.
                    again = engine.offset_for_timestamp(handle, case_target(lookup), isolation)
                    assert again == found
        finally:
            handle.close()
    finally:
        cluster.close()


def case_target(lookup) -> int:
    return T0 + lookup.target


def test_the_face_is_exported_lazily_from_the_engine():
    assert "offset_for_timestamp" in engine.__all__
    from kstream.log.timestamps import offset_for_timestamp

    assert engine.offset_for_timestamp is offset_for_timestamp

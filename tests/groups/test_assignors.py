"""The assignors against Kafka's documented examples and their invariants."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kstream.groups.assignors import range_assignor, roundrobin_assignor


def names(assignment):
    return {m: [f"{t}p{p}" for t, p in tps] for m, tps in assignment.items()}


def test_range_kafka_example():
    # RangeAssignor javadoc: C0, C1 subscribed to t0 and t1, 3 partitions each.
    subs = {"C0": ["t0", "t1"], "C1": ["t0", "t1"]}
    assert names(range_assignor(subs, {"t0": 3, "t1": 3})) == {
        "C0": ["t0p0", "t0p1", "t1p0", "t1p1"], "C1": ["t0p2", "t1p2"]}


def test_range_first_n_mod_c_members_get_one_more():
    subs = {m: ["t"] for m in ("c", "a", "d", "b")}
    assert names(range_assignor(subs, {"t": 10})) == {
        "a": ["tp0", "tp1", "tp2"], "b": ["tp3", "tp4", "tp5"], "c": ["tp6", "tp7"], "d": ["tp8", "tp9"]}


def test_roundrobin_kafka_examples():
    subs = {"C0": ["t0", "t1"], "C1": ["t0", "t1"]}
    assert names(roundrobin_assignor(subs, {"t0": 3, "t1": 3})) == {
        "C0": ["t0p0", "t0p2", "t1p1"], "C1": ["t0p1", "t1p0", "t1p2"]}
    subs = {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]}
    assert names(roundrobin_assignor(subs, {"t0": 1, "t1": 2, "t2": 3})) == {
        "C0": ["t0p0"], "C1": ["t1p0"], "C2": ["t1p1", "t2p0", "t2p1", "t2p2"]}


@given(st.dictionaries(st.sampled_from("abcdefg"), st.sets(st.sampled_from(["x", "y", "z"]), min_size=1),
                       min_size=1),
       st.dictionaries(st.sampled_from(["x", "y", "z"]), st.integers(1, 40), min_size=1))
def test_every_subscribed_partition_has_exactly_one_owner(subs, counts):
    subs = {m: sorted(t) for m, t in subs.items()}
    for assignor in (range_assignor, roundrobin_assignor):
        assignment = assignor(subs, counts)
        owned = [tp for tps in assignment.values() for tp in tps]
        wanted = [(t, p) for t in counts if any(t in s for s in subs.values()) for p in range(counts[t])]
        assert sorted(owned) == sorted(wanted)
        for member, tps in assignment.items():
            assert all(t in subs[member] for t, _ in tps)
    for topic, count in counts.items():  # range: per topic, sizes differ by at most one
        sizes = [sum(1 for t, _ in tps if t == topic) for m, tps in range_assignor(subs, counts).items()
                 if topic in subs[m]]
        if sizes:
            assert max(sizes) - min(sizes) <= 1 and sum(sizes) == count

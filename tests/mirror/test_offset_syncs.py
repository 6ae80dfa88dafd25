"""Offset syncs and the translation of a group offset, against an oracle of where each record went.

A model: a source partition whose offsets have gaps (markers, aborted and compacted records),
copied in order to a target partition with gaps of its own (the mirror's markers, another
writer's records). The oracle of a group offset g: a consumer of the target starting at the
translation reads every copied record at or after g and none before it, i.e. the translation
lies above the target offset of the last copied record below g and at or below that of the
first copied record at or after g (the end of the copy when there is none).
"""

from __future__ import annotations

import random

import pytest

from kstream.mirror.errors import MirrorError
from kstream.mirror.offset_syncs import CLAMPED, IDENTITY, NOT_TRANSLATED, TRANSLATED, OffsetSync, build_trails


def copy(rng: random.Random, count: int, gap_rate: float) -> tuple[list[int], list[int], int, int]:
    """``count`` copied records: their source and target offsets (gaps on both sides), the
    source position after the last one (maybe past trailing markers) and the target end."""
    sources, targets = [], []
    s = rng.randrange(0, 3)
    t = rng.randrange(0, 3)
    for _ in range(count):
        s += rng.randrange(1, 4) if rng.random() < gap_rate else 1
        t += rng.randrange(1, 4) if rng.random() < gap_rate else 1
        sources.append(s)
        targets.append(t)
    return sources, targets, sources[-1] + 1 + rng.randrange(0, 2), targets[-1] + 1


def oracle(sources: list[int], targets: list[int], target_end: int, g: int) -> int | None:
    """The highest right translation of g (the first copied record at or after it)."""
    if g < sources[0]:
        return None
    return next((t for s, t in zip(sources, targets, strict=True) if s >= g), target_end)


def lowest(sources: list[int], targets: list[int], g: int) -> int:
    """The lowest right translation of g: just above the last copied record before it."""
    return max((t + 1 for s, t in zip(sources, targets, strict=True) if s < g), default=0)


def delta_syncs(sources: list[int], targets: list[int]) -> list[OffsetSync]:
    """Into kstream's rule: a sync when source - target changes (the first record included)."""
    out, last = [], None
    for s, t in zip(sources, targets, strict=True):
        if s - t != last:
            out.append(OffsetSync("t", 0, s, t))
            last = s - t
    return out


@pytest.mark.parametrize("seed", range(40))
def test_translation_with_a_sync_at_each_change_of_translation_reads_exactly_the_rest(seed):
    rng = random.Random(seed)
    sources, targets, copied_to, target_end = copy(rng, rng.randrange(1, 60), rng.choice([0.0, 0.1, 0.5]))
    trail = build_trails({("t", 0): (copied_to, target_end)}, delta_syncs(sources, targets))[("t", 0)]
    for g in range(0, copied_to + 5):
        got = trail.translate("t", 0, g)
        if g < sources[0]:
            assert got.target_offset is None
        else:
            assert lowest(sources, targets, g) <= got.target_offset <= oracle(sources, targets, target_end, g), \
                (g, got)
        if g < sources[0]:
            assert got.how == NOT_TRANSLATED and "no offset sync at or below" in got.note
        elif g > copied_to:
            assert got.how == CLAMPED and str(copied_to) in got.note


@pytest.mark.parametrize("seed", range(40))
def test_into_kafka_syncs_read_exactly_the_rest_and_never_skip_with_another_writer(seed):
    """Into Kafka: syncs at the run's first record, after each source gap and at each batch's
    last record; the target's offsets are contiguous unless another writer interleaves."""
    rng = random.Random(seed)
    other_writer = seed % 2 == 1
    sources, targets, copied_to, _ = copy(rng, rng.randrange(1, 60), 0.2)
    targets = list(range(len(sources)))
    if other_writer:
        for i in range(1, len(targets)):
            targets[i] = targets[i - 1] + 1 + (rng.randrange(1, 3) if rng.random() < 0.3 else 0)
    syncs = [OffsetSync("t", 0, s, t) for i, (s, t) in enumerate(zip(sources, targets, strict=True))
             if i == 0 or s != sources[i - 1] + 1 or rng.random() < 0.1 or i == len(sources) - 1]
    trail = build_trails({("t", 0): (copied_to, None)}, syncs)[("t", 0)]
    assert trail.target_end == targets[-1] + 1
    for g in range(sources[0], copied_to + 1):
        got = trail.translate("t", 0, g).target_offset
        right = oracle(sources, targets, targets[-1] + 1, g)
        assert got <= right, (g, got, right)  # never a skip
        if not other_writer:
            assert got >= lowest(sources, targets, g), (g, got)  # and no re-read


def test_a_resent_tail_starts_a_new_trail_and_syncs_past_the_committed_position_are_ignored():
    # copy 1 sent source 0..9 to target 0..9 and was killed before its commit of 5..9; the rerun
    # sent 5..9 again to 10..14 (duplicates on the target), and a chunk not committed yet 15..
    syncs = [OffsetSync("t", 0, 0, 0), OffsetSync("t", 0, 4, 4), OffsetSync("t", 0, 5, 5), OffsetSync("t", 0, 9, 9),
             OffsetSync("t", 0, 5, 10), OffsetSync("t", 0, 9, 14), OffsetSync("t", 0, 10, 15)]
    trail = build_trails({("t", 0): (10, None)}, syncs)[("t", 0)]
    assert (trail.sources, trail.targets, trail.target_end) == ([0, 4, 5, 9], [0, 4, 10, 14], 15)
    assert [trail.translate("t", 0, g).target_offset for g in (3, 5, 7, 10)] == [3, 10, 12, 15]


def test_identity_is_said_when_every_sync_keeps_the_offset():
    trail = build_trails({("t", 0): (10, 10)}, [OffsetSync("t", 0, 0, 0)])[("t", 0)]
    assert trail.translate("t", 0, 4).how == IDENTITY
    moved = build_trails({("t", 0): (10, 11)}, [OffsetSync("t", 0, 0, 0), OffsetSync("t", 0, 5, 6)])[("t", 0)]
    assert (moved.translate("t", 0, 4).how, moved.translate("t", 0, 5).target_offset) == (TRANSLATED, 6)


def test_a_sync_that_is_not_one_is_an_error_naming_where():
    with pytest.raises(MirrorError, match="syncs offset 3: .* is not an offset sync"):
        OffsetSync.from_json(b'{"topic": "t"}', "syncs offset 3")
    assert OffsetSync.from_json(OffsetSync("a", 1, 2, 3).to_json(), "x") == OffsetSync("a", 1, 2, 3)


@pytest.mark.parametrize("doc", [
    b'{"topic": "t", "partition": 0, "source_offset": 2.9, "target_offset": 3}',  # was cut to 2
    b'{"topic": "t", "partition": "1", "source_offset": 2, "target_offset": 3}',  # was read as 1
    b'{"topic": "t", "partition": 0, "source_offset": true, "target_offset": 3}',  # was read as 1
    b'{"topic": 7, "partition": 0, "source_offset": 2, "target_offset": 3}',  # was read as "7"
    b'[1, 2]'])
def test_a_sync_of_other_json_types_is_refused_not_coerced(doc):
    """An offset sync is translated as written: a float, a string or a bool taken for an offset
    moved a group's translated offset without a word."""
    with pytest.raises(MirrorError, match="syncs offset 3: .* is not an offset sync"):
        OffsetSync.from_json(doc, "syncs offset 3")


def test_a_huge_bad_sync_is_named_in_a_bounded_message():
    with pytest.raises(MirrorError) as raised:
        OffsetSync.from_json(b'{"topic": "' + b"x" * 100_000 + b'"}', "syncs offset 3")
    assert len(str(raised.value)) < 1_000


@pytest.mark.parametrize("metadata", ['{"source_offset": true}', '{"source_offset": 1.0}', '{"source_offset": -1}'])
def test_a_mirror_position_of_another_json_type_is_refused(metadata):
    from kstream.mirror.into_kstream import source_position

    with pytest.raises(MirrorError, match="bad source_offset"):
        source_position(metadata)
    assert source_position('{"source_offset": 7}') == 7

"""The mirror's chaos checks find what they look for (no broker needed): a clean copy passes; a
lost, duplicated, aborted, reordered or foreign record, a translated offset past the copy or
below it (into kstream), and an identity that is not one are found; into Kafka a re-sent record
and a re-read are counted, not failed."""

from __future__ import annotations

import pytest

from chaos.checker import History, check
from chaos.mirror_checker import Copy, check_copy, check_translation

SOURCE = {0: [(0, b"a"), (1, b"b"), (3, b"c")], 1: [(0, b"d"), (2, b"e")]}  # gaps: Kafka's markers
ACKED = {b"a": (0, 0), b"b": (0, 1), b"c": (0, 3), b"d": (1, 0), b"e": (1, 2)}
TARGET = {0: [(0, b"a"), (1, b"b"), (2, b"c")], 1: [(0, b"d"), (1, b"e")]}


def verdict(target, exactly_once=True, rows=(), aborted=frozenset()):
    h = History()
    copy = Copy("t", exactly_once, SOURCE, target, acked=dict(ACKED), aborted=set(aborted))
    check_copy(copy, h)
    check_translation(copy, list(rows), h)
    return check(h), h


def test_a_clean_copy_and_a_translation_that_lands_on_the_next_unread_record_pass():
    v, _ = verdict(TARGET, rows=[(0, 2, 2, "translated"), (0, 3, 2, "translated"), (1, 1, 1, "translated")])
    assert v.ok and v.acknowledged == 5, v.problems


@pytest.mark.parametrize(("target", "what"), [
    ({0: [(0, b"a"), (2, b"c")], 1: TARGET[1]}, "lost"),
    ({0: [*TARGET[0], (3, b"c")], 1: TARGET[1]}, "duplicated"),
    ({0: [(0, b"a"), (1, b"c"), (2, b"b")], 1: TARGET[1]}, "source's order"),
    ({0: [*TARGET[0], (3, b"x")], 1: TARGET[1]}, "aborted record"),
    ({0: [*TARGET[0], (3, b"d")], 1: TARGET[1][1:]}, "record of partition 1"),
])
def test_a_broken_copy_into_kstream_is_found(target, what):
    v, _ = verdict(target, aborted={b"x"})
    assert not v.ok
    assert (v.lost if what == "lost" else v.duplicated if what == "duplicated" else 0) or \
        any(what in problem for problem in v.problems), v.problems


def test_a_translation_past_the_copy_or_below_it_into_kstream_or_a_false_identity_is_found():
    v, _ = verdict(TARGET, rows=[(0, 2, 3, "translated")])  # past the copy of c (source 3 >= 2)
    assert any("past every copy" in p for p in v.problems), v.problems
    v, _ = verdict(TARGET, rows=[(0, 2, 1, "translated")])  # b (source 1, read) at 1: read again
    assert any("read again" in p for p in v.problems), v.problems
    v, _ = verdict(TARGET, rows=[(0, 1, 1, "identity")])  # c is at 2, not 3
    assert any("identity" in p for p in v.problems), v.problems


def test_into_kafka_a_resent_record_and_a_reread_are_counted_not_failed():
    target = {0: [*TARGET[0][:2], (2, b"b"), (3, b"c")], 1: TARGET[1]}
    v, h = verdict(target, exactly_once=False, rows=[(0, 2, 2, "translated")])
    assert v.ok, v.problems
    assert (h.resent, h.reread) == (1, 1)
    v, _ = verdict({0: TARGET[0][:2], 1: TARGET[1]}, exactly_once=False)
    assert v.lost == 1


def test_into_kafka_a_translation_past_the_first_copy_of_a_resent_record_but_not_its_second_passes():
    """A killed run sent b and c, the rerun sent them again from b: a group that read a only
    translates past the first copies, onto the rerun's; it skips nothing (seeds 10 and 15 of
    mirror_sigkill_out, which the first checker failed)."""
    target = {0: [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"b"), (4, b"c")], 1: TARGET[1]}
    v, _ = verdict(target, exactly_once=False, rows=[(0, 1, 3, "translated")])
    assert v.ok, v.problems
    v, _ = verdict(target, exactly_once=False, rows=[(0, 1, 4, "translated")])  # past b's last copy
    assert any("past every copy of source offset 1" in p for p in v.problems), v.problems

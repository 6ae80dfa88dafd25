"""A Jepsen-style check of one round's history against kstream's promises.

The history is what the clients were told and what readers saw; the checker
trusts nothing else. Invariants (each violation is counted or named):

* every acknowledged record (acks=all, or a committed transaction's) is
  present exactly once, at the offset its acknowledgement gave, with its value;
* offsets are contiguous: each frame starts where the previous one ended;
* no read_committed reader, during the round or after it, sees a record of an
  aborted transaction, a record a transaction never committed, or a record
  that later vanished (a phantom);
* a transaction is all or nothing for read_committed readers;
* exactly-once output is the input multiset;
* group offsets and the high watermark never go backwards, and the high
  watermark covers every acknowledged record; every record below a group's
  final committed offset was delivered to some member (at-least-once);
* in-sync replicas agree frame by frame up to the high watermark;
* no partition is left with an open transaction holding its LSO after every
  producer is gone and ``transaction.timeout.ms`` has passed (stuck LSO).

Values are unique within a round by construction, so a value names a record.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

TP = tuple[str, int]


@dataclass(frozen=True)
class Ack:
    topic: str
    partition: int
    offset: int
    value: bytes


@dataclass
class History:
    acked: list[Ack] = field(default_factory=list)
    # Transactions: values of each, and how each ended for its producer.
    committed_txns: list[list[bytes]] = field(default_factory=list)
    aborted_txns: list[list[bytes]] = field(default_factory=list)
    unknown_txns: list[list[bytes]] = field(default_factory=list)  # writer died before the outcome
    # read_committed records seen during the round: (topic, partition, offset, value).
    reads: list[tuple[str, int, int, bytes]] = field(default_factory=list)
    # Final reads after the round (read_committed, and read_uncommitted for offsets).
    final: dict[TP, list[tuple[int, bytes]]] = field(default_factory=dict)
    final_uncommitted: dict[TP, list[tuple[int, bytes]]] = field(default_factory=dict)
    read_errors: dict[TP, str] = field(default_factory=dict)
    frames: dict[TP, list[tuple[int, int]]] = field(default_factory=dict)  # (base, next) per frame
    hw_samples: dict[TP, list[int]] = field(default_factory=dict)
    final_hw: dict[TP, int | None] = field(default_factory=dict)
    group_offsets: dict[tuple[str, str, int], list[int]] = field(default_factory=dict)
    eos_input: list[bytes] | None = None
    eos_output: list[bytes] | None = None
    replica_mismatches: list[str] = field(default_factory=list)
    open_lso: dict[TP, int] = field(default_factory=dict)
    wrong_reads: list[str] = field(default_factory=list)  # a reader handed out the wrong record
    write_errors: list[str] = field(default_factory=list)  # writes that must have succeeded
    # Acknowledged records a fresh reader could not see before the next write (lost to readers).
    invisible: list[str] = field(default_factory=list)
    # At-least-once: records below a group's final committed offset no member was handed.
    undelivered: list[str] = field(default_factory=list)
    # What a round saw break itself: a group not rebalanced in time, a fenced writer's write landing.
    round_problems: list[str] = field(default_factory=list)
    # Log-cleaner rounds: their writes and keyed reads (a compaction_checker.KeyedHistory), checked
    # by key (latest values survive) instead of record by record.
    keyed: Any = None
    # Mirror into Kafka (at least once, docs/MIRROR.md): records sent twice, and records a group
    # translated across the mirror reads again. Counted and reported, never a failure.
    resent: int = 0
    reread: int = 0


@dataclass
class Verdict:
    acknowledged: int = 0
    lost: int = 0
    duplicated: int = 0
    phantom: int = 0
    stuck_lso: int = 0
    resent: int = 0  # at least once: allowed, reported (History.resent)
    reread: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.phantom or self.stuck_lso or self.problems)

    def note(self, problem: str) -> None:
        if len(self.problems) < 20:
            self.problems.append(problem)


def check(h: History) -> Verdict:
    v = Verdict(acknowledged=len(h.acked) + sum(len(t) for t in h.committed_txns) + len(h.eos_input or ()),
                resent=h.resent, reread=h.reread)
    seen = {tp: dict(records) for tp, records in h.final.items()}
    where = {value: (tp, offset) for tp, records in h.final.items() for offset, value in records}
    for error in h.write_errors:
        v.note(error)
    v.lost += len(h.invisible)
    v.lost += len(h.undelivered)
    if h.undelivered:
        v.note(f"{len(h.undelivered)} records below the group's committed offset were never delivered, "
               f"e.g. {h.undelivered[0]}")
    for problem in h.round_problems:
        v.note(problem)
    if h.invisible:
        v.note(f"{len(h.invisible)} acknowledged records invisible until the next write, e.g. {h.invisible[0]}")
    for tp, error in sorted(h.read_errors.items()):
        v.note(f"{tp[0]}-{tp[1]}: read failed: {error}")
    for ack in h.acked:
        tp = (ack.topic, ack.partition)
        if seen.get(tp, {}).get(ack.offset) != ack.value:
            v.lost += 1
            found = where.get(ack.value)
            v.note(f"acknowledged {ack.value!r} at {tp[0]}-{tp[1]}@{ack.offset} "
                   + (f"found at {found}" if found else "missing"))
    # Duplicates: any value stored twice (in what read_committed and read_uncommitted see).
    for name, view in (("read_committed", h.final), ("read_uncommitted", h.final_uncommitted)):
        counts = Counter(value for records in view.values() for _, value in records)
        dups = {value: n for value, n in counts.items() if n > 1}
        if dups and name == "read_committed":
            v.duplicated += sum(n - 1 for n in dups.values())
        for value in list(dups)[:3]:
            v.note(f"{value!r} stored {dups[value]} times ({name})")
    # Offsets contiguous, frame by frame.
    for tp, frames in sorted(h.frames.items()):
        for (_, end), (base, _) in pairwise(frames):
            if base != end:
                v.note(f"{tp[0]}-{tp[1]}: frame at {base} follows one ending at {end}")
                break
    _check_transactions(h, v, where)
    _all_or_nothing(h, v, where)
    # Phantoms: what a read_committed reader saw must still be there, at the same offset.
    for topic, partition, offset, value in h.reads:
        if seen.get((topic, partition), {}).get(offset) != value and (topic, partition) not in h.read_errors:
            v.phantom += 1
            v.note(f"a reader saw {value!r} at {topic}-{partition}@{offset}; it is gone now")
    v.phantom += len(h.wrong_reads)
    for wrong in h.wrong_reads[:3]:
        v.note(f"read the wrong record silently: {wrong}")
    _check_monotonic(h, v)
    if h.eos_input is not None and h.eos_output is not None:
        want, got = Counter(h.eos_input), Counter(h.eos_output)
        v.lost += sum((want - got).values())
        v.duplicated += sum((got - want).values())
    for mismatch in h.replica_mismatches:
        v.note(f"in-sync replicas differ: {mismatch}")
    v.stuck_lso = len(h.open_lso)
    for tp, offset in sorted(h.open_lso.items()):
        v.note(f"{tp[0]}-{tp[1]}: LSO stuck at {offset} by an open transaction after every producer left")
    if h.keyed is not None:
        h.keyed.check(v)
    return v


def _check_transactions(h: History, v: Verdict, where: dict[bytes, tuple[TP, int]]) -> None:
    read_values = {value for *_, value in h.reads}
    for values in h.committed_txns:
        missing = [x for x in values if x not in where]
        if missing:
            v.lost += len(missing)
            v.note(f"committed transaction lost {len(missing)} of {len(values)} records, e.g. {missing[0]!r}")
    for values in h.aborted_txns:
        visible = [x for x in values if x in where or x in read_values]
        if visible:
            v.phantom += len(visible)
            v.note(f"aborted transaction: read_committed saw {len(visible)} of {len(values)} records, "
                   f"e.g. {visible[0]!r}")


def _all_or_nothing(h: History, v: Verdict, where: dict[bytes, tuple[TP, int]]) -> None:
    for values in h.unknown_txns:
        visible = [x for x in values if x in where]
        if visible and len(visible) != len(values):
            v.phantom += len(visible)
            v.note(f"transaction of a dead writer half visible: {len(visible)} of {len(values)}")


def _check_monotonic(h: History, v: Verdict) -> None:
    for tp, samples in sorted(h.hw_samples.items()):
        for a, b in pairwise(samples):
            if b < a:
                v.note(f"{tp[0]}-{tp[1]}: high watermark went back from {a} to {b}")
                break
    ends: dict[TP, int] = {}
    for ack in h.acked:
        tp = (ack.topic, ack.partition)
        ends[tp] = max(ends.get(tp, 0), ack.offset + 1)
    for tp, end in sorted(ends.items()):
        hw = h.final_hw.get(tp, end)
        if hw is None or hw < end:
            v.note(f"{tp[0]}-{tp[1]}: high watermark {hw} below acknowledged end {end}")
    for key, offsets in sorted(h.group_offsets.items()):
        for a, b in pairwise(offsets):
            if b < a:
                v.note(f"group {key[0]} {key[1]}-{key[2]}: committed offset went back from {a} to {b}")
                break

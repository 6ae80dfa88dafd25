"""The mirror's invariants (issue 23), checked on what the sides hold after a chaos round.

A round (tests/chaos/mirror_rounds.py) gives :func:`check_copy` the source's records (read
back from the source, read_committed, and every acknowledged write among them at its offset),
the aborted writes, and what the target holds (read_committed); and :func:`check_translation`
a group's translated offsets with the target's records. Values are unique within a round, so
a value names a record. Problems go into the round's :class:`chaos.checker.History`:

* every source record is in the target partition of the same number, in source order
  (``eos_input`` / ``eos_output``: the checker counts what is lost);
* into kstream (exactly once): none twice; into Kafka (at least once): records sent twice are
  counted (``History.resent``), never a failure, but the first copies keep the source order;
* nothing the source does not hold committed: no aborted record, no record nobody wrote;
* a translated group offset ``t`` for a source offset ``g``: every record at or past ``g`` (one
  the group had not read) has a copy at or past ``t`` (never past what was copied, nothing
  skipped; into Kafka a record sent twice may have its first copy below ``t``); into kstream,
  no copy of a record below ``g`` lies at or past ``t`` (none read again); ``identity``:
  ``t == g`` and every copy of the partition at its source offset.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chaos.checker import History

Records = dict[int, list[tuple[int, bytes]]]
"""partition -> [(offset, value)] in offset order."""


@dataclass
class Copy:
    """One mirrored topic after a round: both sides and what the writers were told."""

    topic: str
    exactly_once: bool
    source: Records
    target: Records
    acked: dict[bytes, tuple[int, int]] = field(default_factory=dict)  # value -> (partition, offset)
    aborted: set[bytes] = field(default_factory=set)


def check_copy(copy: Copy, h: History, label: str = "") -> None:
    where = {value: (p, offset) for p, records in copy.source.items() for offset, value in records}
    for value, (p, offset) in sorted(copy.acked.items()):
        if where.get(value) != (p, offset):
            h.round_problems.append(f"{label}the source lost an acknowledged write: {value!r} at "
                                    f"{copy.topic}-{p}@{offset} reads back as {where.get(value)}")
            break
    h.eos_input = [*(h.eos_input or []), *(value for records in copy.source.values() for _, value in records)]
    got: list[bytes] = []
    for p in sorted(set(copy.source) | set(copy.target)):
        target = copy.target.get(p, [])
        foreign = [(o, v) for o, v in target if v not in where or where[v][0] != p]
        for offset, value in foreign[:3]:
            kind = "an aborted record" if value in copy.aborted else \
                f"a record of partition {where[value][0]}" if value in where else "a record nobody wrote"
            h.round_problems.append(f"{label}{copy.topic}-{p}@{offset} in the target holds {value!r}: {kind}")
        values = [v for _, v in target if v in where and where[v][0] == p]
        first = list(dict.fromkeys(values))
        if not copy.exactly_once:
            h.resent += len(values) - len(first)
            values = first
        got.extend(values)
        source_order = [v for _, v in copy.source.get(p, [])]
        copied = set(first)
        if first != [v for v in source_order if v in copied]:
            h.round_problems.append(f"{label}{copy.topic}-{p}: the target's records are not in the source's order")
    h.eos_output = [*(h.eos_output or []), *got]


def check_translation(copy: Copy, rows: list[tuple[int, int, int | None, str]], h: History,
                      label: str = "") -> None:
    """``rows``: (partition, group offset g on the source, translated offset t or None, how)."""
    where = {value: offset for records in copy.source.values() for offset, value in records}
    for p, g, t, how in rows:
        if t is None:
            continue
        pairs = [(o, where[v]) for o, v in copy.target.get(p, []) if v in where]  # (target, source)
        last: dict[int, int] = {}  # source offset -> its last copy (into Kafka a record may be sent twice)
        for o, s in pairs:
            last[s] = max(o, last.get(s, o))
        skipped = sorted((o, s) for s, o in last.items() if o < t and s >= g)  # no copy from t up
        if skipped:
            h.round_problems.append(f"{label}{copy.topic}-{p}: group offset {g} translated to {t}, past every copy "
                                    f"of source offset {skipped[0][1]} (the last at {skipped[0][0]}; the group never "
                                    f"read it): {len(skipped)} records skipped")
        again = [(o, s) for o, s in pairs if o >= t and s < g]
        if again and copy.exactly_once:
            h.round_problems.append(f"{label}{copy.topic}-{p}: group offset {g} translated to {t}, below the copy "
                                    f"of source offset {again[0][1]} at {again[0][0]} (the group read it): "
                                    f"{len(again)} records read again")
        h.reread += len(again) if not copy.exactly_once else 0
        if how == "identity":
            moved = [(o, s) for o, s in pairs if o != s]
            if t != g or moved:
                h.round_problems.append(f"{label}{copy.topic}-{p}: translation says identity, but {g} -> {t}"
                                        + (f" and source offset {moved[0][1]} is at {moved[0][0]}" if moved else ""))

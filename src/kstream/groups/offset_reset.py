"""Resetting a group's offsets: scope, method and plan, as kafka-consumer-groups resets them.

A plan maps (topic, partition) to the new committed offset, clamped to what the
log holds (log start offset .. high watermark). Methods: ``to-earliest``,
``to-latest``, ``to-current``, ``to-offset N``, ``shift-by N``,
``to-datetime ISO``, ``by-duration PnDTnHnMnS`` (now minus the duration) and
``from-file CSV``. The CSV is what ``--export`` prints and Kafka's tool
writes: ``topic,partition,offset`` lines, or ``group,topic,partition,offset``
when several groups are reset at once; no header (a ``#`` line is skipped).

``kstream groups reset-offsets`` and the console's reset page call these same
functions. Offsets for a time come from the client layer, above this one: the
caller hands :func:`plan` an ``offsets_at`` callable (a Consumer's
``offsets_for_times``, :func:`kstream.client.offsets_at.offsets_at`).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from kstream.errors import ConfigError

if TYPE_CHECKING:
    from kstream.groups.service import ConsumerGroups

METHODS = ("to-earliest", "to-latest", "to-current", "to-offset", "shift-by", "to-datetime", "by-duration",
           "from-file")
_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", re.IGNORECASE)

Plan = dict[tuple[str, int], int]
OffsetsAt = Callable[[list[tuple[str, int]], int], dict[tuple[str, int], int]]
"""``(partitions, timestamp_ms) -> {partition: offset}``: the first offset at or after the
time, or a negative one where there is none (a Consumer's ``offsets_for_times``)."""
NO_PARTITIONS = "say which partitions to reset: --topic T[:P,...] or --all-topics"


def parse_duration(text: str) -> dt.timedelta:
    """An ISO-8601 duration as Kafka's --by-duration takes it: ``PnDTnHnMnS`` (e.g. PT10M, P1DT2H)."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or not any(match.groups()) or text.strip().upper().endswith("T"):
        raise ConfigError(f"--by-duration {text!r} is not a duration like P1DT2H30M or PT10M (PnDTnHnMnS)")
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    return dt.timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)


def read_csv(path: str, group: str) -> Plan:
    """``group``'s rows of a reset CSV (3 columns: any group; 4 columns: the group's rows)."""
    plan: Plan = {}
    with open(path, newline="") as f:
        for number, row in enumerate(csv.reader(f), 1):
            if not row or row[0].lstrip().startswith("#"):
                continue
            try:
                if len(row) == 4:
                    if row[0].strip() != group:
                        continue
                    row = row[1:]
                if len(row) != 3:
                    raise ValueError(f"{len(row)} columns")
                plan[(row[0].strip(), int(row[1]))] = int(row[2])
            except ValueError as err:
                raise ConfigError(f"{path} line {number}: expected topic,partition,offset or "
                                  f"group,topic,partition,offset ({err})") from err
    return plan


def write_csv(plans: Mapping[str, Plan]) -> str:
    """The CSV Kafka's --export prints: one group without a group column, several with it."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for group, plan in plans.items():
        for (topic, partition), offset in sorted(plan.items()):
            writer.writerow([topic, partition, offset] if len(plans) == 1 else [group, topic, partition, offset])
    return out.getvalue()


def scope(service: ConsumerGroups, group: str, topics: Iterable[str], all_topics: bool) -> list[tuple[str, int]]:
    """`--topic t` (every partition) or `--topic t:0,2`, or the topics the group committed."""
    if all_topics:
        return sorted(service.committed(group, require_stable=False))
    result = []
    for spec in topics:
        name, _, parts = spec.partition(":")
        count = service.cluster.topic(name).num_partitions
        chosen = [int(p) for p in parts.split(",")] if parts else list(range(count))
        for p in chosen:
            if not 0 <= p < count:
                raise ConfigError(f"topic {name!r} has partitions 0..{count - 1}; {p} does not exist")
        result += [(name, p) for p in chosen]
    if not result and not all_topics:
        raise ConfigError(NO_PARTITIONS)
    return sorted(set(result))


def plan(service: ConsumerGroups, group: str, keys: list[tuple[str, int]], method: str, value: str | None,
         offsets_at: OffsetsAt) -> Plan:
    """The new offsets of ``keys`` (for from-file: of the file's rows) by ``method``
    (``offsets_at``: for to-datetime and by-duration)."""
    committed = service.committed(group, require_stable=False)
    given: Plan = {}
    if method == "from-file":
        assert value is not None
        given = read_csv(value, group)
        keys = sorted(given)
    timestamps: dict[tuple[str, int], int] = {}
    if method in ("to-datetime", "by-duration"):
        assert value is not None
        if method == "by-duration":
            when = dt.datetime.now(dt.UTC) - parse_duration(value)
        else:
            when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            if when.tzinfo is None:
                when = when.replace(tzinfo=dt.UTC)
        timestamps = offsets_at(keys, int(when.timestamp() * 1000))
    result: Plan = {}
    for key in keys:
        start, hw, _ = service.ends(*key)
        current = committed.get(key)
        if method == "to-earliest":
            target = start
        elif method == "to-latest":
            target = hw
        elif method == "to-current":
            target = current.offset if current else hw
        elif method in ("to-datetime", "by-duration"):
            target = hw if timestamps[key] < 0 else timestamps[key]
        elif method == "shift-by":
            target = (current.offset if current else start) + int(value or 0)
        elif method == "to-offset":
            target = int(value or 0)
        else:
            target = given[key]
        result[key] = max(start, min(target, hw))
    return result

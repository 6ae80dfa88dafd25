"""Offset syncs: where a mirror put each source record, and a group offset translated with them.

The contract (MM2's OffsetSync and OffsetSyncStore, made exact where kstream knows more):
a sync ``(source_offset s, target_offset t)`` of a partition says the source record at
``s`` was copied to the target offset ``t``. A mirror writes one

- for the first record of each partition it copies in a run,
- whenever a partition's translation ``s - t`` changes (a gap on one side that the other
  has not: Kafka's or kstream's transaction markers, aborted or compacted records),
- (into Kafka) for the last record of each batch it sends,

so between two syncs of a partition the copied records keep the first one's ``s - t``.
The mirror's committed position of the partition closes the trail: every source record
below ``copied_to`` was copied, and the copy ends at target offset ``target_end``.

A committed group offset ``g`` (the next record the group reads) translates to
``min(t + (g - s), t_next)`` with ``(s, t)`` the last sync at or below ``g`` and ``t_next``
the next sync's target offset (or ``target_end``): exact when the mirror is the only writer
of the target partition (a record between two syncs sits at ``t + (its s - s)``; an offset
in a source gap lands in the target's gap before the next copied record), and never past
the target copy of any record at or after ``g`` otherwise (another writer only moves the
copies further up). ``g`` at or past ``copied_to`` is the end of what was copied:
``target_end`` ("clamped" when ``g`` is past it: the group read records not copied yet, so
the target group re-reads them once they are). ``g`` below the first sync is not
translated: nothing says where it is on the target.

A sync whose source offset is at or above an earlier one of its partition starts a new
trail from there (a mirror into Kafka, killed before its commit, sent those records again:
the newer copy is the one the rest follows), so the older syncs from that offset up are
dropped. Syncs of offsets at or past ``copied_to`` are ignored (written by a chunk not
committed yet, or not at all).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from kstream.mirror.errors import MirrorError

IDENTITY = "identity"
TRANSLATED = "translated"
CLAMPED = "clamped"
NOT_TRANSLATED = "not translated"


@dataclass(frozen=True)
class OffsetSync:
    """The source record at ``source_offset`` of ``topic[partition]`` sits at ``target_offset``."""

    topic: str
    partition: int
    source_offset: int
    target_offset: int

    def to_json(self) -> bytes:
        return json.dumps({"topic": self.topic, "partition": self.partition, "source_offset": self.source_offset,
                           "target_offset": self.target_offset}, sort_keys=True).encode()

    @staticmethod
    def from_json(value: bytes | None, where: str) -> OffsetSync:
        """The sync in ``value``: a JSON object of a string ``topic`` and integers ``partition``,
        ``source_offset``, ``target_offset`` (>= 0), taken as written: another type (a float, a
        numeric string, a bool) is a MirrorError, never coerced into an offset."""
        shown = f"{value!r:.200}"
        try:
            d = json.loads(value or b"")
            if not isinstance(d, dict):
                raise TypeError(f"a JSON {type(d).__name__}, not an object")
            numbers = [d["partition"], d["source_offset"], d["target_offset"]]
            if not isinstance(d["topic"], str) or any(type(n) is not int for n in numbers):
                raise TypeError("topic is not a string or an offset or partition not an integer")
            sync = OffsetSync(d["topic"], *numbers)
        except (ValueError, KeyError, TypeError, RecursionError) as err:
            raise MirrorError(f"{where}: {shown} is not an offset sync (JSON with topic, partition, "
                              f"source_offset, target_offset: {err}); was the topic written by something other "
                              "than the mirror?") from err
        if sync.source_offset < 0 or sync.target_offset < 0 or sync.partition < 0:
            raise MirrorError(f"{where}: offset sync {shown} has a negative offset or partition")
        return sync


@dataclass(frozen=True)
class Translation:
    """One partition's group offset on the source, and where it is on the target.

    ``target_offset`` is None when not translated; ``how`` is one of identity, translated,
    clamped, not translated; ``note`` says why when it is not plain."""

    topic: str
    partition: int
    source_offset: int
    target_offset: int | None
    how: str
    note: str = ""


@dataclass
class SyncTrail:
    """One partition's syncs in source-offset order, closed by the mirror's committed position."""

    copied_to: int
    """Every source record below this offset was copied (the mirror's committed source position)."""
    target_end: int
    """The target offset after the last record copied below ``copied_to``."""
    sources: list[int] = field(default_factory=list)
    targets: list[int] = field(default_factory=list)

    def add(self, source_offset: int, target_offset: int) -> None:
        """A sync, in the order the mirror wrote it (see the module's rule on a source offset
        going back)."""
        if source_offset >= self.copied_to:
            return
        cut = bisect.bisect_left(self.sources, source_offset)
        del self.sources[cut:], self.targets[cut:]
        self.sources.append(source_offset)
        self.targets.append(target_offset)

    def is_identity(self) -> bool:
        return (bool(self.sources) and self.copied_to == self.target_end
                and all(s == t for s, t in zip(self.sources, self.targets, strict=True)))

    def translate(self, topic: str, partition: int, group_offset: int) -> Translation:
        """``group_offset`` (the group's next source record) as a target offset (module rule)."""
        if not self.sources or group_offset < self.sources[0]:
            first = f"the first record copied is at {self.sources[0]}" if self.sources else "no record was copied"
            return Translation(topic, partition, group_offset, None, NOT_TRANSLATED,
                               f"no offset sync at or below {group_offset} ({first})")
        if group_offset >= self.copied_to:
            if group_offset > self.copied_to:
                return Translation(topic, partition, group_offset, self.target_end, CLAMPED,
                                   f"the group is past what was copied (source {self.copied_to}); it re-reads "
                                   f"source {self.copied_to}..{group_offset - 1} once they are copied")
            return Translation(topic, partition, group_offset, self.target_end,
                               IDENTITY if self.is_identity() else TRANSLATED)
        i = bisect.bisect_right(self.sources, group_offset) - 1
        limit = self.targets[i + 1] if i + 1 < len(self.sources) else self.target_end
        target = min(self.targets[i] + (group_offset - self.sources[i]), limit)
        return Translation(topic, partition, group_offset, target, IDENTITY if self.is_identity() else TRANSLATED)


def build_trails(positions: dict[tuple[str, int], tuple[int, int | None]], syncs: Iterable[OffsetSync]
                 ) -> dict[tuple[str, int], SyncTrail]:
    """Each mirrored partition's trail from the mirror's committed ``positions`` (``(copied_to,
    target_end)``; ``target_end`` None: the last sync below ``copied_to`` gives it, as its
    target + 1, for a mirror that writes a sync for the last record of each commit) and its
    ``syncs`` in the order written. Read the positions before the syncs: a sync at or past a
    position is ignored, so a commit made between the two reads cannot mix in."""
    trails = {tp: SyncTrail(copied_to, target_end if target_end is not None else -1)
              for tp, (copied_to, target_end) in positions.items()}
    for sync in syncs:
        trail = trails.get((sync.topic, sync.partition))
        if trail is not None:
            trail.add(sync.source_offset, sync.target_offset)
    for (topic, partition), (_, target_end) in positions.items():
        trail = trails[(topic, partition)]
        if target_end is None:
            trail.target_end = trail.targets[-1] + 1 if trail.targets else 0
    return trails

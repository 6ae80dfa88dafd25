"""A consumer group's committed offsets carried across a mirror (MM2's MirrorCheckpointTask, on demand).

``kstream mirror offsets --group G``: G's committed offsets on the mirror's source side
(Kafka: confluent-kafka's ``list_consumer_group_offsets``; kstream: its AdminClient) are
translated with the mirror's offset syncs and committed positions (offset_syncs.py: both
live in the kstream cluster, whichever side it is) into offsets of the target side, and
given as Spark ``startingOffsets`` JSON, as the CSV ``kafka-consumer-groups --reset-offsets
--from-file`` reads, or as a table. With ``apply`` they become G's committed offsets on the
target, as MM2's checkpoints do with ``sync.group.offsets.enabled``: only while G has no
active member there, and never moving a partition of G backwards (unless
``allow_backwards``: a target group ahead of the translation keeps its offset otherwise).

Read-only but for ``apply``; each call opens and closes its clients. Not thread-safe.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from kstream.mirror.endpoints import Endpoint
from kstream.mirror.errors import MirrorError
from kstream.mirror.into_kstream import source_position
from kstream.mirror.kafka_side import KafkaSide
from kstream.mirror.kafka_transactions import kstream_position
from kstream.mirror.kstream_side import KstreamSide
from kstream.mirror.offset_syncs import NOT_TRANSLATED, SyncTrail, Translation, build_trails
from kstream.mirror.options import MIRROR_PREFIX, MirrorOptions

NO_OFFSET = "no committed offset"
SPARK_EARLIEST = -2  # Spark's startingOffsets JSON: -2 earliest, -1 latest
MAX_SYNCS = 10_000_000


@dataclass(frozen=True)
class OffsetsRequest:
    """Translate ``group``'s offsets across the mirror ``name`` from ``source`` to ``target``."""

    source: Endpoint
    target: Endpoint
    name: str
    group: str
    timeout_s: float = 10.0
    max_syncs: int = MAX_SYNCS

    def __post_init__(self) -> None:
        # the same checks as a mirror's (one side Kafka, the other kstream; a legal name)
        MirrorOptions(self.source, self.target, self.name, pattern=".*", timeout_s=self.timeout_s)
        if self.group.startswith(MIRROR_PREFIX):
            raise MirrorError(f"--group {self.group!r} is a mirror's own group; give a consumer group of yours")

    @property
    def offset_syncs_topic(self) -> str:
        return f"{MIRROR_PREFIX}{self.name}.offset-syncs"


@dataclass
class OffsetsReport:
    """The translation of one group: a row per partition of each mirrored topic the group has
    offsets in (``how`` NO_OFFSET for a partition it has none in), and the topics it has
    offsets in that the mirror does not copy."""

    request: OffsetsRequest
    rows: list[Translation] = field(default_factory=list)
    not_mirrored: list[str] = field(default_factory=list)

    def translated(self) -> dict[tuple[str, int], int]:
        return {(r.topic, r.partition): r.target_offset for r in self.rows if r.target_offset is not None}

    def spark_json(self) -> str:
        """Spark's ``startingOffsets`` for the target topics: every partition (Spark asks for all),
        -2 (earliest: nothing skipped) where there is no translation."""
        out: dict[str, dict[str, int]] = {}
        for r in self.rows:
            offset = r.target_offset if r.target_offset is not None else SPARK_EARLIEST
            out.setdefault(r.topic, {})[str(r.partition)] = offset
        return json.dumps(out, sort_keys=True)

    def reset_csv(self) -> str:
        """``topic,partition,offset`` lines for ``kafka-consumer-groups --reset-offsets --from-file``
        (and ``kstream groups reset-offsets``): the translated partitions only."""
        return "".join(f"{r.topic},{r.partition},{r.target_offset}\n" for r in self.rows
                       if r.target_offset is not None)

    def notes(self) -> list[str]:
        """What a user must know: the partitions not translated, clamped, or without an offset."""
        out = [f"{r.topic}[{r.partition}] {r.how}: {r.note}" for r in self.rows if r.note]
        out += [f"topic {t!r}: the group has offsets in it, but mirror {self.request.name!r} copies nothing of it"
                for t in self.not_mirrored]
        return out


class OffsetTranslator:
    """Reads, translates and (with :meth:`apply`) writes one group's offsets across one mirror."""

    def __init__(self, request: OffsetsRequest):
        self.request = request
        kafka_end = request.source if request.source.is_kafka else request.target
        kstream_end = request.target if request.source.is_kafka else request.source
        self.into_kstream = request.source.is_kafka
        self.kafka = KafkaSide(kafka_end.address, request.timeout_s)
        self.kstream = KstreamSide(kstream_end.address, target=self.into_kstream)

    def close(self) -> None:
        self.kstream.close()

    def __enter__(self) -> OffsetTranslator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def source_group_offsets(self) -> dict[tuple[str, int], int]:
        group = self.request.group
        if self.into_kstream:
            return self.kafka.group_offsets(group)
        return {tp: offset for tp, (offset, _) in self.kstream.group_offsets(group).items()}

    def mirror_positions(self) -> dict[tuple[str, int], tuple[int, int | None]]:
        """The mirror's committed positions: (source offset copied to, target end or None).
        Into Kafka, a position an exactly-once mirror committed in Kafka (its group
        ``__mirror.NAME`` there) past the kstream one wins: killed between its Kafka commit and
        its kstream one, the chunk is in Kafka (and its syncs, written before, in kstream)."""
        request = self.request
        committed = self.kstream.group_offsets(MIRROR_PREFIX + request.name)
        in_kafka = {} if self.into_kstream else self._kafka_positions()
        if not committed and not in_kafka:
            raise MirrorError(f"mirror {request.name!r} has copied nothing from {request.source} to {request.target} "
                              f"(its group {MIRROR_PREFIX}{request.name} has no committed positions in kstream "
                              f"cluster {self.kstream.path}); run the mirror first, with the same --name")
        if self.into_kstream:  # the kstream next offset, with the Kafka position in the metadata
            out: dict[tuple[str, int], tuple[int, int | None]] = {}
            for tp, (offset, metadata) in committed.items():
                position = source_position(metadata)
                if position is not None:
                    out[tp] = (position, offset)
            return out
        positions: dict[tuple[str, int], tuple[int, int | None]] = {
            tp: (offset, None) for tp, (offset, _) in committed.items()}  # ends from the last syncs
        for tp, (source, kafka_end) in in_kafka.items():
            if source > positions.get(tp, (-1, None))[0]:
                positions[tp] = (source, kafka_end)
        return positions

    def _kafka_positions(self) -> dict[tuple[str, int], tuple[int, int]]:
        """An exactly-once mirror's positions kept in Kafka: (kstream position, Kafka end)."""
        group = MIRROR_PREFIX + self.request.name
        partitions = [(t, p) for t, n in self.kstream.partition_counts().items() if not t.startswith("__")
                      for p in range(n)]
        return {tp: (kstream_position(metadata, group, tp), offset)
                for tp, (offset, metadata) in self.kafka.mirror_offsets(group, partitions, stable=False).items()}

    def translate(self) -> OffsetsReport:
        """G's offsets on the source as target offsets (offset_syncs.py's rule)."""
        request = self.request
        group_offsets = self.source_group_offsets()
        if not group_offsets:
            raise MirrorError(f"group {request.group!r} has no committed offsets on {request.source}; "
                              "nothing to translate (check --group and --from)")
        positions = self.mirror_positions()  # before the syncs: see build_trails
        syncs = self.kstream.read_offset_syncs(request.offset_syncs_topic, request.max_syncs, request.timeout_s)
        trails = build_trails(positions, syncs)
        mirrored = {t for t, _ in trails}
        counts = self.kstream.partition_counts()
        report = OffsetsReport(request)
        for topic in sorted({t for t, _ in group_offsets}):
            if topic not in mirrored:
                report.not_mirrored.append(topic)
                continue
            for partition in range(counts.get(topic, 0)):
                report.rows.append(self._row(topic, partition, group_offsets.get((topic, partition)),
                                             trails.get((topic, partition))))
        return report

    @staticmethod
    def _row(topic: str, partition: int, group_offset: int | None, trail: SyncTrail | None) -> Translation:
        if group_offset is None:
            return Translation(topic, partition, -1, None, NO_OFFSET,
                               "the group has no offset here; Spark's JSON starts it at earliest")
        if trail is None:
            return Translation(topic, partition, group_offset, None, NOT_TRANSLATED,
                               "the mirror has copied nothing of this partition")
        return trail.translate(topic, partition, group_offset)

    def apply(self, report: OffsetsReport, allow_backwards: bool = False) -> list[tuple[Translation, str]]:
        """Commit the translated offsets as G's on the target: refused while G has active members
        there; a partition where G is ahead of the translation keeps its offset unless
        ``allow_backwards``. Returns each translated row with what was done."""
        request = self.request
        target = self.kstream if self.into_kstream else self.kafka
        members = target.active_members(request.group)
        if members:
            raise MirrorError(f"group {request.group!r} has {len(members)} active member(s) on {request.target} "
                              f"({', '.join(members[:3])}{' ...' if len(members) > 3 else ''}); offsets are only "
                              "set for a group with no active members: stop its consumers and run again")
        if self.into_kstream:
            current = {tp: offset for tp, (offset, _) in self.kstream.group_offsets(request.group).items()}
        else:
            current = self.kafka.group_offsets(request.group)
        writes: dict[tuple[str, int], int] = {}
        done: list[tuple[Translation, str]] = []
        for row in report.rows:
            if row.target_offset is None:
                continue
            tp = (row.topic, row.partition)
            now = current.get(tp)
            if now is not None and now > row.target_offset and not allow_backwards:
                done.append((row, f"kept {now} (the target group is ahead; --allow-backwards moves it back)"))
                continue
            writes[tp] = row.target_offset
            done.append((row, "set" if now is None else f"set (was {now})"))
        if writes:
            target.alter_group_offsets(request.group, writes)
        return done


def format_table(report: OffsetsReport, applied: list[tuple[Translation, str]] | None = None) -> str:
    """The report as aligned columns: topic, partition, source offset, target offset, how (and
    with ``applied``, what was done on the target)."""
    header = ["TOPIC", "PARTITION", "SOURCE-OFFSET", "TARGET-OFFSET", "HOW"]
    actions = {(r.topic, r.partition): what for r, what in applied or []}
    if applied is not None:
        header.append("APPLIED")
    lines = [header]
    for r in report.rows:
        line = [r.topic, str(r.partition), "-" if r.source_offset < 0 else str(r.source_offset),
                "-" if r.target_offset is None else str(r.target_offset), r.how]
        if applied is not None:
            line.append(actions.get((r.topic, r.partition), "-"))
        lines.append(line)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "".join(" ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() + "\n"
                   for line in lines)

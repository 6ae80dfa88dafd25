"""Driver-side planning: which topic-partitions a read covers and the offsets it starts and ends at.

Offsets travel as the Spark Kafka connector writes them: ``{"topic": {"0": 23}}``
(JSON-friendly: partition numbers as strings). -2 means earliest, -1 latest.

A tiered topic (``tier.delta.path``) is read as one offset space of lake and log (the union
read, docs/TIERING.md): :class:`Lakes` pins each tiered topic's Delta table at the version it
finds when a read (or a micro-batch) is planned; ``earliest`` is then the lake's first offset,
and a split below the lake end carries the pinned table (:class:`PartitionRange` ``lake``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from itertools import pairwise

import pyarrow as pa

from kstream.errors import ConfigError, OffsetOutOfRangeError, PartitionNotFoundError, TopicNotFoundError
from kstream.groups import ConsumerGroups
from kstream.log import offset_for_timestamp
from kstream.log.cluster.cluster import Cluster
from kstream.log.partition_bounds import bounds as partition_bounds
from kstream.log.transactions.isolation import READ_COMMITTED
from kstream.log.transactions.store import TransactionStore
from kstream.source.read_options import EARLIEST, LATEST, GroupPosition, OffsetSpec, ReaderOptions, TimestampPosition
from kstream.tiering.lake_reader import LakeRange, LakeSnapshot

log = logging.getLogger(__name__)

Offsets = dict[str, dict[str, int]]


@dataclass(frozen=True)
class PartitionRange:
    """One Spark input split: offsets [start, end) of one topic-partition. Picklable. A
    latestPerKey split may have start EARLIEST and end LATEST, resolved when it is read."""

    cluster: str
    topic: str
    partition: int
    start: int
    end: int
    fail_on_data_loss: bool
    isolation_level: str = "read_committed"
    avro_schema: str | None = None  # valueFormat=avro: decode values with this schema
    check_crcs: bool = True  # option check.crcs: verify payload checksums
    latest_per_key: bool = False  # option latestPerKey: the split's latest record of each key
    include_tombstones: bool = False  # option includeTombstones (with latestPerKey)
    lake: LakeRange | None = None  # a tiered topic's table, pinned: offsets below its end come from it


class Lakes:
    """The Delta tables of the tiered topics one planning reads, each opened once, at the
    version it has then (pinned for every split of the planning). Not thread-safe."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self._found: dict[str, LakeSnapshot | None] = {}

    def get(self, topic: str) -> LakeSnapshot | None:
        """The topic's table, or None when the topic is not tiered or nothing is tiered yet."""
        if topic not in self._found:
            info = self.cluster.topic(topic)
            config = self.cluster.log_config(info)
            self._found[topic] = (None if config.tier_table_dir is None
                                  else LakeSnapshot.open(config.tier_table_dir, info.name, info.topic_id))
        return self._found[topic]

    def range_of(self, topic: str, partition: int) -> LakeRange | None:
        """The partition's lake, or None when it holds nothing (lake end 0)."""
        lake = self.get(topic)
        if lake is None or lake.end_offset(partition) == 0:
            return None
        return lake.range_of(partition)

    def for_split(self, topic: str, partition: int, begin: int) -> LakeRange | None:
        """The lake a split of ``partition`` from ``begin`` reads: None when ``begin`` is at or
        past the lake end, or when the log still holds ``begin`` (the log has the same rows, so
        a read of the log's tail opens no table; an executor that finds them deleted since reads
        them from the table's latest version, partition_reader)."""
        info = self.cluster.topic(topic)
        if self.cluster.log_config(info).tier_table_dir is None:
            return None
        if begin >= partition_bounds(self.cluster, info, partition).log_start_offset:
            return None
        found = self.range_of(topic, partition)
        return found if found is not None and begin < found.end_offset else None

    def start(self, topic: str, partition: int, log_start: int) -> int:
        """The first offset of the union of lake and log: the lake's first offset when it
        holds records, below the log start (else the log start)."""
        if self.cluster.log_config(self.cluster.topic(topic)).tier_table_dir is None:
            return log_start
        found = self.range_of(topic, partition)
        return log_start if found is None else min(found.start_offset, log_start)


def topic_partitions(cluster: Cluster, options: ReaderOptions) -> list[tuple[str, int]]:
    """The topic-partitions the options select, in a stable order."""
    existing = cluster.list_topics()
    if options.assign is not None:
        chosen = []
        for topic, partitions in sorted(options.assign.items()):
            count = cluster.topic(topic).num_partitions
            for p in partitions:
                if not 0 <= p < count:
                    raise PartitionNotFoundError(f"option 'assign' names {topic}-{p}, but {topic!r} has "
                                                 f"partitions 0..{count - 1}")
                chosen.append((topic, p))
        return chosen
    if options.subscribe_pattern is not None:
        regex = re.compile(options.subscribe_pattern)
        topics = [t for t in existing if regex.fullmatch(t)]
    else:
        missing = [t for t in options.subscribe if t not in existing]
        if missing:
            raise TopicNotFoundError(
                f"option 'subscribe' names topic(s) {missing} that do not exist; existing topics: "
                f"{', '.join(existing) or 'none'}")
        topics = list(options.subscribe)
    return [(t, p) for t in sorted(topics) for p in range(cluster.topic(t).num_partitions)]


def check_covers_selection(option: str, spec: OffsetSpec, tps: list[tuple[str, int]]) -> None:
    """The Kafka connector's rule for JSON offsets (startingOffsets, endingOffsets and the
    ByTimestamp ones): they name exactly the partitions the read selects, no fewer (-2 and
    -1 say earliest/latest for the ones the user does not care about) and no more."""
    if isinstance(spec, TimestampPosition):
        if spec.by_partition is None:
            return
        spec, option = spec.by_partition, option.replace("Offsets", "OffsetsByTimestamp")
    if not isinstance(spec, Mapping):
        return
    named = {(t, int(p)) for t, ps in spec.items() for p in ps}
    selected = set(tps)
    if named != selected:
        def show(keys: set[tuple[str, int]]) -> str:
            return ", ".join(f"{t}-{p}" for t, p in sorted(keys)) or "none"
        raise ConfigError(
            f"option {option!r} gives specific offsets, so it must name every partition the read selects "
            f"(use -2 for earliest, -1 for latest where you don't care): missing {show(selected - named)}; "
            f"not selected {show(named - selected)}")


def value_schema(cluster: Cluster, options: ReaderOptions) -> pa.Schema | None:
    """The typed schema the selected topics share, or None when they are bytes topics."""
    topics = sorted({topic for topic, _ in topic_partitions(cluster, options)})
    schemas = {topic: Cluster.topic_schema(cluster.topic(topic)) for topic in topics}
    kinds = {None if s is None else s.serialize().to_pybytes() for s in schemas.values()}
    if len(kinds) > 1:
        raise ConfigError(f"the selected topics {topics} mix bytes topics and typed schemas; read them separately")
    return next(iter(schemas.values()), None)


def bounds(cluster: Cluster, topic: str, partition: int, isolation_level: str,
           lakes: Lakes | None = None) -> tuple[int, int]:
    """(log start offset, end a reader may read to: the HW, or the LSO under read_committed),
    from the engine's :func:`kstream.log.partition_bounds.bounds`. With ``lakes``, a tiered
    topic's start is the union's (:meth:`Lakes.start`)."""
    found = partition_bounds(cluster, topic, partition)
    start = found.log_start_offset if lakes is None else lakes.start(topic, partition, found.log_start_offset)
    return start, (found.last_stable_offset if isolation_level == READ_COMMITTED else found.high_watermark)


def group_offsets(cluster: Cluster, group: str, position: GroupPosition) -> Offsets:
    """The offsets ``group`` had committed (now, at a table version, or as of a time)."""
    service = ConsumerGroups(cluster)
    try:
        rows = service.committed(group, position.version, position.timestamp)
    finally:
        service.close()
    result: Offsets = {}
    for (topic, partition), row in rows.items():
        result.setdefault(topic, {})[str(partition)] = row.offset
    return result


def timestamp_offsets(cluster: Cluster, spec: TimestampPosition, tps: list[tuple[str, int]],
                      isolation_level: str = "read_committed", lakes: Lakes | None = None) -> Offsets:
    """Per partition, the first offset at or after the partition's timestamp among the records
    the read is handed (:func:`kstream.log.offset_for_timestamp` at the read's isolation level;
    partitions with no timestamp given are left out; a partition with no such record: LATEST,
    or an error). With ``lakes``, a tiered partition's lake is looked in first (the union
    read: the lake holds the offsets below the log's)."""
    result: Offsets = {}
    store = TransactionStore.for_cluster(cluster)
    for topic, partition in tps:
        timestamp_ms = spec.for_partition(topic, partition)
        if timestamp_ms is None:
            continue
        lake = None if lakes is None or lakes.range_of(topic, partition) is None else lakes.get(topic)
        in_lake = None if lake is None else lake.offset_for_timestamp(partition, timestamp_ms)
        if in_lake is not None:
            result.setdefault(topic, {})[str(partition)] = in_lake
            continue
        handle = cluster.partition(topic, partition)
        try:
            found = offset_for_timestamp(handle, timestamp_ms, isolation_level, store)
        finally:
            handle.close()
        if found is None and spec.strategy == "error":
            raise OffsetOutOfRangeError(
                f"{topic}-{partition} has no record at or after timestamp {timestamp_ms}; use an earlier "
                "timestamp, or startingOffsetsByTimestampStrategy=latest to start such partitions at the end")
        result.setdefault(topic, {})[str(partition)] = LATEST if found is None else found.offset
    return result


def resolve(cluster: Cluster, spec: OffsetSpec, tps: list[tuple[str, int]],
            missing: int, isolation_level: str = "read_committed", group: str | None = None,
            group_fallback: int = LATEST, known_bounds: dict[tuple[str, int], tuple[int, int]] | None = None,
            fail_on_data_loss: bool = True, lakes: Lakes | None = None) -> Offsets:
    """Concrete offsets for ``tps``: 'earliest'/'latest', JSON with -2/-1 per partition, or a
    group's committed offsets. Partitions the JSON leaves out take ``missing`` (EARLIEST or
    LATEST); partitions a group never committed take ``group_fallback`` now, and EARLIEST in a
    historical position (the group had read nothing of them by then). A group's offset out of
    the log's range is settled by :func:`group_offset_in_range`. ``known_bounds`` keeps each
    partition's bounds between calls that plan one read (its start and its end). ``lakes``:
    tiered topics start at the lake's first offset (the union read)."""
    committed_by: str | None = None
    if isinstance(spec, GroupPosition):
        assert group is not None
        missing = EARLIEST if spec.historical else group_fallback
        spec = group_offsets(cluster, group, spec)
        committed_by = group
    elif isinstance(spec, TimestampPosition):
        spec = timestamp_offsets(cluster, spec, tps, isolation_level, lakes)
    result: Offsets = {}
    for topic, partition in tps:
        if isinstance(spec, str):
            wanted = EARLIEST if spec == "earliest" else LATEST
        else:
            wanted = spec.get(topic, {}).get(str(partition), missing)
        found = known_bounds.get((topic, partition)) if known_bounds is not None else None
        if found is None:
            found = bounds(cluster, topic, partition, isolation_level, lakes)
            if known_bounds is not None:
                known_bounds[(topic, partition)] = found
        start, end = found
        if committed_by is not None and wanted >= 0:
            wanted = group_offset_in_range(cluster, committed_by, topic, partition, wanted, found,
                                           group_fallback, fail_on_data_loss)
        if wanted < 0:
            wanted = start if wanted == EARLIEST else end
        elif wanted > end and committed_by is None:
            held = f"offsets {start}..{end - 1}" if end > start else f"no readable records (next offset {end})"
            raise OffsetOutOfRangeError(
                f"offset {wanted} of {topic}-{partition} does not exist yet: it has {held}; "
                f"use -1 for latest or an offset up to {end}")
        result.setdefault(topic, {})[str(partition)] = wanted
    return result


def group_offset_in_range(cluster: Cluster, group: str, topic: str, partition: int, offset: int,
                          found: tuple[int, int], reset: int, fail_on_data_loss: bool) -> int:
    """A group's committed ``offset`` of a partition whose bounds are ``found`` (log start, end
    a reader may read to), as the Consumer takes a committed position (docs/GROUPS.md): up to
    the log end offset it is kept, even past ``end`` (between the HW/LSO and the LEO the read
    waits for it); past the LEO it takes ``reset`` (auto.offset.reset: EARLIEST or LATEST),
    nothing of the log being lost. Below the log start, retention deleted records the group had
    not read: with ``fail_on_data_loss`` that is an OffsetOutOfRangeError (the Kafka
    connector's failOnDataLoss promise), else it takes ``reset`` as the Consumer does."""
    start, end = found
    if start <= offset <= end:
        return offset
    if offset > end:
        log_end = partition_bounds(cluster, topic, partition).log_end_offset
        if offset <= log_end:
            return offset
        log.warning("group %r's committed offset %d of %s-%d is past the log end offset %d; "
                    "auto.offset.reset moves it to %s", group, offset, topic, partition, log_end,
                    "the log start" if reset == EARLIEST else "the end")
        return reset
    if fail_on_data_loss:
        raise OffsetOutOfRangeError(
            f"group {group!r}'s committed offset {offset} of {topic}-{partition} is below the log start "
            f"offset {start}: retention deleted offsets {offset}..{start - 1} before the group read them; "
            "set failOnDataLoss=false to start such partitions from auto.offset.reset instead, or reset "
            "the group's offsets (kstream groups reset-offsets)")
    log.warning("group %r's committed offset %d of %s-%d is below the log start offset %d (deleted by "
                "retention); auto.offset.reset moves it to %s (failOnDataLoss=false)", group, offset, topic,
                partition, start, "the log start" if reset == EARLIEST else "the end")
    return reset


def ranges(cluster_path: str, start: Offsets, end: Offsets, fail_on_data_loss: bool,
           isolation_level: str, avro_schema: str | None = None, check_crcs: bool = True,
           latest_per_key: bool = False, include_tombstones: bool = False, lakes: Lakes | None = None
           ) -> list[PartitionRange]:
    """One split per topic-partition with data between ``start`` and ``end``; a split that
    begins below its partition's lake end carries the pinned lake (``lakes``)."""
    splits = []
    for topic, partitions in sorted(end.items()):
        for partition, stop in sorted(partitions.items(), key=lambda item: int(item[0])):
            begin = start.get(topic, {}).get(partition, 0)
            if stop > begin:
                lake = None if lakes is None else lakes.for_split(topic, int(partition), begin)
                splits.append(PartitionRange(cluster_path, topic, int(partition), begin, stop, fail_on_data_loss,
                                             isolation_level, avro_schema, check_crcs, latest_per_key,
                                             include_tombstones, lake))
    return splits


def split_large(cluster: Cluster, splits: list[PartitionRange], max_records: int | None,
                min_partitions: int | None) -> list[PartitionRange]:
    """Cut splits into pieces of at most ``max_records`` records, and the largest ones further
    until there are ``min_partitions``, as the Kafka connector's range calculator does. Cuts
    fall on record-batch boundaries, so no batch is decoded by two tasks."""
    pieces = []
    total = sum(s.end - s.start for s in splits)
    for split in splits:
        size = split.end - split.start
        count = 1
        if max_records:
            count = max(count, -(-size // max_records))
        if min_partitions and len(splits) < min_partitions and total:
            count = max(count, round(size * min_partitions / total))
        if count <= 1:
            pieces.append(split)
            continue
        cuts = _batch_boundaries(cluster, split, [split.start + size * i // count for i in range(1, count)])
        bounds = [split.start, *cuts, split.end]
        pieces += [replace(split, start=a, end=b) for a, b in pairwise(bounds) if b > a]
    return pieces


def _batch_boundaries(cluster: Cluster, split: PartitionRange, targets: list[int]) -> list[int]:
    """Each target moved to the first offset of the record batch holding it (deduplicated). A
    target below the split's lake end stays where it is (the lake has no batches to keep whole)."""
    handle = cluster.partition(split.topic, split.partition)
    reader = handle.reader(check_crcs=False)
    lake_end = 0 if split.lake is None else split.lake.end_offset
    try:
        cuts: list[int] = []
        for target in targets:
            if target < max(lake_end, reader.log_start_offset()):
                cut = target  # in the lake (or in a hole the read reports as data loss)
            else:
                frames = reader.read(target, 1, end_offset=split.end)
                cut = frames[0].header.base_offset if frames else target
            if split.start < cut < split.end and (not cuts or cut > cuts[-1]):
                cuts.append(cut)
        return cuts
    finally:
        reader.close()
        handle.close()


def limit_bytes(cluster: Cluster, start: Offsets, latest: Offsets, max_bytes: int,
                lakes: Lakes | None = None) -> Offsets:
    """End offsets reading about ``max_bytes`` of stored batches in all, shared by backlog; each
    partition with a backlog advances by at least one batch. Below a tiered partition's lake
    end, the bytes are the lake's data files' (their size per offset), and the share stops at
    the lake end."""
    backlog = {(t, p): end - start.get(t, {}).get(p, 0) for t, ps in latest.items() for p, end in ps.items()}
    total = sum(b for b in backlog.values() if b > 0)
    result: Offsets = {t: dict(ps) for t, ps in start.items()}
    for (topic, partition), lag in backlog.items():
        begin = start.get(topic, {}).get(partition, 0)
        result.setdefault(topic, {})[partition] = begin
        if lag <= 0:
            continue
        lake = None if lakes is None or lakes.for_split(topic, int(partition), begin) is None else lakes.get(topic)
        if lake is not None:
            share = max(1, max_bytes * lag // total)
            result[topic][partition] = min(_lake_bytes_end(lake, int(partition), begin, share),
                                           latest[topic][partition])
            continue
        handle = cluster.partition(topic, int(partition))
        reader = handle.reader(check_crcs=False)
        try:
            frames = reader.read(begin, max(1, max_bytes * lag // total), end_offset=latest[topic][partition])
        finally:
            reader.close()
            handle.close()
        if frames:
            result[topic][partition] = min(frames[-1].header.next_offset, latest[topic][partition])
    return result


def _lake_bytes_end(lake: LakeSnapshot, partition: int, begin: int, budget: int) -> int:
    """The end offset of about ``budget`` bytes of the lake from ``begin`` (at least one offset,
    at most the lake end), by the size per offset of the data file holding ``begin``."""
    found = lake.partition(partition)
    for file in found.files:
        if file.max_offset >= begin:
            per_offset = max(1, file.size_bytes // max(1, file.max_offset + 1 - file.min_offset))
            return min(found.end_offset, begin + max(1, budget // per_offset))
    return found.end_offset

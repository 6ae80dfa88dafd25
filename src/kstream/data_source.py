"""`spark.read.format("kstream")` and `spark.readStream.format("kstream")`.

Registered by the `pyspark_kstream` shim (Spark finds a top-level module
named `pyspark_<name>` exposing `DefaultSource` by itself). The data source
holds only options; readers plan on the driver and read on executors
(:mod:`kstream.source.partition_reader`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from kstream.errors import ConfigError
from kstream.groups import ConsumerGroups
from kstream.log.cluster.cluster import Cluster, resolve_cluster_path
from kstream.log.storage.output import output_schema
from kstream.sink.writer import KStreamBatchWriter, KStreamStreamWriter, check_save_mode, check_sink_schema
from kstream.source import avro_values as avro
from kstream.source import planning
from kstream.source.latest_per_key import read_latest
from kstream.source.partition_reader import read_range
from kstream.source.read_options import EARLIEST, LATEST, OffsetSpec, ReaderOptions


class KStreamDataSource(DataSource):
    """The kstream data source; see README "Spark" for the options."""

    @classmethod
    def name(cls) -> str:
        return "kstream"

    def schema(self) -> StructType:
        """key/value (or a typed topic's columns) plus topic, partition, offset, timestamp,
        timestampType (and headers with includeHeaders); ``columns`` keeps only those named."""
        options = ReaderOptions.from_options(self.options, streaming=None)  # batch or streaming: not known yet
        cluster = Cluster.open(resolve_cluster_path(options.cluster))
        try:
            arrow = output_schema(planning.value_schema(cluster, options))
        finally:
            cluster.close()
        if options.avro_schema is not None:
            arrow = _with_avro_columns(arrow, options.avro_schema)
        keep = [f for f in arrow if (f.name != "headers" or options.include_headers)]
        if options.columns is not None:
            unknown = set(options.columns) - {f.name for f in keep}
            if unknown:
                raise ConfigError(f"option 'columns' names {sorted(unknown)}, which the topic does not have; "
                                  f"columns: {[f.name for f in keep]}")
            keep = [f for f in keep if f.name in options.columns]
        return from_arrow_schema(pa.schema(keep))

    def reader(self, schema: StructType) -> DataSourceReader:
        return KStreamBatchReader(dict(self.options), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KStreamStreamReader(dict(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        check_save_mode(overwrite)
        check_sink_schema(schema.fieldNames(), dict(self.options))
        return KStreamBatchWriter(dict(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        check_sink_schema(schema.fieldNames(), dict(self.options))
        return KStreamStreamWriter(dict(self.options))


def _with_avro_columns(arrow: pa.Schema, avro_schema: str) -> pa.Schema:
    """The reader's columns with ``value`` replaced by the Avro record's fields."""
    if "value" not in arrow.names:
        raise ConfigError("valueFormat=avro reads bytes topics; this topic is typed (its columns are "
                          "already decoded): drop valueFormat/avroSchema")
    value_fields = avro.parse(avro_schema)[1]
    clash = set(value_fields.names) & (set(arrow.names) - {"value"})
    if clash:
        raise ConfigError(f"the Avro record has fields {sorted(clash)} named like kstream's own columns; "
                          "rename them in the schema")
    at = arrow.get_field_index("value")
    fields = list(arrow)
    return pa.schema(fields[:at] + list(value_fields) + fields[at + 1:])


class _Split(InputPartition):
    def __init__(self, split: planning.PartitionRange):
        super().__init__(split)
        self.split = split


def _arrow_schema(schema: StructType) -> pa.Schema:
    return to_arrow_schema(schema, timezone="UTC")


class KStreamBatchReader(DataSourceReader):
    """Reads [startingOffsets, endingOffsets) of the selected partitions, one split each."""

    def __init__(self, options: dict[str, str], schema: StructType):
        self.options = ReaderOptions.from_options(options, streaming=False)
        self.schema = schema
        self.cluster_path = resolve_cluster_path(self.options.cluster)

    def partitions(self) -> Sequence[InputPartition]:
        cluster = Cluster.open(self.cluster_path)
        try:
            tps = planning.topic_partitions(cluster, self.options)
            planning.check_covers_selection("startingOffsets", self.options.starting_offsets, tps)
            planning.check_covers_selection("endingOffsets", self.options.ending_offsets, tps)
            known: dict[tuple[str, int], tuple[int, int]] = {}  # each partition's bounds, read once
            lakes = planning.Lakes(cluster)  # tiered topics' tables, pinned for this read

            def resolve(spec: OffsetSpec, missing: int) -> planning.Offsets:
                return planning.resolve(cluster, spec, tps, missing, self.options.isolation_level,
                                        self.options.group_id, _fallback(self.options), known,
                                        self.options.fail_on_data_loss, lakes)

            start = resolve(self.options.starting_offsets, EARLIEST)
            end = resolve(self.options.ending_offsets, LATEST)
            if self.options.latest_per_key:
                return _latest_splits(cluster, self.options, start, end)
            return _splits(cluster, self.options, start, end, lakes)
        finally:
            cluster.close()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from _read(partition, self.schema)


def _read(partition: InputPartition, schema: StructType) -> Iterator[pa.RecordBatch]:
    """A split's records. With no splits at all (an empty range), pyspark still runs one task
    with a plain InputPartition: it reads nothing."""
    if isinstance(partition, _Split):
        if partition.split.latest_per_key:
            yield from read_latest(partition.split, _arrow_schema(schema))
        else:
            yield from read_range(partition.split, _arrow_schema(schema))


def _splits(cluster: Cluster, options: ReaderOptions, start: planning.Offsets, end: planning.Offsets,
            lakes: planning.Lakes) -> list[InputPartition]:
    """One split per partition range, cut further by maxRecordsPerPartition / minPartitions; a
    tiered partition's offsets below its lake end come from ``lakes``' pinned table."""
    splits = planning.ranges(cluster.path, start, end, options.fail_on_data_loss, options.isolation_level,
                             options.avro_schema, options.check_crcs, options.latest_per_key,
                             options.include_tombstones, lakes)
    # (latestPerKey refuses both options: a partition is reduced in one task, read_options)
    if options.max_records_per_partition or options.min_partitions:
        splits = planning.split_large(cluster, splits, options.max_records_per_partition, options.min_partitions)
    return [_Split(s) for s in splits]


def _latest_splits(cluster: Cluster, options: ReaderOptions, start: planning.Offsets, end: planning.Offsets
                   ) -> list[InputPartition]:
    """latestPerKey splits, one per selected partition: startingOffsets=earliest and
    endingOffsets=latest stay EARLIEST and LATEST, resolved when the split is read. Spark plans a
    Python data source's read once per DataFrame (its partitions are kept with the plan), so a
    DataFrame read again, e.g. the static side of a stream-static join in every micro-batch,
    sees the HW of each run, as the JVM reader (which plans every run) does."""
    if options.starting_offsets == "earliest":
        start = {t: dict.fromkeys(ps, EARLIEST) for t, ps in start.items()}
    if options.ending_offsets == "latest":
        end = {t: dict.fromkeys(ps, LATEST) for t, ps in end.items()}
    return [_Split(planning.PartitionRange(cluster.path, topic, int(partition), start[topic][partition], stop,
                                          options.fail_on_data_loss, options.isolation_level, options.avro_schema,
                                          options.check_crcs, True, options.include_tombstones))
            for topic, partitions in sorted(end.items())
            for partition, stop in sorted(partitions.items(), key=lambda item: int(item[0]))
            if stop < 0 or start[topic][partition] < 0 or stop > start[topic][partition]]


def _fallback(options: ReaderOptions) -> int:
    return EARLIEST if options.auto_offset_reset == "earliest" else LATEST


class KStreamStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over the selected partitions; offsets are {topic: {partition: next offset}}.

    Lives in one long-lived process on the driver. New partitions of subscribed
    topics are picked up at each ``latestOffset`` and start at their earliest offset.

    With ``group.id`` the query owns that consumer group: it claims the group when
    it starts (fencing an earlier query of the same group, whose next commit then
    fails) and commits the end offsets of each finished micro-batch. Spark calls
    ``commit(end)`` for batch N only when it plans batch N+1, so the commit also
    happens in ``latestOffset(start)``, whose ``start`` is the end of the batch
    Spark has just finished: the group is never a batch behind, and an
    AvailableNow query's last batch is committed too.
    """

    def __init__(self, options: dict[str, str], schema: StructType):
        self.options = ReaderOptions.from_options(options, streaming=True)
        self.schema = schema
        self.cluster_path = resolve_cluster_path(self.options.cluster)
        self._cluster: Cluster | None = None
        self._available_now_end: planning.Offsets | None = None
        self._reported_latest: planning.Offsets | None = None
        self._member: tuple[str, int] | None = None  # (member id, generation) in the group
        self._groups: ConsumerGroups | None = None
        self._group_committed: dict | None = None
        self._group_committed_at = float("-inf")
        self._last_batch_at = time.monotonic()

    @property
    def cluster(self) -> Cluster:
        if self._cluster is None:
            self._cluster = Cluster.open(self.cluster_path)
        return self._cluster

    def initialOffset(self) -> dict:
        tps = planning.topic_partitions(self.cluster, self.options)
        planning.check_covers_selection("startingOffsets", self.options.starting_offsets, tps)
        return planning.resolve(self.cluster, self.options.starting_offsets, tps, EARLIEST,
                                self.options.isolation_level, self.options.group_id, _fallback(self.options),
                                fail_on_data_loss=self.options.fail_on_data_loss, lakes=planning.Lakes(self.cluster))

    def _group_member(self) -> tuple[ConsumerGroups, str, int]:
        """Claim the group once per run of the query (fencing any earlier query)."""
        if self._groups is None:
            self._groups = ConsumerGroups(self.cluster)
        if self._member is None:
            assert self.options.group_id is not None
            self._member = self._groups.coordinator.claim(self.options.group_id, "spark-query")
        return self._groups, *self._member

    def getDefaultReadLimit(self) -> ReadLimit:
        """maxOffsetsPerTrigger, else maxBytesPerTrigger, else minOffsetsPerTrigger; latestOffset
        applies every one of these options that is set, whichever limit Spark passes back."""
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.max_bytes_per_trigger is not None:
            return ReadMaxBytes(self.options.max_bytes_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def _latest(self) -> planning.Offsets:
        """The end each selected partition may be read to now (new partitions included)."""
        tps = planning.topic_partitions(self.cluster, self.options)
        return planning.resolve(self.cluster, "latest", tps, LATEST, self.options.isolation_level)

    def _available(self, start: dict) -> planning.Offsets:
        self._reported_latest = self._latest()
        latest: planning.Offsets = {}
        for topic, partitions in self._reported_latest.items():
            for partition, end in partitions.items():
                begun = start.setdefault(topic, {}).setdefault(partition, 0)  # new partitions: from the start
                # A group's offset between the LSO/HW and the log end is a valid start: the
                # partition waits there, its end never planned behind its start.
                latest.setdefault(topic, {})[partition] = max(end, begun)
        return latest

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: read what exists now (in batches of the read limit), then stop."""
        self._available_now_end = self._latest()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        end = self._available_now_end
        self._commit_group(start, final=end is not None and all(
            start.get(t, {}).get(p, 0) >= o for t, ps in end.items() for p, o in ps.items()))
        start = {t: dict(ps) for t, ps in start.items()}
        latest = self._available(start)
        if end is not None:
            latest = {t: {p: min(o, end.get(t, {}).get(p, 0)) for p, o in ps.items()} for t, ps in latest.items()}
        options = self.options
        now = time.monotonic()
        if options.min_offsets_per_trigger and end is None:
            new = sum(o - start.get(t, {}).get(p, 0) for t, ps in latest.items() for p, o in ps.items())
            if new < options.min_offsets_per_trigger and \
                    (now - self._last_batch_at) * 1000 < options.max_trigger_delay_ms:
                return start  # wait for minOffsetsPerTrigger records, or maxTriggerDelay
        max_rows = options.max_offsets_per_trigger or (limit.max_rows if isinstance(limit, ReadMaxRows) else None)
        if max_rows:
            latest = _limit(start, latest, max_rows)
        max_bytes = options.max_bytes_per_trigger or (limit.max_bytes if isinstance(limit, ReadMaxBytes) else None)
        if max_bytes:
            latest = planning.limit_bytes(self.cluster, start, latest, max_bytes, planning.Lakes(self.cluster))
        if latest != start:
            self._last_batch_at = now
        return latest

    def reportLatestOffset(self) -> dict | None:
        """The log end offsets latestOffset just saw (as the Kafka connector reports them)."""
        return self._reported_latest if self._reported_latest is not None else self._latest()

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        # Each micro-batch pins the lake version it finds now: the lake only grows, and holds
        # the same rows below every partition's lake end at any later version.
        return _splits(self.cluster, self.options, start, end, planning.Lakes(self.cluster))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from _read(partition, self.schema)

    def commit(self, end: dict) -> None:
        self._commit_group(end)

    def _commit_group(self, offsets: dict, final: bool = False) -> None:
        """With group.id: commit a finished batch's end offsets for the group (FencedError,
        failing this query, if a newer query of the same group has taken it over). With
        ``auto.commit.interval.ms``, at most one commit per interval (and the final offsets
        of an AvailableNow run): the group may trail the query by up to the interval.
        (Spark does not reliably call stop(), so nothing waits for it.)"""
        if self.options.group_id is None or offsets == self._group_committed:
            return
        now = time.monotonic()
        interval_s = self.options.group_commit_interval_ms / 1000.0
        if interval_s and not final and now - self._group_committed_at < interval_s:
            return
        groups, member_id, generation = self._group_member()
        groups.commit(self.options.group_id,
                      {(t, int(p)): o for t, ps in offsets.items() for p, o in ps.items()},
                      member_id=member_id, generation=generation)
        self._group_committed = {t: dict(ps) for t, ps in offsets.items()}
        self._group_committed_at = now

    def stop(self) -> None:
        if self._groups is not None:
            if self._member is not None and self.options.group_id is not None:
                self._groups.coordinator.leave(self.options.group_id, self._member[0])
            self._groups.close()
            self._groups = None
            self._member = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


def _limit(start: planning.Offsets, latest: planning.Offsets, max_rows: int) -> planning.Offsets:
    """Spread ``max_rows`` over the partitions in proportion to what each has, as the
    Kafka connector does for maxOffsetsPerTrigger."""
    lags = {(t, p): max(0, end - start.get(t, {}).get(p, 0)) for t, ps in latest.items() for p, end in ps.items()}
    total = sum(lags.values())
    if total <= max_rows:
        return latest
    result: planning.Offsets = {}
    for (topic, partition), lag in lags.items():
        share = lag * max_rows // total
        result.setdefault(topic, {})[partition] = start.get(topic, {}).get(partition, 0) + share
    return result

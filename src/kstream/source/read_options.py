"""Reader options, named as the Spark Kafka connector names them, checked up front.

Errors are ``ConfigError`` naming the option, the value and what to write
instead; Spark shows them at analysis time or on the first batch.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from kstream.config.data_source_options import check_reader_options
from kstream.errors import ConfigError
from kstream.group_names import check_group_name

EARLIEST = -2
LATEST = -1
_TOPIC_SELECTORS = ("subscribe", "subscribePattern", "assign")


@dataclass(frozen=True)
class GroupPosition:
    """startingOffsets/endingOffsets taken from the group's committed offsets: now
    (``group``), at a table version (``group@version=12``) or as of a time
    (``group@timestamp=2026-11-20T10:00:00Z``)."""

    version: int | None = None
    timestamp: dt.datetime | None = None

    @property
    def historical(self) -> bool:
        return self.version is not None or self.timestamp is not None


@dataclass(frozen=True)
class TimestampPosition:
    """startingTimestamp / startingOffsetsByTimestamp (or the ending ones): per partition, the
    first offset whose timestamp is at or after the given one (ms since the epoch)."""

    timestamp: int | None = None  # for every partition
    by_partition: Mapping[str, Mapping[str, int]] | None = None
    strategy: str = "error"  # what a partition with no such record gets: error, or latest

    def for_partition(self, topic: str, partition: int) -> int | None:
        if self.timestamp is not None:
            return self.timestamp
        return (self.by_partition or {}).get(topic, {}).get(str(partition))


OffsetSpec = str | Mapping[str, Mapping[str, int]] | GroupPosition | TimestampPosition


@dataclass(frozen=True)
class ReaderOptions:
    """What a kstream read needs, parsed from Spark's string options (case-insensitive)."""

    cluster: str | None
    subscribe: tuple[str, ...] = ()
    subscribe_pattern: str | None = None
    assign: Mapping[str, tuple[int, ...]] | None = None
    starting_offsets: OffsetSpec = "latest"
    ending_offsets: OffsetSpec = "latest"
    max_offsets_per_trigger: int | None = None
    max_bytes_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    include_headers: bool = False
    fail_on_data_loss: bool = True
    isolation_level: str = "read_committed"
    columns: tuple[str, ...] | None = None
    group_id: str | None = None
    auto_offset_reset: str = "latest"
    avro_schema: str | None = None  # valueFormat=avro
    group_commit_interval_ms: int = 0  # 0: commit the group after every finished batch
    check_crcs: bool = True  # check.crcs: verify each frame's payload checksum
    latest_per_key: bool = False  # latestPerKey: one row per key, its latest record below the end
    include_tombstones: bool = False  # includeTombstones: latestPerKey keeps a deleted key's tombstone

    @classmethod
    def from_options(cls, options: Mapping[str, str], streaming: bool | None) -> ReaderOptions:
        """Parse and check ``options``; the Spark Kafka connector's rules hold: batch reads
        start at ``earliest`` by default and cannot start at latest (nor end at earliest),
        streaming reads take no end. ``streaming=None`` (the schema, asked before Spark says
        which kind of read it is) skips the rules of either kind. ``kafka.group.id`` is
        accepted and commits nothing (the connector never commits); kstream's own
        ``group.id`` makes a streaming query commit; a batch read takes it only with a group
        position (``startingOffsets``/``endingOffsets`` = ``group...``), and commits nothing."""
        check_reader_options(options)
        lower = {k.lower(): v for k, v in options.items()}
        chosen = [name for name in _TOPIC_SELECTORS if name.lower() in lower]
        if len(chosen) != 1:
            raise ConfigError(
                f"give exactly one of subscribe, subscribePattern or assign (got {chosen or 'none'}); "
                "e.g. .option('subscribe', 'events')")
        subscribe: tuple[str, ...] = ()
        pattern = None
        assign = None
        if chosen[0] == "subscribe":
            subscribe = tuple(t.strip() for t in lower["subscribe"].split(",") if t.strip())
            if not subscribe:
                raise ConfigError("option 'subscribe' is empty; give a comma-separated list of topics")
        elif chosen[0] == "subscribePattern":
            pattern = lower["subscribepattern"]
            try:
                re.compile(pattern)
            except re.error as err:
                raise ConfigError(f"option 'subscribePattern': {pattern!r} is not a regex: {err}") from err
        else:
            assign = _parse_assign(lower["assign"])
        starting = _parse_offsets("startingOffsets", lower.get("startingoffsets", "latest" if streaming
                                                              else "earliest"), allow_latest=True)
        ending = _parse_offsets("endingOffsets", lower.get("endingoffsets", "latest"), allow_latest=True)
        strategy = lower.get("startingoffsetsbytimestampstrategy", "error")
        if strategy not in ("error", "latest"):
            raise ConfigError(f"option 'startingOffsetsByTimestampStrategy': {strategy!r} is not error or latest")
        starting = _timestamp_position("starting", lower, strategy) or starting
        ending = _timestamp_position("ending", lower, "latest") or ending
        if streaming and any(k in lower for k in ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp")):
            raise ConfigError("option 'endingOffsets' is for batch reads; a streaming query has no end")
        if streaming is False:
            _check_batch_range(starting, ending)
        max_offsets = lower.get("maxoffsetspertrigger")
        group_id = lower.get("group.id")
        if group_id is not None:
            check_group_name(group_id, "option 'group.id'")
        for name, spec in (("startingOffsets", starting), ("endingOffsets", ending)):
            if isinstance(spec, GroupPosition) and not group_id:
                raise ConfigError(f"option {name!r} reads a consumer group's offsets; name the group "
                                  "with .option('group.id', ...)")
        if streaming is False and group_id is not None:
            _check_batch_group(starting, ending)
        value_format = lower.get("valueformat", "binary")
        if value_format not in ("binary", "avro"):
            raise ConfigError(f"option 'valueFormat': {value_format!r} is not binary or avro")
        avro_schema = lower.get("avroschema")
        if (value_format == "avro") != (avro_schema is not None):
            raise ConfigError("valueFormat=avro and avroSchema go together: give the record schema "
                              "(JSON) with .option('avroSchema', ...) and .option('valueFormat', 'avro')")
        min_offsets = _positive_int("minOffsetsPerTrigger", lower.get("minoffsetspertrigger"))
        max_rows = _positive_int("maxOffsetsPerTrigger", max_offsets)
        if min_offsets is not None and max_rows is not None and min_offsets > max_rows:
            raise ConfigError(f"option 'minOffsetsPerTrigger' ({min_offsets}) is higher than "
                              f"'maxOffsetsPerTrigger' ({max_rows}); lower it or raise maxOffsetsPerTrigger")
        _check_reader_choice(lower.get("reader", "auto"))
        latest_per_key = _bool("latestPerKey", lower.get("latestperkey", "false"))
        include_tombstones = _bool("includeTombstones", lower.get("includetombstones", "false"))
        _check_latest_per_key(lower, latest_per_key, include_tombstones, streaming)
        reset = lower.get("auto.offset.reset", "latest")
        if reset not in ("earliest", "latest"):
            raise ConfigError(f"option 'auto.offset.reset': {reset!r} is not earliest or latest")
        return cls(
            cluster=lower.get("cluster"),
            subscribe=subscribe,
            subscribe_pattern=pattern,
            assign=assign,
            starting_offsets=starting,
            ending_offsets=ending,
            max_offsets_per_trigger=max_rows,
            max_bytes_per_trigger=_positive_int("maxBytesPerTrigger", lower.get("maxbytespertrigger")),
            min_offsets_per_trigger=min_offsets,
            max_trigger_delay_ms=_duration_ms("maxTriggerDelay", lower.get("maxtriggerdelay", "15m")),
            min_partitions=_positive_int("minPartitions", lower.get("minpartitions")),
            max_records_per_partition=_positive_int("maxRecordsPerPartition",
                                                    lower.get("maxrecordsperpartition")),
            include_headers=_bool("includeHeaders", lower.get("includeheaders", "false")),
            fail_on_data_loss=_bool("failOnDataLoss", lower.get("failondataloss", "true")),
            columns=tuple(c.strip() for c in lower["columns"].split(",") if c.strip()) if "columns" in lower
            else None,
            isolation_level=_isolation(lower.get("kafka.isolation.level", lower.get("isolation.level",
                                                                                     "read_committed"))),
            group_id=group_id,
            auto_offset_reset=reset,
            avro_schema=avro_schema,
            group_commit_interval_ms=_duration_ms("auto.commit.interval.ms",
                                                  lower.get("auto.commit.interval.ms", "0")),
            check_crcs=_bool("check.crcs", lower.get("check.crcs", "true")),
            latest_per_key=latest_per_key,
            include_tombstones=include_tombstones,
        )


# The same words as the JVM reader's ReaderOptions (the shared option vectors compare them).
LATEST_PER_KEY_STREAMING = (
    "option 'latestPerKey' is for batch reads (spark.read): a stream reads every record once. For a "
    "stream-static join against the latest value of each key, read the table with spark.read and "
    "latestPerKey=true and join the stream to it: Spark re-reads a batch source for every micro-batch")
LATEST_PER_KEY_SPLITS = (
    "option {name!r} cuts a partition into several Spark tasks, but latestPerKey=true reduces each "
    "partition in one task (all of a key's records are in its partition, so no shuffle is needed); "
    "drop {name!r}")
INCLUDE_TOMBSTONES_ALONE = (
    "option 'includeTombstones' applies to latestPerKey=true reads (a plain read returns every record, "
    "tombstones included); add .option('latestPerKey', 'true') or drop includeTombstones")


def _check_latest_per_key(lower: Mapping[str, str], latest_per_key: bool, include_tombstones: bool,
                          streaming: bool | None) -> None:
    """latestPerKey reduces a batch read's partitions each in one task: no stream, no cut splits."""
    if include_tombstones and not latest_per_key:
        raise ConfigError(INCLUDE_TOMBSTONES_ALONE)
    if not latest_per_key:
        return
    if streaming:
        raise ConfigError(LATEST_PER_KEY_STREAMING)
    for name in ("minPartitions", "maxRecordsPerPartition"):
        if name.lower() in lower:
            raise ConfigError(LATEST_PER_KEY_SPLITS.format(name=name))


def _check_reader_choice(reader: str) -> None:
    """Option 'reader' (jvm, python or auto). This is the Python reader: with the kstream jar on
    the session the JVM provider chooses and only hands Python reads here, so reader=jvm arriving
    here means the jar is not loaded."""
    if reader.lower() not in ("jvm", "python", "auto"):
        raise ConfigError(f"option 'reader': {reader!r} is not jvm, python or auto")
    if reader.lower() == "jvm":
        raise ConfigError("option 'reader' is jvm, but the kstream JVM reader is not on this SparkSession: add "
                          "its jar with spark.jars (the path `kstream jar-path` prints; kstream.jars.with_jar does "
                          "it for a builder), or use reader=auto/python (docs/JVM_READER.md)")


# The same words as the JVM reader's ReaderOptions.BATCH_GROUP_ID (the shared option vectors
# check that both readers refuse the same reads).
BATCH_GROUP_ID = (
    "option 'group.id' on a batch read would commit nothing: only a streaming query commits its finished "
    "batches' offsets to a consumer group. To commit, read with spark.readStream, "
    ".trigger(availableNow=True) and a checkpointLocation (each batch commits, then the query stops); to "
    "read from the group's committed offsets, add .option('startingOffsets', 'group') (a batch read at a "
    "group position commits nothing); otherwise drop group.id")


def _check_batch_group(starting: OffsetSpec, ending: OffsetSpec) -> None:
    """A batch read takes group.id only to name the group whose offsets startingOffsets or
    endingOffsets reads; named for anything else it would promise commits nobody makes."""
    if not isinstance(starting, GroupPosition) and not isinstance(ending, GroupPosition):
        raise ConfigError(BATCH_GROUP_ID)


def _check_batch_range(starting: OffsetSpec, ending: OffsetSpec) -> None:
    """The Kafka connector's batch rules: no start at latest, no end at earliest, and JSON
    start and end name the same partitions with start <= end."""
    if starting == "latest":
        raise ConfigError("option 'startingOffsets': starting offset can't be latest for batch queries "
                          "(a batch read would be empty); use 'earliest' (the default) or JSON offsets")
    if ending == "earliest":
        raise ConfigError("option 'endingOffsets': ending offset can't be earliest for batch queries; "
                          "use 'latest' (the default) or JSON offsets")
    for name, spec, refused, word in (("startingOffsets", starting, LATEST, "latest"),
                                      ("endingOffsets", ending, EARLIEST, "earliest")):
        if isinstance(spec, Mapping):  # JSON offsets (group and timestamp positions are not mappings)
            bad = [f"{t}-{p}" for t, ps in spec.items() for p, o in ps.items() if o == refused]
            if bad:
                raise ConfigError(f"option {name!r}: the offset of {', '.join(bad)} can't be {word} ({refused}) "
                                  "for batch queries")
    if isinstance(starting, Mapping) and isinstance(ending, Mapping):
        start_keys = {(t, p) for t, ps in starting.items() for p in ps}
        end_keys = {(t, p) for t, ps in ending.items() for p in ps}
        if start_keys != end_keys:
            raise ConfigError("options 'startingOffsets' and 'endingOffsets' must name the same partitions; "
                              f"only in startingOffsets: {_names(start_keys - end_keys)}, only in "
                              f"endingOffsets: {_names(end_keys - start_keys)}")
        for topic, partitions in starting.items():
            for partition, start in partitions.items():
                end = ending[topic][partition]
                if start >= 0 and end >= 0 and start > end:
                    raise ConfigError(f"startingOffsets {start} of {topic}-{partition} is after its "
                                      f"endingOffsets {end}")


def _names(keys: set[tuple[str, str]]) -> str:
    return ", ".join(f"{t}-{p}" for t, p in sorted(keys)) or "none"


def _parse_assign(text: str) -> dict[str, tuple[int, ...]]:
    try:
        value = json.loads(text)
        if not isinstance(value, dict) or not all(
                isinstance(ps, list) and all(isinstance(p, int) for p in ps) for ps in value.values()):
            raise ValueError("not a map of topic to a list of partition numbers")
    except ValueError as err:
        raise ConfigError(f"option 'assign': {text!r} is not JSON like {{\"topicA\":[0,1]}} ({err})") from err
    return {topic: tuple(ps) for topic, ps in value.items()}


def _parse_offsets(name: str, text: str, allow_latest: bool) -> OffsetSpec:
    if text in ("earliest", "latest"):
        return text
    if text == "group" or text.startswith("group@"):
        return _parse_group_position(name, text)
    try:
        value = json.loads(text)
        if not isinstance(value, dict) or not all(
                isinstance(ps, dict) and all(isinstance(o, int) for o in ps.values()) for ps in value.values()):
            raise ValueError("not a map of topic to a map of partition to offset")
        return {topic: {str(p): o for p, o in ps.items()} for topic, ps in value.items()}
    except ValueError as err:
        raise ConfigError(
            f"option {name!r}: {text!r} is neither 'earliest', 'latest' nor JSON like "
            f'{{"topicA":{{"0":23,"1":-2}}}} (-2 = earliest, -1 = latest): {err}') from err


def _timestamp_position(which: str, lower: Mapping[str, str], strategy: str) -> TimestampPosition | None:
    """startingTimestamp wins over startingOffsetsByTimestamp, which wins over startingOffsets
    (the Spark Kafka connector's precedence); likewise for the ending ones."""
    single, by_partition = lower.get(f"{which}timestamp"), lower.get(f"{which}offsetsbytimestamp")
    if single is not None:
        try:
            value = int(single)
            if value < 0:
                raise ValueError("a timestamp is >= 0")
        except ValueError as err:
            raise ConfigError(f"option '{which}Timestamp': {single!r} is not milliseconds since the epoch "
                              f"({err})") from err
        return TimestampPosition(timestamp=value, strategy=strategy)
    if by_partition is not None:
        spec = _parse_offsets(f"{which}OffsetsByTimestamp", by_partition, allow_latest=False)
        if not isinstance(spec, Mapping) or any(o < 0 for ps in spec.values() for o in ps.values()):
            raise ConfigError(f"option '{which}OffsetsByTimestamp': {by_partition!r} is not JSON like "
                              '{"topicA":{"0":1700000000000}} (milliseconds since the epoch per partition)')
        return TimestampPosition(by_partition=spec, strategy=strategy)
    return None


def _parse_group_position(name: str, text: str) -> GroupPosition:
    if text == "group":
        return GroupPosition()
    kind, _, value = text[len("group@"):].partition("=")
    try:
        if kind == "version":
            version = int(value)
            if version < 0:
                raise ValueError("a version is >= 0")
            return GroupPosition(version=version)
        if kind == "timestamp":
            when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            return GroupPosition(timestamp=when if when.tzinfo else when.replace(tzinfo=dt.UTC))
        raise ValueError(f"unknown position kind {kind!r}")
    except ValueError as err:
        raise ConfigError(
            f"option {name!r}: {text!r} is not group, group@version=N or group@timestamp=ISO-8601 "
            f"(e.g. group@timestamp=2026-11-20T10:00:00Z): {err}") from err


def _positive_int(name: str, text: str | None) -> int | None:
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError as err:
        raise ConfigError(f"option {name!r}: {text!r} is not an integer") from err
    if value < 1:
        raise ConfigError(f"option {name!r}: {value} must be at least 1")
    return value


_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def _duration_ms(name: str, text: str) -> int:
    """A duration like Spark's: 500ms, 30s, 15m, 2h (a bare number is milliseconds)."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", text.lower())
    if match is None or match.group(2) not in ("", *_UNITS_MS):
        raise ConfigError(f"option {name!r}: {text!r} is not a duration like 500ms, 30s, 15m or 2h")
    return int(match.group(1)) * _UNITS_MS.get(match.group(2) or "ms", 1)


def _bool(name: str, text: str) -> bool:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    raise ConfigError(f"option {name!r}: {text!r} is not true or false")


def _isolation(text: str) -> str:
    if text not in ("read_committed", "read_uncommitted"):
        raise ConfigError(f"option 'isolation.level': {text!r} is not read_committed or read_uncommitted")
    return text

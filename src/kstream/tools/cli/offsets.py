"""`kstream get-offsets` and `kstream delete-records`: kafka-get-offsets and kafka-delete-records.

get-offsets prints ``topic:partition:offset`` lines as kafka-get-offsets does,
for ``--time`` ``-1``/``latest`` (the high watermark), ``-2``/``earliest`` (the
log start offset: a tiered topic's lake first offset when its lake holds records below the
local log's, as Kafka counts remote segments, KIP-405), ``-4``/``earliest-local`` (the local
log start, KIP-1005), ``-3``/``max-timestamp`` (the record with the largest
timestamp) or a timestamp in ms (the first record at or after it, the lake's first, else
:func:`kstream.log.offset_for_timestamp` under read_uncommitted, as the tool's
ListOffsets asks: markers never answer). A partition
with no such offset prints no line, as in Kafka. Read-only: creates nothing.

delete-records reads kafka-delete-records' JSON plan
(``{"partitions": [{"topic": "t", "partition": 0, "offset": 5}], "version": 1}``)
and deletes, per partition, the records below the offset a whole segment at a
time (see :mod:`kstream.log.cluster.record_deletion`): the low watermark it prints may
be below the offset asked for.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager

import click

from kstream.errors import ConfigError, KStreamError
from kstream.log import max_timestamp_offset, offset_for_timestamp
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.partition import Partition
from kstream.log.cluster.record_deletion import delete_records as delete_records_before
from kstream.log.partition_bounds import bounds
from kstream.tiering.lake_reader import partition_lake

_NAMED_TIMES = {"latest": -1, "earliest": -2, "max-timestamp": -3, "earliest-local": -4}


@contextmanager
def _cluster(ctx: click.Context) -> Iterator[Cluster]:
    cluster = Cluster.open(ctx.obj["cluster"])
    try:
        yield cluster
    finally:
        cluster.close()


def _parse_time(text: str) -> int:
    if text in _NAMED_TIMES:
        return _NAMED_TIMES[text]
    try:
        value = int(text)
    except ValueError:
        value = -5
    if value < -4:
        raise click.BadParameter(f"malformed time {text!r}: use -1 or latest, -2 or earliest, -3 or "
                                 "max-timestamp, -4 or earliest-local, or a timestamp in ms", param_hint="--time")
    return value


def _parse_partitions(text: str | None) -> set[int] | None:
    """``0,2,5`` or ranges ``0-3`` (inclusive lower, exclusive upper, as kafka-get-offsets)."""
    if not text:
        return None
    chosen: set[int] = set()
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        try:
            if dash:
                chosen.update(range(int(low or 0), int(high)))
            else:
                chosen.add(int(low))
        except ValueError as err:
            raise click.BadParameter(f"{text!r}: expected comma-separated partition ids or ranges "
                                     "like 0-3", param_hint="--partitions") from err
    return chosen


def offset_for(cluster: Cluster, handle: Partition, time: int) -> int | None:
    """The offset kafka-get-offsets prints for ``time`` (see the module doc); None: no line.
    The log start and the HW are the engine's :func:`kstream.log.partition_bounds.bounds`."""
    found = bounds(cluster, handle.topic, handle.partition, handle=handle)
    high_watermark = found.high_watermark
    if time == -1:
        return high_watermark
    if time == -4:
        return found.log_start_offset
    if time == -3:
        reader = handle.reader()
        try:
            newest = max_timestamp_offset(reader, high_watermark)
        finally:
            reader.close()
        return None if newest is None else newest.offset
    lake = partition_lake(cluster, cluster.topic(handle.topic), handle.partition)  # -2 and a time count it
    if time == -2:
        return found.log_start_offset if lake is None else lake.start_offset(found.log_start_offset)
    in_lake = None if lake is None else lake.offset_for_timestamp(time)
    if in_lake is not None:
        return in_lake
    hit = offset_for_timestamp(handle, time)  # read_uncommitted, as kafka-get-offsets asks
    return None if hit is None else hit.offset


@click.command("get-offsets")
@click.option("--topic", help="Topic name, or a regular expression matching whole names (default: all).")
@click.option("--partitions", help="Partition ids: 0,2,5 or ranges 0-3 (default: all).")
@click.option("--time", "time_text", default="latest", show_default=True,
              metavar="-1|latest|-2|earliest|-3|max-timestamp|-4|earliest-local|MS",
              help="Which offset: high watermark, log start (a tiered topic's: in its lake), record with the "
                   "largest timestamp, local log start, or the first offset at or after a timestamp (ms).")
@click.pass_context
def get_offsets(ctx: click.Context, topic: str | None, partitions: str | None, time_text: str) -> None:
    """Print topic:partition:offset per partition, as kafka-get-offsets does."""
    time = _parse_time(time_text)
    wanted = _parse_partitions(partitions)
    try:
        pattern = re.compile(topic or ".*")
    except re.error as err:
        raise click.BadParameter(f"{topic!r} is not a regular expression: {err}", param_hint="--topic") from err
    with _cluster(ctx) as cluster:
        names = [n for n in cluster.list_topics() if n == topic or pattern.fullmatch(n)]
        matched = [(info.name, p.partition) for info in map(cluster.topic, names) for p in info.partitions
                   if wanted is None or p.partition in wanted]
        if not matched:
            raise click.ClickException("could not match any topic-partitions with the specified filters "
                                       "(list topics with `kstream topics list`)")
        for name, partition in matched:
            handle = cluster.partition(name, partition)
            try:
                offset = offset_for(cluster, handle, time)
            finally:
                handle.close()
            if offset is not None:
                click.echo(f"{name}:{partition}:{offset}")


def _read_plan(path: str) -> list[tuple[str, int, int]]:
    """kafka-delete-records' JSON file as (topic, partition, offset) triples."""
    try:
        with open(path) as f:
            plan = json.load(f)
        entries = plan["partitions"]
        triples = [(str(e["topic"]), int(e["partition"]), int(e["offset"])) for e in entries]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ConfigError(f"{path}: not a delete-records plan like "
                          '{"partitions": [{"topic": "t", "partition": 0, "offset": 5}], "version": 1} '
                          f"({err})") from err
    if plan.get("version", 1) != 1:
        raise ConfigError(f"{path}: unsupported plan version {plan.get('version')!r} (1 is)")
    seen = [(t, p) for t, p, _ in triples]
    duplicates = sorted({tp for tp in seen if seen.count(tp) > 1})
    if duplicates:
        raise ConfigError(f"{path}: offset json file contains duplicate topic partitions: "
                          + ",".join(f"{t}-{p}" for t, p in duplicates))
    return triples


@click.command("delete-records")
@click.option("--offset-json-file", required=True, type=click.Path(exists=True, dir_okay=False),
              help='JSON: {"partitions": [{"topic": T, "partition": P, "offset": O}], "version": 1}; '
                   "offset -1 means the high watermark.")
@click.pass_context
def delete_records(ctx: click.Context, offset_json_file: str) -> None:
    """Delete records below the given offsets (whole segments), as kafka-delete-records does."""
    plan = _read_plan(offset_json_file)
    click.echo("Executing records delete operation")
    failed = 0
    with _cluster(ctx) as cluster:
        results = []
        for topic, partition, offset in plan:
            try:
                low = delete_records_before(cluster, topic, partition, offset)
                results.append(f"partition: {topic}-{partition}\tlow_watermark: {low}")
            except KStreamError as err:
                failed += 1
                results.append(f"partition: {topic}-{partition}\terror: {err}")
    click.echo("Records delete operation completed:")
    for line in results:
        click.echo(line)
    if failed:
        raise click.ClickException(f"{failed} partition(s) failed")
